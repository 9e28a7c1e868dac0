"""Single-tool checks, permissions, budgets and efficiency counts (docs/metrics.md §3).

The checks score a turn 1 or 0: `tool_called`, `tool_not_called` (denylist), `allowed_tools` (allowlist),
`tool_call_count`, `tool_order`, `max_tool_calls`. The efficiency measures are lower-is-better numbers whose
threshold is a **maximum** (pass iff value ≤ threshold):
- `step_ratio` = n/m, actual calls (or steps) over expected ones; per turn, case = mean over turns;
- `redundant_calls` = calls whose (name, canonical args) equals an earlier call of the same turn; per turn,
  case = sum over turns;
- `error_calls` = calls with status `error`; per turn, case = sum over turns.

Counting rules (docs/metrics.md §1): deferred calls never count; failed calls (status `error`) count in
budgets (`tool_call_count`, `max_tool_calls`, `step_ratio`, `tool_not_called` and `allowed_tools`: trying a
forbidden tool is a violation) but are excluded when matching arguments (`tool_called` with `args`) and
ordering. An agent reports a failed call as `{"name", "args", "status": "error", "result": <the error>}`.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from evalward.metrics.args import ArgsMode, ArgsRule, ListPolicy, check_matchers, compare_args, normalize_json
from evalward.metrics.base import Metric, Score, TurnAggregate, TurnContext
from evalward.metrics.metric_options import OptionProblem, StrictOptions, maximum_threshold
from evalward.metrics.registry import register_metric
from evalward.metrics.trajectory_alignment import call_diffs
from evalward.metrics.trajectory_options import ToolArgsOverride, TrajectoryOptions
from evalward.model import MetricSpec, ToolCall
from evalward.model.text import compact_json, ratio


def counted_calls(ctx: TurnContext[Any]) -> list[ToolCall]:
    """Calls that count in budgets: everything except deferred calls."""
    return [c for c in ctx.actual.tool_calls if c.status != "deferred"]


def executed_calls(ctx: TurnContext[Any]) -> list[ToolCall]:
    """Calls that took part: status `ok` only."""
    return [c for c in ctx.actual.tool_calls if c.status == "ok"]


def _bounds(lo: int | None, hi: int | None) -> str:
    return f"[{lo if lo is not None else 0}, {hi if hi is not None else '∞'}]"


def _in_bounds(count: int, lo: int | None, hi: int | None) -> bool:
    return (lo is None or count >= lo) and (hi is None or count <= hi)


class ToolCalledOptions(StrictOptions):
    tool: str
    min: int = Field(default=1, ge=0)
    max: int | None = Field(default=None, ge=0)
    args: dict[str, Any] | None = None
    args_mode: ArgsMode = "contains"
    coerce: bool = False
    occurrence: Literal["any", "first", "last"] | int = "any"

    @model_validator(mode="after")
    def _bounds_and_matchers(self) -> ToolCalledOptions:
        if self.max is not None and self.max < self.min:
            raise ValueError(f"max={self.max} is below min={self.min}")
        # Each problem names its place inside `args` and the value there (`$.q: matcher $regex needs …`).
        problems = check_matchers(self.args or {}, "$")
        if problems:
            raise ValueError("; ".join(f"option args {problem}" for problem in problems))
        return self


@register_metric
class ToolCalled(Metric):
    """`called(tool, min=1, max=∞, args, occurrence)`: 1 iff the check holds, else 0.

    occurrence `any` (default; pydantic-evals defaults to `first`): count = calls to `tool` whose args
    match (`args_mode` default `contains`, matchers allowed); pass iff min ≤ count ≤ max.
    occurrence `first` / `last` / an index i (0-based): that call to `tool` must exist and match `args`, and
    the number of calls to `tool` must lie in [min, max]. Failed calls are not considered.
    """

    name = "tool_called"
    description = "a tool was called (min/max times, matching args, any/first/last occurrence); 1/0"
    Options = ToolCalledOptions

    def score_turn(self, ctx: TurnContext[ToolCalledOptions]) -> Score | None:
        options = ctx.options
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


class ToolNotCalledOptions(StrictOptions):
    tool: str | None = None
    tools: list[str] | None = None

    @model_validator(mode="after")
    def _one_of(self) -> ToolNotCalledOptions:
        if not self.tool and not self.tools:
            raise ValueError("give `tool` or `tools`")
        return self

    def names(self) -> list[str]:
        return ([self.tool] if self.tool else []) + list(self.tools or [])


@register_metric
class ToolNotCalled(Metric):
    """Denylist: 1 iff none of `tool` / `tools` was called (failed attempts count; deferred do not)."""

    name = "tool_not_called"
    description = "none of the forbidden tools was called; 1/0"
    Options = ToolNotCalledOptions

    def score_turn(self, ctx: TurnContext[ToolNotCalledOptions]) -> Score | None:
        options = ctx.options
        forbidden = options.names()
        offending = [c.signature() for c in counted_calls(ctx) if c.name in forbidden]
        passed = not offending
        explanation = f"forbidden {', '.join(forbidden)}: {len(offending)} call(s) → {int(passed)}"
        return Score(1.0 if passed else 0.0, explanation, {"forbidden": forbidden, "offending": offending})


class ToolCallCountOptions(StrictOptions):
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


@register_metric
class ToolCallCount(Metric):
    """1 iff count(tool) ∈ [min, max] (failed calls count, deferred do not)."""

    name = "tool_call_count"
    description = "number of calls to a tool lies in [min, max]; 1/0"
    Options = ToolCallCountOptions

    def score_turn(self, ctx: TurnContext[ToolCallCountOptions]) -> Score | None:
        options = ctx.options
        count = sum(1 for c in counted_calls(ctx) if c.name == options.tool)
        passed = _in_bounds(count, options.min, options.max)
        explanation = f"{options.tool}: {count} call(s), allowed {_bounds(options.min, options.max)} → {int(passed)}"
        return Score(1.0 if passed else 0.0, explanation, {"tool": options.tool, "count": count})


class ToolOrderOptions(StrictOptions):
    before: str
    after: str


@register_metric
class ToolOrder(Metric):
    """`before(X, Y)`: 1 iff `after` is never called, or `before` is called and its first call precedes the
    first call of `after` (so every `after` call is preceded by a `before` call). Failed calls are ignored."""

    name = "tool_order"
    description = "first call of `before` precedes the first call of `after`; 1/0"
    Options = ToolOrderOptions

    def score_turn(self, ctx: TurnContext[ToolOrderOptions]) -> Score | None:
        options = ctx.options
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


class MaxToolCallsOptions(StrictOptions):
    max: int = Field(ge=0)


@register_metric
class MaxToolCalls(Metric):
    """Budget: 1 iff the turn made at most `max` tool calls (failed calls count, deferred do not)."""

    name = "max_tool_calls"
    description = "at most `max` tool calls in the turn; 1/0"
    Options = MaxToolCallsOptions

    def score_turn(self, ctx: TurnContext[MaxToolCallsOptions]) -> Score | None:
        options = ctx.options
        count = len(counted_calls(ctx))
        passed = count <= options.max
        return Score(1.0 if passed else 0.0, f"{count} call(s) ≤ max {options.max}? → {int(passed)}", {"count": count})


class AllowedToolsOptions(StrictOptions):
    tools: list[str] | None = Field(
        default=None, description="The allowlist of tool names; default: the turn's expected tool calls."
    )
    args_mode: ArgsMode = "exact"
    keys: list[str] | None = None
    tool_args: dict[str, ToolArgsOverride] = Field(default_factory=dict)
    coerce: bool = False
    list_policy: ListPolicy = "exact"
    match_agent: bool = True


@register_metric
class AllowedTools(Metric):
    """Allowlist: 1 iff every call of the turn is allowed, multiplicity ignored (a permitted call may repeat).

    With `tools`: allowed iff the call's name is listed (reference-free). Without: allowed iff the call
    satisfies M (name, args under `args_mode` / `keys` / `tool_args`, agent) against **some** expected call
    of the turn (the `subset` mode with `allowed_tools`, docs/metrics.md §2); not applicable when the turn expects
    nothing. Failed calls count (attempting a forbidden tool is a violation); deferred calls do not.
    """

    name = "allowed_tools"
    description = "every call is on the allowlist (`tools`, else the expected calls), repeats allowed; 1/0"
    Options = AllowedToolsOptions

    def score_turn(self, ctx: TurnContext[AllowedToolsOptions]) -> Score | None:
        options = ctx.options
        calls = counted_calls(ctx)
        if options.tools is not None:
            allowed_names = list(options.tools)
            offending = [(i, c) for i, c in enumerate(calls) if c.name not in allowed_names]
            source = f"allowed {', '.join(allowed_names) or '(none)'}"
            shown = allowed_names
        else:
            expected = ctx.expected.expected_tool_calls
            if expected is None:
                return None
            rules = TrajectoryOptions(
                args_mode=options.args_mode,
                keys=options.keys,
                tool_args=options.tool_args,
                coerce=options.coerce,
                list_policy=options.list_policy,
                match_agent=options.match_agent,
            )
            for index, call in enumerate(expected):
                for problem in check_matchers(call.args or {}, f"expected_tool_calls[{index}].args"):
                    raise ValueError(problem)
            offending = [(i, c) for i, c in enumerate(calls) if not any(not call_diffs(c, e, rules) for e in expected)]
            shown = [e.signature() for e in expected]
            source = f"allowed = expected calls [{', '.join(shown)}] (args_mode {options.args_mode})"
        passed = not offending
        explanation = f"{source}: {len(calls)} call(s), {len(offending)} not allowed"
        if offending:
            explanation += f" ({', '.join(c.signature() for _, c in offending)})"
        details = {
            "allowed": shown,
            "calls": [c.signature() for c in calls],
            "offending": [{"index": i, "call": c.signature()} for i, c in offending],
        }
        return Score(1.0 if passed else 0.0, f"{explanation} → {int(passed)}", details)


class _Efficiency(Metric):
    """Lower-is-better counts and ratios: the threshold is a maximum (pass iff value ≤ threshold)."""

    higher_is_better: ClassVar[bool] = False
    turn_aggregate: ClassVar[TurnAggregate] = "sum"

    @classmethod
    def threshold_problem(cls, spec: MetricSpec) -> OptionProblem | None:
        return None if spec.threshold is None else maximum_threshold(spec.name, spec.threshold)


class StepRatioOptions(StrictOptions):
    over: Literal["tool_calls", "steps"] | None = Field(
        default=None,
        description="`tool_calls` or `steps`; default: tool_calls when the turn has expected_tool_calls, "
        "else steps when it has expected_trajectory.",
    )


@register_metric
class StepRatio(_Efficiency):
    """step_ratio = n/m: actual tool calls (failed ones count, deferred do not) over expected calls, or actual
    over expected steps (langchain-benchmarks). 1.0 = as many as the reference; the threshold is a maximum.
    n = m = 0 → 1.0; m = 0 < n has no finite ratio → not applicable (cap calls with `max_tool_calls`).
    Case = mean over turns."""

    name = "step_ratio"
    description = "n/m: actual calls (or steps) per expected one (threshold = maximum)"
    turn_aggregate = "mean"
    Options = StepRatioOptions
    not_applicable = (
        "not applicable: the turn expects no calls or steps (or none are expected but some were made: "
        "n/0 has no finite value; use max_tool_calls)"
    )

    def score_turn(self, ctx: TurnContext[StepRatioOptions]) -> Score | None:
        over = ctx.options.over
        if over is None:
            if ctx.expected.expected_tool_calls is not None:
                over = "tool_calls"
            elif ctx.expected.expected_trajectory is not None:
                over = "steps"
            else:
                return None
        if over == "tool_calls":
            if ctx.expected.expected_tool_calls is None:
                return None
            n, m = len(counted_calls(ctx)), len(ctx.expected.expected_tool_calls)
        else:
            if ctx.expected.expected_trajectory is None:
                return None
            n, m = len(ctx.actual.steps()), len(ctx.expected.expected_trajectory)
        details = {"over": over, "n_actual": n, "n_expected": m}
        if m == 0:
            if n == 0:
                return Score(1.0, "n=m=0 (nothing expected, nothing done) → 1.000", details)
            return None
        return Score(n / m, f"step_ratio={ratio(n, m)}", details)


def canonical_args(args: dict[str, Any]) -> str:
    """The args as canonical JSON: normalised (JSON strings parsed), sorted keys, whole floats as integers
    (`1 == 1.0`), booleans kept apart from numbers (`true != 1`)."""

    def canon(value: Any) -> Any:
        if isinstance(value, bool) or value is None or isinstance(value, str | int):
            return value
        if isinstance(value, float):
            return int(value) if value.is_integer() else value
        if isinstance(value, dict):
            return {str(k): canon(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [canon(v) for v in value]
        return value

    return json.dumps(canon(normalize_json(args)), sort_keys=True, separators=(",", ":"), default=str)


class RedundantCallsOptions(StrictOptions):
    count_retries: bool = Field(
        default=False,
        description="Also count a repeat of a call that failed (by default a retry after an error is not redundant).",
    )


@register_metric
class RedundantCalls(_Efficiency):
    """redundant_calls = #{i : ∃ j < i with name_j = name_i and canonical(args_j) = canonical(args_i)} over the
    turn's calls (deferred excluded). Canonical args: JSON strings parsed, key order ignored, `1 == 1.0`,
    `true != 1`. A repeat of a call that failed is a retry, not redundant (unless `count_retries`); calls
    without recorded args are skipped. Per turn; case = sum over turns; the threshold is a maximum."""

    name = "redundant_calls"
    description = "calls repeating an earlier call's name and args in the turn (case = sum; threshold = maximum)"
    Options = RedundantCallsOptions

    def score_turn(self, ctx: TurnContext[RedundantCallsOptions]) -> Score | None:
        options = ctx.options
        seen: dict[tuple[str, str], int] = {}
        redundant: list[dict[str, Any]] = []
        unrecorded = 0
        calls = counted_calls(ctx)
        for index, call in enumerate(calls):
            if call.args is None:
                unrecorded += 1
                continue
            key = (call.name, canonical_args(call.args))
            if key in seen:
                redundant.append({"index": index, "call": call.signature(), "repeats": seen[key]})
            if call.status == "ok" or options.count_retries:
                seen.setdefault(key, index)
        count = len(redundant)
        explanation = f"{count} of {len(calls)} call(s) repeat an earlier call"
        if redundant:
            explanation += " (" + ", ".join(f"#{r['index']} {r['call']} = #{r['repeats']}" for r in redundant) + ")"
        details: dict[str, Any] = {"count": count, "redundant": redundant}
        if unrecorded:
            details["notes"] = [f"{unrecorded} call(s) without recorded args were not compared"]
        return Score(float(count), explanation, details)


@register_metric
class ErrorCalls(_Efficiency):
    """error_calls = #{calls with status `error`} in the turn (the agent reports `"status": "error"`, with the
    error as `result`). Per turn; case = sum over turns; the threshold is a maximum."""

    name = "error_calls"
    description = "tool calls that failed, status error (case = sum over turns; threshold = maximum)"

    def score_turn(self, ctx: TurnContext[Any]) -> Score | None:
        failed = [(i, c) for i, c in enumerate(ctx.actual.tool_calls) if c.status == "error"]
        explanation = f"{len(failed)} of {len(ctx.actual.tool_calls)} call(s) failed"
        if failed:
            explanation += " (" + ", ".join(c.signature() for _, c in failed) + ")"
        details = {
            "count": len(failed),
            "failed": [
                {
                    "index": i,
                    "call": c.signature(),
                    "error": c.result if isinstance(c.result, str) else compact_json(c.result),
                }
                for i, c in failed
            ],
        }
        return Score(float(len(failed)), explanation, details)


TOOL_METRICS: tuple[type[Metric], ...] = (
    ToolCalled,
    ToolNotCalled,
    AllowedTools,
    ToolCallCount,
    ToolOrder,
    MaxToolCalls,
    StepRatio,
    RedundantCalls,
    ErrorCalls,
)
