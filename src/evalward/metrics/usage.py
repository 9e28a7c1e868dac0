"""Cost, latency and token metrics (docs/metrics.md §9) and ADK's informational efficiency metrics.

Native (case scope, lower is better; the threshold is the maximum allowed, pass iff value ≤ threshold):
- `latency_s` = wall-clock seconds of the whole case;
- `total_tokens` = input_tokens + output_tokens summed over the turns (a missing side counts 0; both
  missing → not applicable);
- `cost_usd` = reported cost summed over the turns.
Not applicable when the runner recorded no such value.

ADK efficiency metrics (docs/formats.md §6.3; google-adk 2.13 `_efficiency_evaluators`): informational, lower
is better, **no threshold allowed** (a threshold is a configuration error, as ADK's evaluators raise on one).
evalward scores them for every ADK-format eval set without being asked, as ADK appends them to every eval
(`ADK_EFFICIENCY_METRICS`, `with_adk_efficiency`). Per turn ("invocation"); a turn whose value was not
recorded is n/a (None, `not_applicable`), never 0:
- `tool_call_count_v1` = number of tool calls of the turn (every call, as ADK counts every function_call
  part); case = mean over turns;
- `inference_call_count_v1` = model requests of the turn (`usage.model_requests`; ADK counts events with
  usage metadata or a model version, and has None for expectations written as tool uses); n/a when the
  agent did not report it; case = mean over turns with a value;
- `token_usage_v1` = input_tokens + output_tokens of the turn (n/a when neither was reported); case =
  Σ values ÷ number of turns, a turn without a count counting 0 once any turn has one (ADK averages every
  token count over every invocation); details carry the input/output breakdown;
- `invocation_duration_v1` = wall-clock seconds of the turn as the runner timed it (n/a when untimed);
  case = mean over timed turns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from evalward.metrics.base import CaseContext, Metric, Score, TurnContext
from evalward.metrics.metric_options import OptionProblem, maximum_threshold
from evalward.metrics.registry import register_metric
from evalward.model import MetricSpec, Usage


def _tokens(usage: Usage | None) -> int | None:
    if usage is None or (usage.input_tokens is None and usage.output_tokens is None):
        return None
    return (usage.input_tokens or 0) + (usage.output_tokens or 0)


class _UsageMetric(Metric):
    scope: ClassVar[Literal["turn", "case"]] = "case"
    higher_is_better: ClassVar[bool] = False

    @classmethod
    def threshold_problem(cls, spec: MetricSpec) -> OptionProblem | None:
        return None if spec.threshold is None else maximum_threshold(spec.name, spec.threshold)


@register_metric
class LatencyS(_UsageMetric):
    """Wall-clock seconds of the case; pass iff ≤ threshold."""

    name = "latency_s"
    description = "wall-clock seconds of the case (threshold = maximum)"

    def score_case(self, ctx: CaseContext[Any]) -> Score | None:
        if ctx.latency_s is None:
            return None
        return Score(ctx.latency_s, f"latency {ctx.latency_s:.3f}s", {"latency_s": ctx.latency_s})


@register_metric
class TotalTokens(_UsageMetric):
    """input_tokens + output_tokens over the case; pass iff ≤ threshold."""

    name = "total_tokens"
    description = "input + output tokens of the case (threshold = maximum)"

    def score_case(self, ctx: CaseContext[Any]) -> Score | None:
        total = _tokens(ctx.usage)
        if total is None or ctx.usage is None:
            return None
        explanation = f"tokens {ctx.usage.input_tokens or 0} in + {ctx.usage.output_tokens or 0} out = {total}"
        return Score(
            float(total),
            explanation,
            {"input_tokens": ctx.usage.input_tokens, "output_tokens": ctx.usage.output_tokens},
        )


@register_metric
class CostUsd(_UsageMetric):
    """Reported cost of the case in USD; pass iff ≤ threshold."""

    name = "cost_usd"
    description = "reported cost of the case in USD (threshold = maximum)"

    def score_case(self, ctx: CaseContext[Any]) -> Score | None:
        if ctx.usage is None or ctx.usage.cost_usd is None:
            return None
        return Score(ctx.usage.cost_usd, f"cost ${ctx.usage.cost_usd:.6f}", {"cost_usd": ctx.usage.cost_usd})


ADK_EFFICIENCY_METRICS: tuple[str, ...] = (
    "tool_call_count_v1",
    "inference_call_count_v1",
    "token_usage_v1",
    "invocation_duration_v1",
)
"""ADK's informational efficiency metrics, in the order ADK appends them."""


def efficiency_threshold_problem(name: str, threshold: float) -> OptionProblem:
    """ADK's rule for a threshold on an efficiency metric, as evalward words it."""
    return OptionProblem(
        name,
        "threshold",
        f"{name} does not support a threshold (found {threshold:g}): it reports a value and never passes or "
        "fails, as in ADK 2.13. Name it without a threshold, or gate on latency_s, total_tokens, cost_usd or "
        "max_tool_calls",
        expected="no threshold",
        found=threshold,
        worded=True,
    )


_EFFICIENCY_SPECS: tuple[MetricSpec, ...] = tuple(MetricSpec(name=name) for name in ADK_EFFICIENCY_METRICS)
"""One criterion per efficiency metric for every case (specs are frozen): their options are checked once."""


def with_adk_efficiency(specs: Sequence[MetricSpec]) -> list[MetricSpec]:
    """`specs` followed by the efficiency metrics they do not name, informational (ADK's
    `append_default_efficiency_metrics`)."""
    named = {spec.name for spec in specs}
    return [*specs, *(spec for spec in _EFFICIENCY_SPECS if spec.name not in named)]


class _Efficiency(Metric):
    """ADK efficiency metrics are informational: a threshold is an error, as in ADK 2.13."""

    higher_is_better: ClassVar[bool] = False

    @classmethod
    def threshold_problem(cls, spec: MetricSpec) -> OptionProblem | None:
        return None if spec.threshold is None else efficiency_threshold_problem(spec.name, spec.threshold)


@register_metric
class ToolCallCountV1(_Efficiency):
    """Tool calls in the turn (every call, whatever its status, as ADK counts every function_call part);
    case = mean over turns."""

    name = "tool_call_count_v1"
    description = "ADK efficiency: tool calls per turn (informational, reported for ADK sets)"

    def score_turn(self, ctx: TurnContext[Any]) -> Score | None:
        count = len(ctx.actual.tool_calls)
        return Score(float(count), f"{count} tool call(s)", {"count": count})


@register_metric
class InferenceCallCountV1(_Efficiency):
    """Model requests in the turn as the agent reported them (`usage.model_requests`); n/a otherwise.
    Case = mean over turns with a value."""

    name = "inference_call_count_v1"
    description = "ADK efficiency: model requests per turn (informational, n/a unless the agent reports them)"
    not_applicable = "n/a: the agent reported no model requests (usage.model_requests); never counted as 0"

    def score_turn(self, ctx: TurnContext[Any]) -> Score | None:
        usage = ctx.actual.usage
        if usage is None or usage.model_requests is None:
            return None
        count = usage.model_requests
        return Score(float(count), f"{count} model request(s)", {"model_requests": count})


@register_metric
class TokenUsageV1(_Efficiency):
    """total = input_tokens + output_tokens of the turn (a missing side counts 0; both missing → n/a).
    Case = Σ totals ÷ number of turns, a turn without counts counting 0 once any turn has one (ADK)."""

    name = "token_usage_v1"
    description = "ADK efficiency: input + output tokens per turn (informational)"
    turn_aggregate = "mean_all"
    not_applicable = "n/a: the agent reported no token counts (usage.input_tokens / output_tokens)"

    def score_turn(self, ctx: TurnContext[Any]) -> Score | None:
        usage = ctx.actual.usage
        total = _tokens(usage)
        if total is None or usage is None:
            return None
        explanation = f"{usage.input_tokens or 0} in + {usage.output_tokens or 0} out = {total} token(s)"
        return Score(
            float(total),
            explanation,
            {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens, "total_tokens": total},
        )


@register_metric
class InvocationDurationV1(_Efficiency):
    """Wall-clock seconds of the turn as the runner timed it (n/a when untimed). Case = mean over timed turns."""

    name = "invocation_duration_v1"
    description = "ADK efficiency: seconds per turn (informational)"
    not_applicable = "n/a: the turn was not timed (e.g. replayed outputs without timings)"

    def score_turn(self, ctx: TurnContext[Any]) -> Score | None:
        if ctx.latency_s is None:
            return None
        return Score(ctx.latency_s, f"{ctx.latency_s:.3f}s", {"total_seconds": ctx.latency_s})


USAGE_METRICS: tuple[type[Metric], ...] = (
    LatencyS,
    TotalTokens,
    CostUsd,
    ToolCallCountV1,
    InferenceCallCountV1,
    TokenUsageV1,
    InvocationDurationV1,
)
