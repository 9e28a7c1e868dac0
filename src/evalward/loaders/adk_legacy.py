"""ADK's two legacy formats → `EvalSet` (docs/formats.md §2). Both load here; ADK takes each in one entry point.

Format A (`adk_legacy_test`): a JSON list of turns `{query, expected_tool_use: [{tool_name, tool_input}],
expected_intermediate_agent_responses: [{author, text}], reference}`. The whole file is ONE case whose
`case_id` is the file's path. ADK takes the path as given; here it is the path inside the repository
(`repository_paths`), so the id is the same however the path was typed (`x`, `./x`, absolute, through a linked
folder) and on every machine: `evalward gate` reads a run's files back by their absolute paths, and CI runs
compare ids recorded elsewhere. Typed from the repository's top-level folder, the path is the id ADK gives.

Format B (`adk_legacy_evalset`): a list of `{name, data, initial_session}`; each element is a case
(`case_id = name`), `data` holds format-A turns, a non-empty `initial_session` → `session_input`.

Turn mapping follows ADK's conversion: `expected_tool_calls` = `tool_uses` `{name: tool_name, args:
tool_input}` (always a list: a missing `expected_tool_use` expects no calls); `reference` missing or null →
`""` (ADK's text of a Part with null text), so ROUGE then scores against the empty string;
`mock_tool_output` is ignored. Keys ADK does not read are ignored too, with a warning.

`initial.session.json` (ADK's `AgentEvaluator.evaluate(initial_session_file=...)`, legacy data only):
`{"state": {...}, "app_name": "...", "user_id": "..."}` beside a format-A file becomes the `session_input`
of its case, as ADK's conversion does: a non-empty object → `SessionInput(app_name or "", user_id or "",
state or {})`; `{}` → no session. Other keys are ignored with a warning; a file that is not such an object
is a problem naming it. (ADK refuses an initial session for current-format files, whose `session_input`
holds it; the loader warns that the file does not apply to them.)
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evalward.loaders.discovery import INITIAL_SESSION_FILE_NAME as INITIAL_SESSION_FILE_NAME
from evalward.loaders.positions import PathKey
from evalward.loaders.problems import Problems, describe_value
from evalward.model import EvalCase, EvalSet, IntermediateResponse, Invocation, SessionInput, ToolCall
from evalward.repository_paths import repository_path

_LEGACY = ConfigDict(extra="ignore", loc_by_alias=False)


class _LegacyToolUse(BaseModel):
    model_config = _LEGACY

    tool_name: str
    tool_input: dict[str, Any]


class _LegacyResponse(BaseModel):
    model_config = _LEGACY

    author: str
    text: str


class _LegacyTurn(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="allow", loc_by_alias=False)

    query: str
    # Factories, not `= []`: pydantic deep-copies a mutable default for every turn that leaves the key out.
    expected_tool_use: list[_LegacyToolUse] = Field(default_factory=list)
    expected_intermediate_agent_responses: list[_LegacyResponse] = Field(default_factory=list)
    reference: str | None = None


class _LegacySession(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="allow", loc_by_alias=False)

    state: dict[str, Any] = Field(default_factory=dict)
    app_name: str | None = None
    user_id: str | None = None


class _InitialSession(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="allow", loc_by_alias=False)

    state: dict[str, Any] = Field(default_factory=dict)
    app_name: str = ""
    user_id: str = ""


def parse_initial_session(problems: Problems) -> SessionInput | None:
    """An `initial.session.json` document → the session every case of a format-A file starts with (None for
    `{}`); problems (not an object, wrong types) and warnings (ignored keys) go to `problems`."""
    data = problems.document.data
    if not isinstance(data, dict):
        problems.add(
            "an initial session file must be a JSON object",
            expected='an object {"state": {...}, "app_name": "...", "user_id": "..."}',
            found=describe_value(data),
        )
        return None
    parsed = problems.validate(_InitialSession, data, ())
    if parsed is None:
        return None
    _warn_extra(problems, parsed, (), known="state, app_name, user_id")
    if not data:
        return None
    return SessionInput(app_name=parsed.app_name, user_id=parsed.user_id, state=parsed.state)


class _LegacyCase(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="allow", loc_by_alias=False)

    name: str
    data: list[Any]
    initial_session: _LegacySession | None = None


def load_legacy_test(problems: Problems, default_id: str) -> EvalSet | None:
    """Format A: the file is one case named by its path inside its repository (module docstring)."""
    case_id = repository_path(problems.path)
    turns = _turns(problems, problems.document.data, (), case_id)
    if turns is None:
        return None
    case = EvalCase(case_id=case_id, turns=turns, source=problems.source(()))
    return EvalSet(eval_set_id=default_id, format="adk_legacy_test", cases=[case])


def load_legacy_evalset(problems: Problems, default_id: str) -> EvalSet | None:
    """Format B: one case per named conversation."""
    cases: list[EvalCase] = []
    failed = False
    for position, raw in enumerate(problems.document.data):
        at: PathKey = (position,)
        name = raw.get("name") if isinstance(raw, dict) else None
        case_id = name if isinstance(name, str) else None
        parsed = problems.validate(_LegacyCase, raw, at, case_id=case_id)
        if parsed is None:
            failed = True
            continue
        _warn_extra(problems, parsed, at, known="name, data, initial_session")
        turns = _turns(problems, parsed.data, (*at, "data"), parsed.name)
        if turns is None:
            failed = True
            continue
        session = parsed.initial_session
        session_input = None
        if session is not None and session.model_dump(exclude_defaults=True):
            session_input = SessionInput.model_validate(session.model_dump())
        cases.append(
            EvalCase(case_id=parsed.name, turns=turns, session_input=session_input, source=problems.source(at))
        )
    if failed:
        return None
    return EvalSet(eval_set_id=default_id, format="adk_legacy_evalset", cases=cases)


def _turns(problems: Problems, raw_turns: list[Any], at: PathKey, case_id: str) -> list[Invocation] | None:
    if not raw_turns:
        problems.add(
            "a conversation needs at least one turn", at, case_id=case_id, expected="a list of turns", found="[]"
        )
        return None
    turns: list[Invocation] = []
    failed = False
    for position, raw in enumerate(raw_turns):
        turn_at = (*at, position)
        parsed = problems.validate(_LegacyTurn, raw, turn_at, case_id=case_id)
        if parsed is None:
            failed = True
            continue
        _warn_extra(
            problems,
            parsed,
            turn_at,
            known="query, expected_tool_use, expected_intermediate_agent_responses, reference",
        )
        turns.append(
            Invocation(
                query=parsed.query,
                expected_response=parsed.reference or "",
                expected_tool_calls=[ToolCall(name=u.tool_name, args=u.tool_input) for u in parsed.expected_tool_use],
                expected_intermediate_responses=[
                    IntermediateResponse(author=r.author, text=r.text)
                    for r in parsed.expected_intermediate_agent_responses
                ],
                source=problems.source(turn_at),
            )
        )
    return None if failed else turns


def _warn_extra(problems: Problems, parsed: BaseModel, at: PathKey, *, known: str) -> None:
    for key in parsed.model_extra or {}:
        problems.warn(f"key {key!r} is ignored (ADK reads only {known})", (*at, key))
