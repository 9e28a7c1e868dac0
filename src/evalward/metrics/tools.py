"""Reference-free single-tool checks and budgets (METRICS.md §3); each scores a turn 1 or 0.

Counting rules (METRICS.md §1): deferred calls never count; failed calls (status `error`) count in
budgets (`tool_call_count`, `max_tool_calls`, `tool_not_called`: trying a forbidden tool is a violation)
but are excluded when matching arguments (`tool_called` with `args`) and ordering.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from evalward.metrics.args import ArgsMode, ArgsRule, check_matchers, compare_args
from evalward.metrics.base import Metric, Score, TurnContext
from evalward.metrics.trajectory import parse_options
from evalward.model import MetricSpec, ToolCall


def counted_calls(ctx: TurnContext) -> list[ToolCall]:
    """Calls that count in budgets: everything except deferred calls."""
    return [c for c in ctx.actual.tool_calls if c.status != "deferred"]


def executed_calls(ctx: TurnContext) -> list[ToolCall]:
    """Calls that took part: status `ok` only."""
    return [c for c in ctx.actual.tool_calls if c.status == "ok"]


def _bounds(lo: int | None, hi: int | None) -> str:
    return f"[{lo if lo is not None else 0}, {hi if hi is not None else '∞'}]"


def _in_bounds(count: int, lo: int | None, hi: int | None) -> bool:
    return (lo is None or count >= lo) and (hi is None or count <= hi)


class _Options(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolCalledOptions(_Options):
    tool: str
    min: int = Field(default=1, ge=0)
    max: int | None = Field(default=None, ge=0)
    args: dict[str, Any] | None = None
    args_mode: ArgsMode = "contains"
    coerce: bool = False
    occurrence: Literal["any", "first", "last"] | int = "any"


class ToolCalled(Metric):
    """`called(tool, min=1, max=∞, args, occurrence)`: 1 iff the check holds, else 0.

    occurrence `any` (default; pydantic-evals defaults to `first`): count = calls to `tool` whose args
    match (`args_mode` default `contains`, matchers allowed); pass iff min ≤ count ≤ max.
    occurrence `first` / `last` / an index i (0-based): that call to `tool` must exist and match `args`, and
    the number of calls to `tool` must lie in [min, max]. Failed calls are not considered.
    """

    name = "tool_called"
    description = "a tool was called (min/max times, matching args, any/first/last occurrence); 1/0"

    def check_options(self, spec: MetricSpec) -> list[str]:
        options, problems = parse_options(ToolCalledOptions, spec)
        if options is not None:
            if options.max is not None and options.max < options.min:
                problems.append(f"{spec.name}: max={options.max} is below min={options.min}")
            problems.extend(f"{spec.name}: option args {p}" for p in check_matchers(options.args or {}, "$"))
        return problems

    def score_turn(self, ctx: TurnContext) -> Score | None:
        options: ToolCalledOptions = _parsed(ToolCalledOptions, ctx.spec)
        rule = ArgsRule(mode=options.args_mode, coerce=options.coerce)
        calls = [c for c in executed_calls(ctx) if c.name == options.tool]
        matching = [c for c in calls if not compare_args(c.args, options.args, rule)]
        details: dict[str, Any] = {
            "tool": options.tool,
            "calls": [c.signature() for c in calls],
            "matching": [c.signature() for c in matching],
        }
        if options.occurrence == "any":
            passed = _in_bounds(len(matching), options.min, options.max)
            what = "matching calls" if options.args is not None else "calls"
            explanation = f"{options.tool}: {len(matching)} {what}, allowed {_bounds(options.min, options.max)}"
            return Score(1.0 if passed else 0.0, f"{explanation} → {int(passed)}", details)
        index = {"first": 0, "last": -1}.get(str(options.occurrence), options.occurrence)
        assert isinstance(index, int)
        chosen = calls[index] if -len(calls) <= index < len(calls) else None
        if chosen is None:
            return Score(
                0.0, f"{options.tool}: no call at occurrence {options.occurrence} ({len(calls)} calls) → 0", details
            )
        diffs = compare_args(chosen.args, options.args, rule)
        details["arg_diffs"] = [d.as_dict() for d in diffs]
        count_ok = _in_bounds(len(calls), options.min, options.max)
        passed = not diffs and count_ok
        explanation = (
            f"{options.tool}: occurrence {options.occurrence} = {chosen.signature()} "
            f"{'matches' if not diffs else 'differs'}; {len(calls)} calls, allowed {_bounds(options.min, options.max)}"
        )
        return Score(1.0 if passed else 0.0, f"{explanation} → {int(passed)}", details)


class ToolNotCalledOptions(_Options):
    tool: str | None = None
    tools: list[str] | None = None

    @model_validator(mode="after")
    def _one_of(self) -> ToolNotCalledOptions:
        if not self.tool and not self.tools:
            raise ValueError("give `tool` or `tools`")
        return self

    def names(self) -> list[str]:
        return ([self.tool] if self.tool else []) + list(self.tools or [])


class ToolNotCalled(Metric):
    """Denylist: 1 iff none of `tool` / `tools` was called (failed attempts count; deferred do not)."""

    name = "tool_not_called"
    description = "none of the forbidden tools was called; 1/0"

    def check_options(self, spec: MetricSpec) -> list[str]:
        return parse_options(ToolNotCalledOptions, spec)[1]

    def score_turn(self, ctx: TurnContext) -> Score | None:
        options: ToolNotCalledOptions = _parsed(ToolNotCalledOptions, ctx.spec)
        forbidden = options.names()
        offending = [c.signature() for c in counted_calls(ctx) if c.name in forbidden]
        passed = not offending
        explanation = f"forbidden {', '.join(forbidden)}: {len(offending)} call(s) → {int(passed)}"
        return Score(1.0 if passed else 0.0, explanation, {"forbidden": forbidden, "offending": offending})


class ToolCallCountOptions(_Options):
    tool: str
    min: int | None = Field(default=None, ge=0)
    max: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _bounds_given(self) -> ToolCallCountOptions:
        if self.min is None and self.max is None:
            raise ValueError("give `min` and/or `max`")
        if self.min is not None and self.max is not None and self.max < self.min:
            raise ValueError(f"max={self.max} is below min={self.min}")
        return self


class ToolCallCount(Metric):
    """1 iff count(tool) ∈ [min, max] (failed calls count, deferred do not)."""

    name = "tool_call_count"
    description = "number of calls to a tool lies in [min, max]; 1/0"

    def check_options(self, spec: MetricSpec) -> list[str]:
        return parse_options(ToolCallCountOptions, spec)[1]

    def score_turn(self, ctx: TurnContext) -> Score | None:
        options: ToolCallCountOptions = _parsed(ToolCallCountOptions, ctx.spec)
        count = sum(1 for c in counted_calls(ctx) if c.name == options.tool)
        passed = _in_bounds(count, options.min, options.max)
        explanation = f"{options.tool}: {count} call(s), allowed {_bounds(options.min, options.max)} → {int(passed)}"
        return Score(1.0 if passed else 0.0, explanation, {"tool": options.tool, "count": count})


class ToolOrderOptions(_Options):
    before: str
    after: str


class ToolOrder(Metric):
    """`before(X, Y)`: 1 iff `after` is never called, or `before` is called and its first call precedes the
    first call of `after` (so every `after` call is preceded by a `before` call). Failed calls are ignored."""

    name = "tool_order"
    description = "first call of `before` precedes the first call of `after`; 1/0"

    def check_options(self, spec: MetricSpec) -> list[str]:
        return parse_options(ToolOrderOptions, spec)[1]

    def score_turn(self, ctx: TurnContext) -> Score | None:
        options: ToolOrderOptions = _parsed(ToolOrderOptions, ctx.spec)
        names = [c.name for c in executed_calls(ctx)]
        first_before = names.index(options.before) if options.before in names else None
        first_after = names.index(options.after) if options.after in names else None
        details = {"before_index": first_before, "after_index": first_after}
        if first_after is None:
            return Score(1.0, f"{options.after} not called: nothing to order → 1", details)
        if first_before is None:
            return Score(0.0, f"{options.after} called at {first_after} without any {options.before} call → 0", details)
        passed = first_before < first_after
        explanation = (
            f"first {options.before} at {first_before}, first {options.after} at {first_after} → {int(passed)}"
        )
        return Score(1.0 if passed else 0.0, explanation, details)


class MaxToolCallsOptions(_Options):
    max: int = Field(ge=0)


class MaxToolCalls(Metric):
    """Budget: 1 iff the turn made at most `max` tool calls (failed calls count, deferred do not)."""

    name = "max_tool_calls"
    description = "at most `max` tool calls in the turn; 1/0"

    def check_options(self, spec: MetricSpec) -> list[str]:
        return parse_options(MaxToolCallsOptions, spec)[1]

    def score_turn(self, ctx: TurnContext) -> Score | None:
        options: MaxToolCallsOptions = _parsed(MaxToolCallsOptions, ctx.spec)
        count = len(counted_calls(ctx))
        passed = count <= options.max
        return Score(1.0 if passed else 0.0, f"{count} call(s) ≤ max {options.max}? → {int(passed)}", {"count": count})


def _parsed(model: type[_Options], spec: MetricSpec) -> Any:
    options, problems = parse_options(model, spec)
    if problems:
        raise ValueError("; ".join(problems))
    return options


TOOL_METRICS: tuple[type[Metric], ...] = (ToolCalled, ToolNotCalled, ToolCallCount, ToolOrder, MaxToolCalls)
