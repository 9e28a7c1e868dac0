"""The one contract every metric implements, and the context objects it reads.

A metric scores either one turn (`scope = "turn"`; the case score then folds the turns it applies to by
`turn_aggregate`: their mean by default, as ADK does) or a whole case (`scope = "case"`: state, latency,
cost). It returns a `Score` or None when the case carries no expectation it needs, or the value it reads was
not recorded (reported as `not_applicable` with the metric's `not_applicable` reason, never a pass).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from evalward.model import AgentOutput, EvalCase, Invocation, MetricSpec, Usage


@dataclass(frozen=True, kw_only=True)
class TurnContext:
    """Everything a turn-scoped metric may read."""

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


@dataclass(frozen=True, kw_only=True)
class CaseContext:
    """Everything a case-scoped metric may read."""

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
    """Base class: subclasses set `name`, `scope`, and implement `score_turn` or `score_case`."""

    name: ClassVar[str]
    scope: ClassVar[Literal["turn", "case"]] = "turn"
    higher_is_better: ClassVar[bool] = True
    description: ClassVar[str] = ""
    turn_aggregate: ClassVar[TurnAggregate] = "mean"
    not_applicable: ClassVar[str] = "not applicable: the case carries no expectation this metric needs"
    """The explanation recorded when the metric returns None."""

    def check_options(self, spec: MetricSpec) -> list[str]:
        """Problems with `spec.options` (unknown keys, wrong types), as messages; empty when valid."""
        return []

    def score_turn(self, ctx: TurnContext) -> Score | None:
        raise NotImplementedError(f"{self.name} does not score turns")

    def score_case(self, ctx: CaseContext) -> Score | None:
        raise NotImplementedError(f"{self.name} does not score cases")
