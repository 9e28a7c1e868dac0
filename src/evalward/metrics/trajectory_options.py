"""The options every trajectory metric takes (docs/metrics.md §1–§2), and the argument rule they set per tool.

`over` picks the items compared (tool calls or step names); `args_mode`, `keys`, `coerce` and `list_policy`
make up the argument predicate ArgsMatch (args.py), overridable per tool (`tool_args`); `match_agent`,
`exclude_error_calls` and `count_deferred` say which calls take part and how (`trajectory_alignment`);
`both_empty_score` is the score of P, R and F1 when both sides are empty (`trajectory`). The weighted
metrics add `credit` (`trajectory_weighted.WeightedTrajectoryOptions`); `parallel_unordered` is
`trajectory_exact`'s only (`ExactTrajectoryOptions`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from evalward.metrics.args import ArgsMode, ArgsRule, ListPolicy
from evalward.metrics.metric_options import StrictOptions

Over = Literal["tool_calls", "steps"]


class ToolArgsOverride(StrictOptions):
    """Per-tool argument rule, replacing the metric-wide `args_mode` / `keys` for that tool."""

    args_mode: ArgsMode | None = None
    keys: list[str] | None = None


class TrajectoryOptions(StrictOptions):
    """Options shared by every trajectory metric."""

    over: Over | None = Field(
        default=None,
        description="`tool_calls` or `steps`; default: tool_calls when the turn has expected_tool_calls, "
        "else steps when it has expected_trajectory, else not applicable.",
    )
    args_mode: ArgsMode = "exact"
    keys: list[str] | None = Field(default=None, description="Compare only these argument dot paths.")
    tool_args: dict[str, ToolArgsOverride] = Field(default_factory=dict)
    coerce: bool = False
    list_policy: ListPolicy = "exact"
    match_agent: bool = True
    parallel_unordered: bool = False
    exclude_error_calls: bool = True
    count_deferred: bool = False
    both_empty_score: float = Field(default=1.0, ge=0.0, le=1.0)

    @field_validator("parallel_unordered")
    @classmethod
    def _exact_only(cls, value: bool) -> bool:
        if value:
            raise ValueError("option parallel_unordered applies to trajectory_exact only")
        return value


class ExactTrajectoryOptions(TrajectoryOptions):
    """`trajectory_exact`'s options: with `parallel_unordered`, calls sharing a step compare as a multiset."""

    @field_validator("parallel_unordered")
    @classmethod
    def _exact_only(cls, value: bool) -> bool:
        return value


def rule_for(tool: str, options: TrajectoryOptions) -> ArgsRule:
    """The argument rule for one tool: the per-tool override, else the metric-wide settings."""
    override = options.tool_args.get(tool)
    mode = options.args_mode
    keys = options.keys
    if override is not None:
        mode = override.args_mode or mode
        keys = override.keys if override.keys is not None else keys
    return ArgsRule(
        mode=mode,
        keys=tuple(keys) if keys is not None else None,
        coerce=options.coerce,
        list_policy=options.list_policy,
    )
