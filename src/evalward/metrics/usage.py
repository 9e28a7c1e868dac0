"""Cost, latency and token metrics (METRICS.md §9) and ADK's informational efficiency metrics.

Native (case scope, lower is better; the threshold is the maximum allowed, pass iff value ≤ threshold):
- `latency_s` = wall-clock seconds of the whole case;
- `total_tokens` = input_tokens + output_tokens summed over the turns (a missing side counts 0; both
  missing → not applicable);
- `cost_usd` = reported cost summed over the turns.
Not applicable when the runner recorded no such value.

ADK efficiency names (ADK-FORMATS.md §6.3; informational, lower is better, **no threshold allowed**):
`tool_call_count_v1` (calls per turn), `inference_call_count_v1` (model requests per turn),
`token_usage_v1` (tokens per turn) — turn scope, case value = mean over turns with a value;
`invocation_duration_v1` = case wall-clock time / number of turns (evalward records per-turn latency
outside the metric context, so the per-turn mean is computed from the case total).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from evalward.metrics.base import CaseContext, Metric, Score, TurnContext
from evalward.model import MetricSpec, Usage


def _no_options(spec: MetricSpec) -> list[str]:
    return [f"{spec.name}: unknown option {key!r} (this metric takes none)" for key in spec.options]


def _tokens(usage: Usage | None) -> int | None:
    if usage is None or (usage.input_tokens is None and usage.output_tokens is None):
        return None
    return (usage.input_tokens or 0) + (usage.output_tokens or 0)


class _UsageMetric(Metric):
    scope: ClassVar[Literal["turn", "case"]] = "case"
    higher_is_better: ClassVar[bool] = False

    def check_options(self, spec: MetricSpec) -> list[str]:
        problems = _no_options(spec)
        if spec.threshold is not None and spec.threshold < 0:
            problems.append(f"{spec.name}: threshold is a maximum and must be ≥ 0, found {spec.threshold:g}")
        return problems


class LatencyS(_UsageMetric):
    """Wall-clock seconds of the case; pass iff ≤ threshold."""

    name = "latency_s"
    description = "wall-clock seconds of the case (threshold = maximum)"

    def score_case(self, ctx: CaseContext) -> Score | None:
        if ctx.latency_s is None:
            return None
        return Score(ctx.latency_s, f"latency {ctx.latency_s:.3f}s", {"latency_s": ctx.latency_s})


class TotalTokens(_UsageMetric):
    """input_tokens + output_tokens over the case; pass iff ≤ threshold."""

    name = "total_tokens"
    description = "input + output tokens of the case (threshold = maximum)"

    def score_case(self, ctx: CaseContext) -> Score | None:
        total = _tokens(ctx.usage)
        if total is None or ctx.usage is None:
            return None
        explanation = f"tokens {ctx.usage.input_tokens or 0} in + {ctx.usage.output_tokens or 0} out = {total}"
        return Score(
            float(total),
            explanation,
            {"input_tokens": ctx.usage.input_tokens, "output_tokens": ctx.usage.output_tokens},
        )


class CostUsd(_UsageMetric):
    """Reported cost of the case in USD; pass iff ≤ threshold."""

    name = "cost_usd"
    description = "reported cost of the case in USD (threshold = maximum)"

    def score_case(self, ctx: CaseContext) -> Score | None:
        if ctx.usage is None or ctx.usage.cost_usd is None:
            return None
        return Score(ctx.usage.cost_usd, f"cost ${ctx.usage.cost_usd:.6f}", {"cost_usd": ctx.usage.cost_usd})


class _Efficiency(Metric):
    """ADK efficiency metrics are informational: a threshold is an error, as in ADK 2.13."""

    higher_is_better: ClassVar[bool] = False

    def check_options(self, spec: MetricSpec) -> list[str]:
        problems = _no_options(spec)
        if spec.threshold is not None:
            problems.append(
                f"{spec.name}: ADK efficiency metrics are informational and take no threshold "
                f"(found {spec.threshold:g}); gate with latency_s, total_tokens, cost_usd or max_tool_calls"
            )
        return problems


class ToolCallCountV1(_Efficiency):
    """Tool calls in the turn (all statuses, as ADK counts function_call parts)."""

    name = "tool_call_count_v1"
    description = "ADK efficiency: tool calls per turn (informational)"

    def score_turn(self, ctx: TurnContext) -> Score | None:
        count = len(ctx.actual.tool_calls)
        return Score(float(count), f"{count} tool call(s)", {"count": count})


class InferenceCallCountV1(_Efficiency):
    """Model requests in the turn, when the agent reported them."""

    name = "inference_call_count_v1"
    description = "ADK efficiency: model requests per turn (informational)"

    def score_turn(self, ctx: TurnContext) -> Score | None:
        usage = ctx.actual.usage
        if usage is None or usage.model_requests is None:
            return None
        return Score(float(usage.model_requests), f"{usage.model_requests} model request(s)")


class TokenUsageV1(_Efficiency):
    """input + output tokens of the turn, when reported."""

    name = "token_usage_v1"
    description = "ADK efficiency: tokens per turn (informational)"

    def score_turn(self, ctx: TurnContext) -> Score | None:
        total = _tokens(ctx.actual.usage)
        if total is None:
            return None
        return Score(float(total), f"{total} token(s)")


class InvocationDurationV1(_Efficiency):
    """Mean turn duration = case wall-clock seconds / number of turns."""

    name = "invocation_duration_v1"
    description = "ADK efficiency: mean seconds per turn (informational)"
    scope: ClassVar[Literal["turn", "case"]] = "case"

    def score_case(self, ctx: CaseContext) -> Score | None:
        if ctx.latency_s is None or not ctx.turns:
            return None
        turns = len(ctx.turns)
        value = ctx.latency_s / turns
        return Score(value, f"{ctx.latency_s:.3f}s / {turns} turn(s) = {value:.3f}s")


USAGE_METRICS: tuple[type[Metric], ...] = (
    LatencyS,
    TotalTokens,
    CostUsd,
    ToolCallCountV1,
    InferenceCallCountV1,
    TokenUsageV1,
    InvocationDurationV1,
)
