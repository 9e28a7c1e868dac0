"""The one contract every metric implements, and the context objects it reads.

Every criterion is scored through `Metric.evaluate(specs, ctx) -> CaseScores` (async): `ctx` is the finished
case × repetition with its handles (`metrics.scoring_context.ScoringContext`: a judge, the agent for teacher forcing,
the recorded result when a stored run is re-scored). The registry maps each criterion to its metric; the
criteria of one `batch` are scored in one call because they share work, and the batches run in
`evaluation.BATCHES` order (`metrics.evaluation.score_case_run`):

- `outputs` (this class's own `evaluate`): metrics that read only what the agent returned. Such a metric
  implements `score_turn` (`scope = "turn"`; the case score then folds the turns it applies to by
  `turn_aggregate`: their mean by default, as ADK does) or `score_case` (`scope = "case"`: state, latency,
  cost), returning a `Score`, or None when the case carries no expectation it needs or the value it reads was
  not recorded (reported as `not_applicable` with the metric's `not_applicable` reason, never a pass). Either
  may be `async def` (a metric that calls a service); a plain `def` is called directly, without an await;
- `teacher_forcing` (`metrics.teacher_forcing`): the step metrics, from more calls to the agent;
- `user_code` (`metrics.custom`): ADK custom metrics and user evaluators, possibly async;
- `judge` (`metrics.judged`): LLM-judged metrics, through the run's judge.

A metric's options are its `Options` model (`metrics.metric_options`): validated once per criterion, before any agent
runs, and handed to the metric as `ctx.options`, an instance of that model.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypeVar

from pydantic import BaseModel

from evalward.metrics.metric_options import NoOptions, OptionProblem, unit_threshold
from evalward.model import AgentOutput, EvalCase, Invocation, MetricSpec, Usage

if TYPE_CHECKING:
    from evalward.metrics.scoring_context import CaseScores, ScoringContext


OptionsT = TypeVar("OptionsT", bound=BaseModel)

_UNVALIDATED: Any = None
"""`options` not given: the context validates the criterion's (tests, and callers outside the scoring loop)."""


@dataclass(frozen=True, kw_only=True)
class TurnContext(Generic[OptionsT]):
    """Everything a turn-scoped metric may read (`TurnContext[MyMetric.Options]` types `options`)."""

    case: EvalCase
    """The eval case being scored."""
    turn: int
    """0-based index of the turn."""
    expected: Invocation
    """The expected side of the turn."""
    actual: AgentOutput
    """What the agent returned for the turn."""
    spec: MetricSpec
    """The metric's name, threshold and options as configured."""
    latency_s: float | None = None
    """Wall-clock seconds the agent took for this turn (None when not timed)."""
    options: OptionsT = _UNVALIDATED
    """`spec.options` validated as the metric's `Options` (the scoring loop passes the criterion's, validated once)."""

    def __post_init__(self) -> None:
        if self.options is _UNVALIDATED:
            object.__setattr__(self, "options", _validated(self.spec))


@dataclass(frozen=True, kw_only=True)
class CaseContext(Generic[OptionsT]):
    """Everything a case-scoped metric may read (`CaseContext[MyMetric.Options]` types `options`)."""

    case: EvalCase
    """The eval case being scored."""
    turns: list[tuple[Invocation, AgentOutput]]
    """Expected and actual side of every turn, in order."""
    spec: MetricSpec
    """The metric's name, threshold and options as configured."""
    initial_state: dict[str, Any] = field(default_factory=dict)
    """Session state the case started with."""
    final_state: Any = None
    """State reported by the agent after the last turn (None if it reported none)."""
    latency_s: float | None = None
    """Wall-clock time of the whole case."""
    usage: Usage | None = None
    """Summed usage over the turns."""
    options: OptionsT = _UNVALIDATED
    """`spec.options` validated as the metric's `Options` (the scoring loop passes the criterion's, validated once)."""

    def __post_init__(self) -> None:
        if self.options is _UNVALIDATED:
            object.__setattr__(self, "options", _validated(self.spec))


def _validated(spec: MetricSpec) -> Any:
    from evalward.metrics.registry import options_of  # cycle: the registry imports this module

    return options_of(spec)


@dataclass(frozen=True)
class Score:
    """A metric's value with the arithmetic behind it and machine-readable diagnostics."""

    value: float
    explanation: str
    details: dict[str, Any] = field(default_factory=dict)


TurnAggregate = Literal["mean", "sum", "mean_all"]
"""How a turn metric's case score folds its turn scores: `mean` over the turns with a score (ADK's
`overall_score`), `sum` over them (counts such as redundant or failed calls: the threshold caps the case
total), or `mean_all` = Σ scores / number of turns scored, a turn without a value counting 0 once any turn
has one (ADK's `token_usage_v1` average)."""


class Metric:
    """Base class (module docstring): a metric of the `outputs` batch sets `name`, `scope`, its `Options` and
    implements `score_turn` or `score_case` (sync or async); a metric of another batch overrides `evaluate`."""

    name: ClassVar[str]
    scope: ClassVar[Literal["turn", "case"]] = "turn"
    higher_is_better: ClassVar[bool] = True
    description: ClassVar[str] = ""
    turn_aggregate: ClassVar[TurnAggregate] = "mean"
    not_applicable: ClassVar[str] = "not applicable: the case carries no expectation this metric needs"
    """The explanation recorded when the metric returns None."""
    Options: ClassVar[type[BaseModel]] = NoOptions
    """The metric's options, a pydantic model refusing unknown keys (`metrics.metric_options`); `NoOptions`: none."""
    batch: ClassVar[str] = "outputs"
    """Criteria whose metrics share a batch are scored by one `evaluate` call (module docstring)."""
    scores_without_criteria: ClassVar[bool] = False
    """True when the batch may report results for a case none of whose criteria name it (the step metrics of
    a turn with reference messages); its `evaluate` is then called with no specs."""
    awaits: ClassVar[bool] = False
    """True when `score_turn` / `score_case` is `async def` (set for each subclass): the scoring loop awaits
    its result; a sync metric's is used as it is returned, with no await per turn."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.awaits = inspect.iscoroutinefunction(cls.score_turn) or inspect.iscoroutinefunction(cls.score_case)

    @classmethod
    def options_model(cls, spec: MetricSpec) -> type[BaseModel]:
        """The model `spec.options` is validated against: `Options` (a batch's metric, scoring many names,
        picks the one of `spec`'s)."""
        return cls.Options

    @classmethod
    def threshold_problem(cls, spec: MetricSpec) -> OptionProblem | None:
        """What is wrong with `spec.threshold` for this metric, or None: a score where higher is better lies
        between 0 and 1, and so does its threshold; override for other ranges (`options.maximum_threshold`)."""
        if spec.threshold is None or not cls.higher_is_better:
            return None
        return unit_threshold(spec.name, spec.threshold)

    def score_turn(self, ctx: TurnContext[Any]) -> Score | Awaitable[Score | None] | None:
        raise NotImplementedError(f"{self.name} does not score turns")

    def score_case(self, ctx: CaseContext[Any]) -> Score | Awaitable[Score | None] | None:
        raise NotImplementedError(f"{self.name} does not score cases")

    async def evaluate(self, specs: Sequence[MetricSpec], ctx: ScoringContext) -> CaseScores:
        """Score `specs` on the case. For the `outputs` batch: each criterion by its own metric's `score_turn`
        or `score_case`, folded as `metrics.scoring` says (its error, if any, names the first errored turn);
        ADK's informational efficiency metrics are added for the ADK formats (`ctx.adk_efficiency`)."""
        from evalward.metrics.scoring import score_outputs  # cycle: the scoring rules import this module

        return await score_outputs(specs, ctx)
