"""ADK's current eval-set schema (`eval_set_id` + `eval_cases`) → `EvalSet`, with ADK's exact alias rules.

Boundary models mirror google-adk 2.13 (see docs/formats.md §3):
- the eval set itself takes snake_case keys only (`evalSetId` is a problem with a hint) and ignores extra keys;
- `EvalCase` accepts snake_case and camelCase and keeps extra keys (a string `description` is used);
- `Invocation`, `IntermediateData`, `InvocationEvents`, `Content`, `Part`, `FunctionCall` and
  `FunctionResponse` accept both cases and forbid unknown keys; old files with every Part field `null` parse.

Mapping, per case (`case_id = eval_id`) and invocation:
- `query` = the `"\\n"`-join of the non-empty `text` parts of `user_content`;
- `expected_response` = the same join over `final_response` (None when `final_response` is null, `""`
  when its parts carry no text);
- `expected_tool_calls` is always a list, because ADK's EXACT trajectory treats "no tool_uses" as
  "expect no calls": `tool_uses` as `ToolCall(name, args, id)`, or for `invocation_events` every
  `function_call` part of every event in order, from any author (`agent` = author); `[]` when
  `intermediate_data` is null;
- `expected_intermediate_responses` = `intermediate_responses` `[author, parts]` (text joined), or the
  text parts of `invocation_events`;
- `session_input` → `SessionInput`; a non-empty `final_session_state` → `EvalCase.expected_state`.

A `conversation_scenario` case (`starting_prompt`, `conversation_plan`, optional `user_persona`: an object
`{id, description, behaviors: [{name, description, behavior_instructions, violation_rubrics}]}` or the id of
one of ADK's prebuilt personas, `EXPERT`, `NOVICE`, `EVALUATOR`) → `EvalCase.scenario`, with one turn: the
starting prompt, without expectations. The rest of its conversation is played by the user simulator when the
case runs. Scripted and scenario cases may share a file.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag
from pydantic.alias_generators import to_camel

from evalward.loaders.positions import PathKey
from evalward.loaders.problems import Problems
from evalward.model import (
    ConversationScenario,
    EvalCase,
    EvalSet,
    IntermediateResponse,
    Invocation,
    SessionInput,
    ToolCall,
    UserBehavior,
    UserPersona,
)

# protected_namespaces=(): ADK's `model_duration` would make pydantic < 2.10 warn on import (see model.Usage).
_EVAL_MODEL = ConfigDict(
    alias_generator=to_camel,
    populate_by_name=True,
    extra="forbid",
    loc_by_alias=False,
    protected_namespaces=(),
    defer_build=True,
)


class _FunctionCall(BaseModel):
    model_config = _EVAL_MODEL

    id: str | None = None
    name: str | None = None
    args: dict[str, Any] | None = None
    partial_args: Any = None
    will_continue: bool | None = None


class _FunctionResponse(BaseModel):
    model_config = _EVAL_MODEL

    id: str | None = None
    name: str | None = None
    response: Any = None
    parts: Any = None
    will_continue: bool | None = None
    scheduling: Any = None


class _Part(BaseModel):
    """genai `Part`: every field optional; old ADK files write all of them as null."""

    model_config = _EVAL_MODEL

    text: str | None = None
    thought: bool | None = None
    function_call: _FunctionCall | None = None
    function_response: _FunctionResponse | None = None
    thought_signature: Any = None
    inline_data: Any = None
    file_data: Any = None
    executable_code: Any = None
    code_execution_result: Any = None
    video_metadata: Any = None
    media_resolution: Any = None
    tool_call: Any = None
    tool_response: Any = None
    part_metadata: Any = None
    audio_transcription: Any = None
    media_processing: Any = None
    speech_metadata: Any = None


class _Content(BaseModel):
    model_config = _EVAL_MODEL

    role: str | None = None
    parts: list[_Part] | None = None


class _IntermediateData(BaseModel):
    model_config = _EVAL_MODEL

    # Factories, not `= []`: pydantic deep-copies a mutable default for every case that leaves the key out.
    tool_uses: list[_FunctionCall] = Field(default_factory=list)
    tool_responses: list[_FunctionResponse] = Field(default_factory=list)
    intermediate_responses: list[tuple[str, list[_Part]]] = Field(default_factory=list)


class _InvocationEvent(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", loc_by_alias=False, defer_build=True
    )

    author: str
    content: _Content | None = None


class _InvocationEvents(BaseModel):
    model_config = _EVAL_MODEL

    invocation_events: list[_InvocationEvent]


def _intermediate_kind(value: Any) -> str:
    """ADK's union resolution: a dict naming `invocation_events` is events, anything else is data."""
    if isinstance(value, dict) and ("invocation_events" in value or "invocationEvents" in value):
        return "_InvocationEvents"
    if isinstance(value, _InvocationEvents):
        return "_InvocationEvents"
    return "_IntermediateData"


_Intermediate = Annotated[
    Annotated[_IntermediateData, Tag("_IntermediateData")] | Annotated[_InvocationEvents, Tag("_InvocationEvents")],
    Discriminator(_intermediate_kind),
]


class _Invocation(BaseModel):
    model_config = _EVAL_MODEL

    invocation_id: str = ""
    user_content: _Content
    final_response: _Content | None = None
    intermediate_data: _Intermediate | None = None
    creation_timestamp: float = 0.0
    duration: float | None = None
    model_duration: float | None = None
    tool_duration: float | None = None
    rubrics: list[Any] | None = None
    app_details: Any = None


class _UserBehavior(BaseModel):
    """ADK's `UserBehavior`: a plain model (snake_case keys, extra keys ignored)."""

    model_config = ConfigDict(extra="ignore", loc_by_alias=False, defer_build=True)

    name: str
    description: str
    behavior_instructions: list[str]
    violation_rubrics: list[str]


class _UserPersona(BaseModel):
    """ADK's `UserPersona`: a plain model (snake_case keys, extra keys ignored)."""

    model_config = ConfigDict(extra="ignore", loc_by_alias=False, defer_build=True)

    id: str
    description: str
    behaviors: list[_UserBehavior]


class _ConversationScenario(BaseModel):
    model_config = _EVAL_MODEL

    starting_prompt: str
    conversation_plan: str
    user_persona: _UserPersona | str | None = None


class _SessionInput(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="allow", loc_by_alias=False, defer_build=True
    )

    app_name: str
    user_id: str
    session_id: str | None = None
    state: dict[str, Any] = Field(default_factory=dict)


class _EvalCase(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="allow", loc_by_alias=False, defer_build=True
    )

    eval_id: str
    conversation: list[_Invocation] | None = None
    conversation_scenario: _ConversationScenario | None = None
    session_input: _SessionInput | None = None
    creation_timestamp: float = 0.0
    rubrics: list[Any] | None = None
    final_session_state: dict[str, Any] | None = None


class _EvalSetShell(BaseModel):
    """ADK's `EvalSet`: a plain model, snake_case only, extra keys ignored. Cases are validated one by one."""

    model_config = ConfigDict(extra="ignore", loc_by_alias=False, defer_build=True)

    eval_set_id: str
    name: str | None = None
    description: str | None = None
    eval_cases: list[Any]
    creation_timestamp: float = 0.0


_CAMEL_SET_KEYS = {"evalSetId": "eval_set_id", "evalCases": "eval_cases", "creationTimestamp": "creation_timestamp"}


def content_text(content: _Content | None) -> str | None:
    """ADK's text of a content: the `"\\n"`-join of its parts' non-empty `text` (thoughts included)."""
    if content is None:
        return None
    return "\n".join(part.text for part in content.parts or [] if part.text)


def load_adk_evalset(problems: Problems, default_id: str) -> EvalSet | None:
    """Map a current-schema ADK eval set; record problems and return None when it is not usable."""
    shell, cases_key = evalset_head(problems)
    raw_cases = problems.document.data.get(cases_key)
    cases = [
        case
        for position, raw in enumerate(raw_cases if isinstance(raw_cases, list) else [])
        if (case := map_case(problems, raw, (cases_key, position))) is not None
    ]
    return evalset_from_head(shell, default_id, cases) if shell is not None else None


def evalset_head(problems: Problems) -> tuple[_EvalSetShell | None, str]:
    """Check the eval set's own keys (the document's cases are not looked at): the validated shell (None
    after recording why it is unusable), and the key whose list (when it is one) holds the cases to map —
    mapped even when the shell is unusable, so every problem in the file is reported.

    The document's case list may be a placeholder (`[]`) when its cases are mapped one at a time."""
    data = problems.document.data
    camel = [key for key in data if key in _CAMEL_SET_KEYS and _CAMEL_SET_KEYS[key] not in data]
    for key in camel:
        problems.add(
            "ADK's EvalSet keys are snake_case only (it has no camelCase aliases, so ADK rejects this file)",
            (key,),
            on_key=True,
            expected=f"'{_CAMEL_SET_KEYS[key]}'",
            found=f"'{key}'",
        )
    if camel:
        return None, "eval_cases" if "eval_cases" in data else "evalCases"
    shell = problems.validate(_EvalSetShell, data)
    return shell, "eval_cases"


def evalset_from_head(shell: _EvalSetShell, default_id: str, cases: list[EvalCase]) -> EvalSet:
    """The eval set a valid shell describes, holding `cases`."""
    return EvalSet(
        eval_set_id=shell.eval_set_id or default_id,
        name=shell.name,
        description=shell.description,
        format="adk_evalset",
        cases=cases,
    )


def map_case(problems: Problems, raw: Any, at: PathKey) -> EvalCase | None:
    """One element of `eval_cases` (found at `at`) as an `EvalCase`; None after recording its problems."""
    case_id = None
    if isinstance(raw, dict):
        found = raw.get("eval_id", raw.get("evalId"))
        case_id = found if isinstance(found, str) else None
    parsed = problems.validate(_EvalCase, raw, at, case_id=case_id)
    if parsed is None:
        return None
    scenario_key = next((k for k in ("conversation_scenario", "conversationScenario") if k in raw), None)
    if parsed.conversation is not None and parsed.conversation_scenario is not None:
        problems.add(
            "an eval case has exactly one of 'conversation' and 'conversation_scenario'",
            at,
            case_id=case_id,
            expected="one of them",
            found="both",
        )
        return None
    extra = parsed.model_extra or {}
    description = extra.get("description")
    session = parsed.session_input
    if parsed.conversation_scenario is not None:
        scenario_at: PathKey = (*at, scenario_key or "conversation_scenario")
        scenario = _map_scenario(
            problems, parsed.conversation_scenario, raw.get(scenario_key or ""), scenario_at, case_id
        )
        if scenario is None:
            return None
        return EvalCase(
            case_id=parsed.eval_id,
            description=description if isinstance(description, str) else None,
            turns=[Invocation(query=scenario.starting_prompt, source=problems.source(scenario_at))],
            scenario=scenario,
            session_input=SessionInput.model_validate(session.model_dump()) if session is not None else None,
            expected_state=parsed.final_session_state or None,
            source=problems.source(at),
        )
    if parsed.conversation is None:
        problems.add(
            "an eval case needs a 'conversation'",
            at,
            case_id=case_id,
            expected="'conversation' (a list of invocations)",
            found="neither 'conversation' nor 'conversation_scenario'",
        )
        return None
    conversation_key = "conversation"
    if not parsed.conversation:
        problems.add(
            "the conversation has no invocations",
            (*at, conversation_key),
            case_id=case_id,
            expected="at least one invocation",
            found="[]",
        )
        return None
    # A turn's own position is found only where a problem can be reported at it after loading (its reference
    # messages, which ADK turns do not have): walking into every case's text for it was ~15 µs a case.
    turns = [_map_invocation(invocation) for invocation in parsed.conversation]
    return EvalCase(
        case_id=parsed.eval_id,
        description=description if isinstance(description, str) else None,
        turns=turns,
        session_input=SessionInput.model_validate(session.model_dump()) if session is not None else None,
        expected_state=parsed.final_session_state or None,
        source=problems.source(at),
    )


def _map_scenario(
    problems: Problems, scenario: _ConversationScenario, raw: Any, at: PathKey, case_id: str | None
) -> ConversationScenario | None:
    """The scenario with its persona resolved (a prebuilt id → that persona); a problem for an unknown id."""
    from evalward.loaders.adk_personas import PREBUILT_PERSONAS  # start-up: only scenario cases name a persona

    persona: UserPersona | None = None
    given = scenario.user_persona
    if isinstance(given, str):
        persona = PREBUILT_PERSONAS.get(given)
        if persona is None:
            persona_key = next((k for k in ("user_persona", "userPersona") if isinstance(raw, dict) and k in raw), None)
            problems.add(
                f"unknown user persona {given!r}",
                (*at, persona_key or "user_persona"),
                case_id=case_id,
                expected="a persona object or one of ADK's prebuilt ids: " + ", ".join(PREBUILT_PERSONAS),
                found=repr(given),
            )
            return None
    elif given is not None:
        persona = UserPersona(
            id=given.id,
            description=given.description,
            behaviors=[UserBehavior.model_validate(b.model_dump()) for b in given.behaviors],
        )
    return ConversationScenario(
        starting_prompt=scenario.starting_prompt, conversation_plan=scenario.conversation_plan, user_persona=persona
    )


def _map_invocation(invocation: _Invocation) -> Invocation:
    calls: list[ToolCall] = []
    intermediate: list[IntermediateResponse] | None = None
    data = invocation.intermediate_data
    if isinstance(data, _IntermediateData):
        calls = [_tool_call(call, agent=None) for call in data.tool_uses]
        intermediate = [
            IntermediateResponse(author=author, text="\n".join(p.text for p in parts if p.text))
            for author, parts in data.intermediate_responses
        ]
    elif isinstance(data, _InvocationEvents):
        intermediate = []
        for event in data.invocation_events:
            parts = (event.content.parts or []) if event.content else []
            calls.extend(_tool_call(p.function_call, agent=event.author) for p in parts if p.function_call)
            text = "\n".join(p.text for p in parts if p.text)
            if text:
                intermediate.append(IntermediateResponse(author=event.author, text=text))
    return Invocation(
        invocation_id=invocation.invocation_id,
        query=content_text(invocation.user_content) or "",
        expected_response=content_text(invocation.final_response),
        expected_tool_calls=calls,
        expected_intermediate_responses=intermediate,
    )


def _tool_call(call: _FunctionCall, *, agent: str | None) -> ToolCall:
    # ADK allows a nameless FunctionCall; it can only ever match another nameless call, i.e. "".
    return ToolCall(name=call.name or "", args=call.args, id=call.id, agent=agent)
