"""Cost, latency and token metrics, and ADK's informational efficiency metrics."""

from __future__ import annotations

from evalward.metrics.base import CaseContext, Score, TurnContext
from evalward.metrics.registry import get_metric
from evalward.model import AgentOutput, EvalCase, Invocation, MetricSpec, ToolCall, Usage

CASE = EvalCase(case_id="c", turns=[Invocation(query="a"), Invocation(query="b")])
OUTPUTS = [AgentOutput(), AgentOutput()]


def case_score(metric: str, *, latency_s: float | None = None, usage: Usage | None = None) -> Score | None:
    ctx = CaseContext(
        case=CASE,
        turns=list(zip(CASE.turns, OUTPUTS, strict=True)),
        spec=MetricSpec(name=metric),
        latency_s=latency_s,
        usage=usage,
    )
    return get_metric(metric).score_case(ctx)


def turn_score(metric: str, output: AgentOutput) -> Score | None:
    ctx = TurnContext(case=CASE, turn=0, expected=CASE.turns[0], actual=output, spec=MetricSpec(name=metric))
    return get_metric(metric).score_turn(ctx)


def test_usage_metrics_are_lower_is_better_case_metrics() -> None:
    for name in ("latency_s", "total_tokens", "cost_usd"):
        metric = get_metric(name)
        assert (metric.scope, metric.higher_is_better) == ("case", False)


def test_latency_tokens_cost_values() -> None:
    assert case_score("latency_s", latency_s=2.5) == Score(2.5, "latency 2.500s", {"latency_s": 2.5})
    usage = Usage(input_tokens=120, output_tokens=30, cost_usd=0.0042)
    tokens = case_score("total_tokens", usage=usage)
    assert tokens is not None
    # 120 + 30 = 150
    assert (tokens.value, tokens.explanation) == (150.0, "tokens 120 in + 30 out = 150")
    cost = case_score("cost_usd", usage=usage)
    assert cost is not None
    assert cost.value == 0.0042
    # a missing side counts 0: 0 + 7 = 7
    only_output = case_score("total_tokens", usage=Usage(output_tokens=7))
    assert only_output is not None
    assert only_output.value == 7.0


def test_not_applicable_without_recorded_values() -> None:
    assert case_score("latency_s") is None
    assert case_score("total_tokens", usage=Usage(cost_usd=1.0)) is None
    assert case_score("cost_usd", usage=Usage(input_tokens=1)) is None


def test_adk_efficiency_metrics() -> None:
    output = AgentOutput(
        tool_calls=[ToolCall(name="a"), ToolCall(name="b", status="error")],
        usage=Usage(input_tokens=10, output_tokens=5, model_requests=3),
    )
    calls = turn_score("tool_call_count_v1", output)
    requests = turn_score("inference_call_count_v1", output)
    tokens = turn_score("token_usage_v1", output)
    assert calls is not None and requests is not None and tokens is not None
    assert (calls.value, requests.value, tokens.value) == (2.0, 3.0, 15.0)
    assert turn_score("inference_call_count_v1", AgentOutput()) is None
    # 3.0 s over 2 turns = 1.5 s per turn
    duration = case_score("invocation_duration_v1", latency_s=3.0)
    assert duration is not None
    assert (duration.value, duration.explanation) == (1.5, "3.000s / 2 turn(s) = 1.500s")


def test_threshold_rules() -> None:
    metric = get_metric("token_usage_v1")
    assert metric.check_options(MetricSpec(name="token_usage_v1", threshold=100)) == [
        "token_usage_v1: ADK efficiency metrics are informational and take no threshold (found 100); "
        "gate with latency_s, total_tokens, cost_usd or max_tool_calls"
    ]
    assert get_metric("latency_s").check_options(MetricSpec(name="latency_s", threshold=-1)) == [
        "latency_s: threshold is a maximum and must be ≥ 0, found -1"
    ]
    assert get_metric("cost_usd").check_options(MetricSpec(name="cost_usd", threshold=0.5)) == []
