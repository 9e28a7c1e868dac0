"""The expected side: eval sets, cases, turns and the criteria they are scored by.

Every loader (ADK, LangSmith, langchain-benchmarks, multi-agent, native) maps its file format onto
these models; every later stage reads only these.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidatorFunctionWrapHandler,
    WrapSerializer,
    WrapValidator,
    computed_field,
)

from evalward.model import cases as case_facts
from evalward.model.agent_io import IntermediateResponse, Message, ToolCall
from evalward.model.cases import CaseSequence


class SourceLocation(BaseModel):
    """Where something was read from, so errors and PR annotations can point at it."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    path: str = Field(description="File path as given by the user (relative paths stay relative).")
    line: int | None = Field(default=None, description="1-based line of the item's start, when known.")
    column: int | None = Field(default=None, description="1-based column of the item's start, when known.")
    json_path: str | None = Field(
        default=None, description="JSON path of the item inside the file, e.g. `$.eval_cases[2]`."
    )


class MetricSpec(BaseModel):
    """One criterion: a registered metric name, its pass threshold and its options."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    name: str = Field(description="Registered metric name, e.g. `tool_trajectory_avg_score` or `trajectory_f1`.")
    threshold: float | None = Field(
        default=None,
        description="Pass when score >= threshold (<= for lower-is-better metrics); None = informational.",
        allow_inf_nan=False,
    )
    options: dict[str, Any] = Field(
        default_factory=dict,
        description="Metric options, e.g. `match_type`, `ignore_args`, `args_mode`, `key`, `pattern`.",
    )

    def describe(self) -> str:
        """`name>=threshold` with options, for reports."""
        text = self.name if self.threshold is None else f"{self.name}>={self.threshold:g}"
        if self.options:
            text += " " + json.dumps(self.options, sort_keys=True, default=str)
        return text


STOP_SIGNAL = "</finished>"
"""What the simulated user writes to end a conversation (ADK's `LlmBackedUserSimulator`); matched anywhere in its
reply, ignoring case."""

DEFAULT_MAX_TURNS = 20
"""ADK's `max_allowed_invocations`: user messages a simulated conversation may send, the starting prompt included."""


class UserSimulatorConfig(BaseModel):
    """How the simulated user of `conversation_scenario` cases behaves (ADK `user_simulator_config`)."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    model: str | None = Field(
        default=None, description="The simulator model named in the file; `--user-model` takes precedence."
    )
    max_allowed_invocations: int = Field(
        default=DEFAULT_MAX_TURNS,
        ge=-1,
        description="Most user messages per conversation, the starting prompt included; -1 = no limit (ADK).",
    )
    custom_instructions: str | None = Field(
        default=None,
        description="Instructions replacing evalward's own; `{{ stop_signal }}`, `{{ conversation_plan }}`, "
        "`{{ conversation_history }}` (and `{{ persona }}` with a persona) are filled in.",
    )
    include_function_calls: bool = Field(
        default=False, description="Show the simulator the agent's tool calls and their results, not only its text."
    )
    temperature: float | None = Field(default=None, description="From `model_configuration.temperature`, if given.")


CriteriaOrigin = Literal["test_config", "adk_defaults", "format_defaults", "native", "cli", "config"]


class Criteria(BaseModel):
    """The metrics an eval set is scored with, and where that choice came from."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    metrics: list[MetricSpec] = Field(default_factory=list, description="Metrics applied to every case.")
    origin: CriteriaOrigin = Field(
        default="format_defaults",
        description="`test_config` (read from a file), `adk_defaults`, `format_defaults`, `native`, `cli`, `config`.",
    )
    config_path: str | None = Field(default=None, description="The `test_config.json` used, if any.")
    user_simulator: UserSimulatorConfig | None = Field(
        default=None, description="`user_simulator_config` of the test_config.json, for conversation_scenario cases."
    )
    replace_defaults: bool = Field(
        default=False,
        exclude=True,
        description="`replace_defaults` of a test_config.json beside a non-ADK file: its criteria replace the "
        "format's own instead of being added to them.",
    )

    def by_name(self, name: str) -> MetricSpec | None:
        return next((m for m in self.metrics if m.name == name), None)


class SessionInput(BaseModel):
    """Initial session for a case (ADK `session_input` / legacy `initial_session`)."""

    model_config = ConfigDict(defer_build=True, extra="allow")

    app_name: str | None = None
    user_id: str | None = None
    session_id: str | None = None
    state: dict[str, Any] = Field(default_factory=dict, description="Initial session state handed to the agent.")


class UserBehavior(BaseModel):
    """One behaviour of a simulated user's persona (ADK `UserBehavior`)."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    name: str
    description: str = Field(description="What the behaviour is; shown to the simulator and to its judge.")
    behavior_instructions: list[str] = Field(default_factory=list, description="What the simulator should do.")
    violation_rubrics: list[str] = Field(
        default_factory=list, description="What the judge of the simulator counts as breaking the behaviour."
    )


class UserPersona(BaseModel):
    """Who the simulated user plays (ADK `UserPersona`: an object, or the id of one of ADK's prebuilt ones)."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    id: str
    description: str
    behaviors: list[UserBehavior] = Field(default_factory=list)


class ConversationScenario(BaseModel):
    """A conversation played by a simulated user instead of scripted turns (ADK `conversation_scenario`).

    The first user message is `starting_prompt`, as written; every later one is written by the user
    simulator from `conversation_plan` and the conversation so far, until it sends the stop signal or the
    turn limit is reached."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    starting_prompt: str = Field(description="The first user message, sent as is.")
    conversation_plan: str = Field(description="What the simulated user wants, in order; its grounding, not a script.")
    user_persona: UserPersona | None = Field(default=None, description="How the simulated user behaves.")


class Invocation(BaseModel):
    """One turn of a conversation: what the user says and what is expected back.

    `None` for an expectation means "not specified, don't score it"; an empty list means "expect none".
    """

    model_config = ConfigDict(defer_build=True, extra="forbid")

    invocation_id: str = Field(default="", description="Stable id of the turn (ADK `invocation_id`), may be empty.")
    query: str = Field(default="", description="The user's message for this turn.")
    inputs: dict[str, Any] = Field(
        default_factory=dict,
        description="Structured inputs handed to the agent as is (LangSmith `inputs`, message lists, …).",
    )
    expected_response: str | None = Field(default=None, description="Reference final response text.")
    expected_tool_calls: list[ToolCall] | None = Field(
        default=None, description="Expected tool calls in order; [] expects no call, None expects nothing."
    )
    expected_intermediate_responses: list[IntermediateResponse] | None = Field(
        default=None, description="Expected natural-language responses of sub-agents (ADK)."
    )
    expected_trajectory: list[str] | None = Field(
        default=None, description="Expected step names (graph nodes, agents, tools) in order (LangSmith style)."
    )
    expected_order_matters: bool | None = Field(
        default=None, description="langchain-benchmarks `order_matters` for `expected_trajectory`."
    )
    expected_agents: list[str] | None = Field(default=None, description="Agents expected to take part.")
    expected_agent_tools: dict[str, list[str]] | None = Field(
        default=None, description="Tool names expected per agent: {agent: [tool, …]}."
    )
    expected_outputs: dict[str, Any] = Field(
        default_factory=dict,
        description="Other expected output keys compared by exact match, e.g. {'route': 'refund_agent'}.",
    )
    reference_messages: list[Message] | None = Field(
        default=None,
        description="A recorded reference trajectory as messages (for step-by-step, teacher-forced scoring).",
    )
    source: SourceLocation | None = Field(default=None, description="Where this turn was read from.")


class EvalCase(BaseModel):
    """One conversation to run and score."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    case_id: str = Field(description="Stable id, unique within its eval set; pairs cases across runs.")
    description: str | None = None
    turns: list[Invocation] = Field(
        description="The conversation, in order; at least one turn. A scenario case has one: its starting prompt."
    )
    scenario: ConversationScenario | None = Field(
        default=None,
        description="Set for a simulated conversation: the turns after the first are written by the user simulator "
        "while the case runs, and carry no expectations.",
    )
    session_input: SessionInput | None = None
    expected_state: Any = Field(
        default=None, description="Expected environment/session state after the run (None = unchecked)."
    )
    metrics: list[MetricSpec] = Field(
        default_factory=list, description="Per-case metrics, added to (or overriding by name) the set's criteria."
    )
    must_pass: bool = Field(default=False, description="Hard gate: must pass on every repetition.")
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(
        default_factory=dict,
        description="The case's own metadata as its file gave it (a LangSmith example's or a pydantic-evals "
        "case's `metadata`): handed to user evaluators (`example.metadata`, `ctx.metadata`).",
    )
    cluster: str | None = Field(
        default=None,
        description="Cluster label g(i): cases that share it (same template, same document) are correlated, so "
        "the gate resamples and sign-flips them as one unit. None = a cluster of its own.",
    )
    source: SourceLocation | None = Field(default=None, description="Where this case was read from.")

    @computed_field(  # type: ignore[prop-decorator]
        description="sha256 of the case's canonical content (excluding where it was read from and its cluster)."
    )
    @cached_property
    def content_hash(self) -> str:
        # Cached: a case's content is fixed once loaded, and the hash is read for every result and report.
        # The cluster label is how the gate groups cases, not what the case asks: relabelling must not turn
        # every case into a "changed" one that can no longer be compared with its baseline.
        payload = self.model_dump(mode="json", exclude={"source", "content_hash", "cluster"})
        if payload.get("scenario") is None:  # scripted cases hash as they did before scenarios existed
            payload.pop("scenario", None)
        if not payload.get("metadata"):  # and cases without metadata as they did before it was kept
            payload.pop("metadata", None)
        for turn in payload["turns"]:
            turn.pop("source", None)
        return canonical_hash(payload)

    @cached_property
    def input_hash(self) -> str:
        """sha256 of what the agent is given: every turn's query and inputs, and the initial session.

        Two cases with the same id and input hash ask the agent the same thing, so a baseline's recorded
        outputs for one can be re-scored under the other's expectations and criteria (docs/gate.md §9: the eval
        set is the instrument). A different input hash is a different case."""
        given: dict[str, Any] = {
            "turns": [{"query": turn.query, "inputs": turn.inputs} for turn in self.turns],
            "session_input": None if self.session_input is None else self.session_input.model_dump(mode="json"),
        }
        if self.scenario is not None:  # what the simulated user is told is part of what the agent is asked
            given["scenario"] = self.scenario.model_dump(mode="json")
        return canonical_hash(given)

    def described_metadata(self) -> dict[str, Any]:
        """The case's metadata with its description, tags and cluster added where it does not set those keys: what
        user evaluators see as `ctx.metadata` / `example.metadata`, and what a pydantic-evals Dataset file keeps."""
        metadata: dict[str, Any] = dict(self.metadata)
        if self.description and "description" not in metadata:
            metadata["description"] = self.description
        if self.tags and "tags" not in metadata:
            metadata["tags"] = list(self.tags)
        if self.cluster is not None and "cluster" not in metadata:
            metadata["cluster"] = self.cluster
        return metadata

    def played(self, queries: list[str]) -> EvalCase:
        """This case with the turns a run actually played: for a scenario case, one turn per user message sent
        (the first is the starting prompt), without expectations; a scripted case is returned unchanged."""
        if self.scenario is None:
            return self
        turns = [Invocation(invocation_id=f"simulated-{index + 1}", query=query) for index, query in enumerate(queries)]
        data = {name: getattr(self, name) for name in type(self).model_fields}
        return EvalCase(**{**data, "turns": turns or self.turns[:1]})


EvalFormat = Literal[
    "adk_evalset",
    "adk_legacy_test",
    "adk_legacy_evalset",
    "langsmith",
    "langchain_benchmarks",
    "multi_agent",
    "native",
    "pydantic_evals",
]


def _keep_case_sequence(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    # A `CaseSequence` was checked when it was built (and validating it would read every case back).
    return value if isinstance(value, CaseSequence) else handler(value)


def _dump_case_sequence(value: Any, handler: SerializerFunctionWrapHandler) -> Any:
    # A dump is every case, whatever holds them.
    return handler(list(value) if isinstance(value, CaseSequence) else value)


Cases = Annotated[Sequence[EvalCase], WrapValidator(_keep_case_sequence), WrapSerializer(_dump_case_sequence)]
"""A plain list of cases, or a `CaseSequence` that reads them back on demand (`evalward.model.cases`)."""


class EvalSet(BaseModel):
    """A named collection of cases read from one file, with the criteria that apply to it."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    eval_set_id: str = Field(description="Stable id (ADK `eval_set_id`, native `eval_set_id`, or the file stem).")
    name: str | None = None
    description: str | None = None
    format: EvalFormat = Field(description="The file format detected by content.")
    path: str | None = Field(default=None, description="The file the set was read from.")
    cases: Cases = Field(description="The cases, in file order: a list, or a sequence reading them on demand.")
    criteria: Criteria = Field(default_factory=Criteria)

    @computed_field(description="sha256 over the set id, criteria and every case's content hash.")
    def content_hash(self) -> str:
        return canonical_hash(
            {
                "eval_set_id": self.eval_set_id,
                "criteria": [m.model_dump(mode="json") for m in self.criteria.metrics],
                "cases": case_facts.content_hash_list(self.cases),
            }
        )

    # Per-case facts without the cases themselves: a large file's cases are read back one at a time
    # (`cases` is then a `CaseSequence`, which keeps these), and they are what planning, selection and
    # `EvalSetInfo` need.
    def case_ids(self) -> Sequence[str]:
        """Every case id, in file order."""
        return case_facts.case_ids(self.cases)

    def case_hashes(self) -> Mapping[str, str]:
        """{case id: content hash}."""
        return case_facts.content_hashes(self.cases)

    def case_input_hashes(self) -> Mapping[str, str]:
        """{case id: input hash}."""
        return case_facts.input_hashes(self.cases)

    def case_sources(self) -> Mapping[str, Mapping[str, Any]]:
        """{case id: where the case was read from, as a dict}, for the cases that know it."""
        return case_facts.case_sources(self.cases)

    def turn_count(self) -> int:
        """Turns over every case (a scenario case counts its starting prompt)."""
        return case_facts.turn_count(self.cases)

    def metrics_for(self, case: EvalCase) -> list[MetricSpec]:
        """The set's criteria, with the case's own metrics added or replacing same-named ones."""
        own = {m.name: m for m in case.metrics}
        merged = [own.pop(m.name, m) for m in self.criteria.metrics]
        merged.extend(own.values())
        return merged


_CANONICAL_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
"""One encoder for every hash (it keeps no state between calls): `json.dumps` with these options built a new
one per call, a sixth of a loaded case's two hashes."""


def canonical_hash(value: Any) -> str:
    """sha256 of the canonical JSON form (sorted keys, no whitespace) of `value`."""
    return hashlib.sha256(_CANONICAL_JSON.encode(value).encode("utf-8")).hexdigest()
