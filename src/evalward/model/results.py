"""The observed side: scores per metric, turn, case and run.

`RunResult` is the one model of a run: the terminal, the JSON file, the database, the PR comment and the
dashboard all render it, and nothing re-derives its scores elsewhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

from evalward.model.agent_io import AgentOutput, ToolCall, Usage
from evalward.model.evalset import EvalFormat, MetricSpec
from evalward.model.records import KeepFactsMapping, KeepRecordSequence, record_statuses

SCHEMA_VERSION = 1
"""Version of the persisted `RunResult` JSON; bump it with a migration note when the shape changes."""

MetricStatus = Literal["passed", "failed", "not_applicable", "informational", "error"]
"""`not_applicable`: the case carries no expectation this metric needs (shown, never counted as a pass).
`error`: the metric itself raised; the case becomes an error."""

CaseStatus = Literal["passed", "failed", "error"]

ErrorKind = Literal[
    "agent_error",  # the agent raised or reported `error`
    "timeout",  # a turn exceeded --timeout
    "malformed_output",  # the agent's answer did not fit the protocol
    "crash",  # the agent process died or the connection failed
    "metric_error",  # a metric raised while scoring
    "cancelled",  # the run was interrupted before this case finished
    "judge_error",  # a judge model could not be reached or answered nonsense
    "simulator_error",  # the simulated user of a scenario case is not configured, unreachable or answered nothing
]

SimulationEnd = Literal["stop_signal", "turn_limit", "agent_error", "simulator_error", "cancelled"]
"""Why a simulated conversation ended: the simulated user sent the stop signal, the turn limit was reached,
the agent failed on a turn, or the simulator could not give the next message."""


class MetricResult(BaseModel):
    """One metric's score for one turn or one case, with the arithmetic behind it."""

    model_config = ConfigDict(defer_build=True, extra="ignore")

    name: str
    score: float | None = Field(
        description="The score; None when not applicable or on error. Finite: NaN and ±inf are refused here, at "
        "the model boundary, so no later stage can average or test them.",
        allow_inf_nan=False,
    )
    threshold: float | None = Field(default=None, allow_inf_nan=False)
    status: MetricStatus
    higher_is_better: bool = True
    explanation: str = Field(default="", description="The arithmetic, e.g. `LCS=2, precision=2/3=0.667`.")
    details: dict[str, Any] = Field(
        default_factory=dict,
        description="Diagnostics: matched pairs, missing and unexpected calls, first divergence, argument diffs.",
    )


class InvocationResult(BaseModel):
    """One turn: what was asked, expected and done, and the per-turn scores."""

    model_config = ConfigDict(defer_build=True, extra="ignore")

    turn: int
    invocation_id: str = ""
    query: str
    expected_response: str | None = None
    actual_response: str | None = None
    expected_tool_calls: list[ToolCall] | None = None
    actual_tool_calls: list[ToolCall] = Field(default_factory=list)
    expected_trajectory: list[str] | None = None
    actual_trajectory: list[str] = Field(default_factory=list)
    output: AgentOutput | None = Field(default=None, description="Everything the agent returned for the turn.")
    metric_results: list[MetricResult] = Field(default_factory=list)
    latency_s: float | None = None

    @computed_field(description="{metric name: score} for this turn.")
    def metrics(self) -> dict[str, float | None]:
        return {m.name: m.score for m in self.metric_results}


class CaseError(BaseModel):
    """Why a case (or one of its turns) could not be scored normally."""

    model_config = ConfigDict(defer_build=True, extra="ignore")

    kind: ErrorKind
    message: str
    turn: int | None = Field(default=None, description="The turn where it happened, if any.")
    attempts: int = Field(default=1, description="How many times the turn was tried.")


class SimulationResult(BaseModel):
    """How the simulated conversation of a `conversation_scenario` case went (the user turns are the case's
    `invocations`; their `query` is what the simulated user wrote)."""

    model_config = ConfigDict(defer_build=True, extra="ignore")

    ended_by: SimulationEnd
    user_turns: int = Field(description="User messages sent to the agent, the starting prompt included.")
    max_turns: int | None = Field(description="The turn limit in force; None = no limit.")
    model: str | None = Field(default=None, description="The simulator model (None when none was configured).")
    last_reply: str | None = Field(
        default=None, description="The simulator's last reply: the one with the stop signal, when it ended the talk."
    )
    usage: Usage | None = Field(
        default=None,
        description="The simulator's model calls (requests, retries, tokens, cost); not part of the case's `usage`, "
        "which is the agent's.",
    )


class CaseResult(BaseModel):
    """One case × repetition: status, case-level scores, the turns and what it cost."""

    model_config = ConfigDict(defer_build=True, extra="ignore")

    eval_set_id: str
    case_id: str
    repetition: int = Field(default=0, description="0-based repetition index.")
    status: CaseStatus
    metric_results: list[MetricResult] = Field(
        default_factory=list, description="Case-level score per metric (mean over turns for turn metrics)."
    )
    invocations: list[InvocationResult] = Field(default_factory=list)
    error: CaseError | None = None
    latency_s: float | None = Field(default=None, description="Wall-clock time of the whole case.")
    usage: Usage | None = None
    final_state: Any = None
    simulation: SimulationResult | None = Field(
        default=None, description="For a conversation_scenario case: how the simulated conversation went."
    )
    content_hash: str = Field(default="", description="The eval case's content hash (comparability).")
    must_pass: bool = False
    cluster: str | None = Field(
        default=None, description="The eval case's cluster label (the gate's clustered analysis); None = unlabelled."
    )
    started_at: datetime | None = None
    finished_at: datetime | None = None

    @computed_field(description="{metric name: score} for this case.")
    def metrics(self) -> dict[str, float | None]:
        return {m.name: m.score for m in self.metric_results}

    @computed_field(description="Alias of `eval_set_id` in the JSON report, for readers of `run --json`.")
    def eval_set(self) -> str:
        return self.eval_set_id

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.eval_set_id, self.case_id, self.repetition)

    def metric(self, name: str) -> MetricResult | None:
        return next((m for m in self.metric_results if m.name == name), None)


class MetricSummary(BaseModel):
    """A metric over the whole run: mean over case results with a 95% interval, and whether it passed."""

    model_config = ConfigDict(defer_build=True, extra="ignore")

    mean: float | None
    threshold: float | None = None
    passed: bool | None = Field(description="Every scored case result met the threshold; None if informational.")
    n: int = Field(description="Number of case results with a score.")
    ci_low: float | None = None
    ci_high: float | None = None
    pass_rate: float | None = Field(default=None, description="Share of scored case results meeting the threshold.")
    higher_is_better: bool = True
    labels: dict[str, int] = Field(
        default_factory=dict,
        description="Labels (an evaluator's string results) with how many case results got each, most given first.",
    )


class CaseSummary(BaseModel):
    """One case over its repetitions (a reducer's view)."""

    model_config = ConfigDict(defer_build=True, extra="ignore")

    eval_set_id: str
    case_id: str
    repetitions: int
    passes: int
    errors: int
    pass_rate: float
    pass_at_k: float = Field(description="P(at least one of k passes) = 1 − C(n−c, k)/C(n, k), k = repetitions.")
    pass_hat_k: float = Field(description="P(all k pass) = C(c, k)/C(n, k), k = repetitions.")
    metric_means: dict[str, float | None] = Field(default_factory=dict)
    passed: bool = Field(description="The case passes under the run's pass rule.")


class EvalSetInfo(BaseModel):
    """What a run read: enough to tell whether two runs are comparable and to re-render reports."""

    model_config = ConfigDict(defer_build=True, extra="ignore")

    eval_set_id: str
    format: EvalFormat
    path: str | None = None
    content_hash: str
    criteria: list[MetricSpec] = Field(default_factory=list)
    criteria_origin: str = ""
    case_hashes: Annotated[Mapping[str, str], *KeepFactsMapping] = Field(
        default_factory=dict, description="{case_id: content hash}."
    )
    case_input_hashes: Annotated[Mapping[str, str], *KeepFactsMapping] = Field(
        default_factory=dict,
        description="{case_id: input hash}: what the agent was asked (turn queries and inputs, initial session). "
        "Equal input hashes pair a baseline's recorded outputs with this run's case even when expectations "
        "differ (the baseline is then re-scored). Empty for runs made before evalward recorded it.",
    )
    case_sources: Annotated[Mapping[str, dict[str, Any]], *KeepFactsMapping] = Field(
        default_factory=dict, description="{case_id: SourceLocation as dict}, for annotations."
    )


class AgentTarget(BaseModel):
    """The agent under test, as given on the command line, with a hash of its configuration."""

    model_config = ConfigDict(defer_build=True, extra="ignore")

    kind: str = Field(description="`python`, `subprocess`, `http`, `replay`, `openai`, `adk`, `langgraph`.")
    target: str = Field(description="The target string, with secrets removed.")
    config_hash: str = Field(default="", description="sha256 of the runner configuration.")


class RunContext(BaseModel):
    """Where and for what the run happened (git and CI metadata)."""

    model_config = ConfigDict(defer_build=True, extra="ignore")

    repository: str | None = None
    commit: str | None = None
    branch: str | None = None
    base_branch: str | None = None
    base_sha: str | None = None
    pr_number: int | None = None
    merge_base: str | None = None
    shard_index: int | None = Field(default=None, description="1-based shard index when sharded.")
    shard_count: int | None = None
    group_id: str | None = Field(default=None, description="Shards of one logical run share a group id.")
    base_side_for: str | None = Field(
        default=None,
        description="Set on a base side run on demand (`evalward._gating.base_side`): the commit whose gate made it. "
        "Such a run is a baseline for later pull requests, never the run `--run latest` means.",
    )


PER_CASE_FIELDS = ("case_summaries", "cases")
"""`RunResult`'s fields with an entry per case (or case × repetition), in field order: the ones a large run keeps
in a temporary file and that are written entry by entry (`records.iter_model_json`)."""


class RunResult(BaseModel):
    """One run of one or more eval sets against one agent."""

    model_config = ConfigDict(defer_build=True, extra="ignore")

    schema_version: int = SCHEMA_VERSION
    run_id: str
    status: Literal["running", "complete", "cancelled", "failed"] = "complete"
    passed: bool = Field(description="Every case met every criterion under the pass rule, and nothing errored.")
    pass_rule: Literal["per_run", "mean_over_runs"] = Field(
        default="per_run",
        description="`per_run`: every repetition must pass (adk eval); `mean_over_runs`: the mean over "
        "repetitions must meet each threshold (ADK AgentEvaluator).",
    )
    repetitions: int = 1
    started_at: datetime | None = None
    finished_at: datetime | None = None
    agent: AgentTarget | None = None
    eval_sets: list[EvalSetInfo] = Field(default_factory=list)
    context: RunContext = Field(default_factory=RunContext)
    evalward_version: str = ""
    fingerprint: str = Field(default="", description="Hash of everything that makes two runs comparable.")
    summary: dict[str, MetricSummary] = Field(default_factory=dict)
    case_summaries: Annotated[Sequence[CaseSummary], *KeepRecordSequence] = Field(default_factory=list)
    cases: Annotated[Sequence[CaseResult], *KeepRecordSequence] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    case_selection: str | None = Field(
        default=None,
        description="How the cases were chosen when not every case of the eval files ran (`FILE:IDS`, `--case`, "
        "`--sample`), e.g. `--sample 50 (50 of 2000 cases)`; None when every case ran. The gate then compares "
        "with the baseline's results for these cases only.",
    )

    def counts(self) -> dict[str, int]:
        """Case results by status."""
        totals = {"passed": 0, "failed": 0, "error": 0}
        for status in record_statuses(self.cases):
            totals[status] += 1
        return totals
