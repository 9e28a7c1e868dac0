"""What a metric is given to score one finished case × repetition, and what it gives back.

`ScoringContext` holds the case as the agent played it, its outputs and measurements, and the handles a
metric may need beyond the outputs: `judge` (an LLM judge, `evalward.judging` provides it), `teacher` (the
agent under test, asked again step by step for teacher forcing; `evalward.runners.teacher_forcing_driver` provides it) and
`recorded` (the result as first recorded, when a stored run is re-scored and the agent is not there). The
handles are Protocols so that `metrics` keeps importing nothing but `model`.

`CaseScores` is what `Metric.evaluate` returns: case-level results, per-turn results and the error that
makes the case `error` (a judge that failed), if any.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol

from evalward.model import (
    AgentOutput,
    CaseError,
    CaseResult,
    EvalCase,
    Message,
    MetricResult,
    MetricSpec,
    SimulationResult,
    Usage,
)

if TYPE_CHECKING:  # annotations only: nothing here needs the step formulas at run time
    from evalward.metrics.stepwise import FinalCheck, NextAction, Reference

StepwiseMode = Literal["auto", "on", "off"]


@dataclass(frozen=True)
class CaseScores:
    """Results of some criteria on one case: case level (in criterion order), per turn, and the error that
    stops the case (None: the case status follows the results, `evaluation.fold`)."""

    case_level: Sequence[MetricResult] = ()
    per_turn: Mapping[int, Sequence[MetricResult]] = field(default_factory=dict)
    error: CaseError | None = None


class StepAnswer(Protocol):
    """The agent's answer at teacher-forced step `step` (1-based), or why there is none."""

    @property
    def step(self) -> int: ...
    @property
    def output(self) -> AgentOutput | None: ...
    @property
    def error(self) -> str | None: ...


class Teacher(Protocol):
    """The agent under test, asked for its next action after each reference prefix of a turn."""

    async def next_actions(
        self, turn: int, lead: Sequence[Message], prefixes: Sequence[Sequence[Message]]
    ) -> Sequence[StepAnswer]:
        """One answer per prefix; turn `turn`'s request carries the earlier turns as the run had them."""
        ...


@dataclass(frozen=True)
class JudgedSteps:
    """c_1 … c_N of one turn's teacher-forced steps with their notes and per-step judge details, or the
    judge error that stopped them."""

    credits: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    details: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None


class StepJudge(Protocol):
    """A judge bound to the step criterion that asked for `match: judge` (`metrics.step_judge`)."""

    @property
    def metric(self) -> str:
        """The judge's metric name, for error messages."""
        ...

    async def credits(
        self,
        reference: Reference,
        actions: Sequence[NextAction],
        *,
        request: str,
        reference_answer: str | None,
        final_check: FinalCheck,
    ) -> JudgedSteps:
        """The credits of one turn's `actions` (action j-1 is step j) against `reference`."""
        ...


class Judge(Protocol):
    """The run's LLM judges."""

    async def score_judged(
        self, case: EvalCase, specs: Sequence[MetricSpec], outputs: Sequence[AgentOutput]
    ) -> CaseScores:
        """Every judged criterion of `specs` on the case's answered turns."""
        ...

    def step_judge(self, spec: MetricSpec) -> StepJudge | None:
        """The judge for a step criterion with `match: judge`; None when no judge model is configured."""
        ...


@dataclass(frozen=True, kw_only=True)
class ScoringContext:
    """One case × repetition as the agent played it (module docstring)."""

    eval_set_id: str
    case: EvalCase
    """The case as played: a scenario case's turns are the messages its simulated user sent."""
    repetition: int
    specs: Sequence[MetricSpec]
    """The case's criteria (the eval set's, or the case's own)."""
    adk_efficiency: bool = False
    eval_format: str | None = None
    """The eval set's file format: LangSmith evaluators get mappings for a LangSmith dataset's references."""
    """Score ADK's informational efficiency metrics too, as ADK appends them to every eval of its formats."""
    outputs: Sequence[AgentOutput] = ()
    """One per answered turn (fewer than the case's turns when `agent_error` stopped it)."""
    turn_latencies_s: Sequence[float | None] = ()
    latency_s: float | None = None
    usage: Usage | None = None
    final_state: Any = None
    agent_error: CaseError | None = None
    """Why the agent did not finish the case, if it did not."""
    simulation: SimulationResult | None = None
    content_hash: str = ""
    must_pass: bool = False
    cluster: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    judge: Judge | None = None
    teacher: Teacher | None = None
    recorded: CaseResult | None = None
    stepwise: StepwiseMode = "auto"
    """Teacher forcing: `auto` for turns with reference messages or when a step criterion asks, `on`, `off`."""

    @property
    def initial_state(self) -> dict[str, Any]:
        return self.case.session_input.state if self.case.session_input else {}
