"""Cost, latency and token metrics, and ADK's informational efficiency metrics."""

from __future__ import annotations

from evalward.metrics.base import CaseContext, Score, TurnContext
from evalward.metrics.registry import check_specs, get_metric
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


def test_adk_efficiency_metrics_per_turn() -> None:
    output = AgentOutput(
        tool_calls=[ToolCall(name="a"), ToolCall(name="b", status="error")],
        usage=Usage(input_tokens=10, output_tokens=5, model_requests=3),
    )
    calls = turn_score("tool_call_count_v1", output)
    requests = turn_score("inference_call_count_v1", output)
    tokens = turn_score("token_usage_v1", output)
    assert calls is not None and requests is not None and tokens is not None
    # every call counts, failed ones too (ADK counts every function_call part)
    assert (calls.value, requests.value, tokens.value) == (2.0, 3.0, 15.0)
    assert tokens.explanation == "10 in + 5 out = 15 token(s)"
    assert tokens.details == {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
    # not reported → n/a (None), never 0
    assert turn_score("inference_call_count_v1", AgentOutput()) is None
    assert turn_score("token_usage_v1", AgentOutput(usage=Usage(model_requests=1))) is None
    for name in ("tool_call_count_v1", "inference_call_count_v1", "token_usage_v1", "invocation_duration_v1"):
        metric = get_metric(name)
        assert (metric.scope, metric.higher_is_better) == ("turn", False)


def test_adk_efficiency_case_values_follow_adk_averaging() -> None:
    from evalward.metrics.scoring import score_case
    from evalward.metrics.usage import ADK_EFFICIENCY_METRICS

    outputs = [
        AgentOutput(tool_calls=[ToolCall(name="a")], usage=Usage(input_tokens=10, output_tokens=5, model_requests=2)),
        AgentOutput(tool_calls=[ToolCall(name="a"), ToolCall(name="b"), ToolCall(name="c")]),
    ]
    specs = [MetricSpec(name=name) for name in ADK_EFFICIENCY_METRICS]
    scored = score_case(CASE, specs, outputs, turn_latencies_s=[1.25, None])
    calls, requests, tokens, duration = scored.metric_results
    # tool calls: (1 + 3)/2 = 2
    assert (calls.score, calls.status) == (2.0, "informational")
    assert calls.explanation == "mean over 2 applicable turn(s) of 2: (1.000 + 3.000)/2 = 2.000"
    # model requests: only turn 0 reported → mean over it = 2 (the n/a turn is left out)
    assert requests.score == 2.0
    # tokens: ADK averages over every turn once any reported: (15 + 0)/2 = 7.5
    assert tokens.score == 7.5
    assert tokens.explanation == "mean over all 2 turn(s): (15.000 + 0 (n/a))/2 = 7.500"
    # duration: only turn 0 was timed → 1.25
    assert duration.score == 1.25
    # informational: they never decide the case
    assert scored.status == "failed"
    assert scored.explanation == "no gating metric applied"
    [turn_requests] = [r for r in scored.turn_results[1] if r.name == "inference_call_count_v1"]
    assert turn_requests.status == "not_applicable"
    assert turn_requests.explanation == (
        "n/a: the agent reported no model requests (usage.model_requests); never counted as 0"
    )


def test_adk_efficiency_is_appended_once() -> None:
    from evalward.metrics.usage import with_adk_efficiency

    specs = [MetricSpec(name="tool_trajectory_avg_score", threshold=1.0), MetricSpec(name="token_usage_v1")]
    assert [s.name for s in with_adk_efficiency(specs)] == [
        "tool_trajectory_avg_score",
        "token_usage_v1",
        "tool_call_count_v1",
        "inference_call_count_v1",
        "invocation_duration_v1",
    ]
    assert all(s.threshold is None for s in with_adk_efficiency([])[:4])


def test_threshold_rules() -> None:
    assert check_specs([MetricSpec(name="token_usage_v1", threshold=100)]) == [
        "token_usage_v1 does not support a threshold (found 100): it reports a value and never passes or fails, "
        "as in ADK 2.13. Name it without a threshold, or gate on latency_s, total_tokens, cost_usd or max_tool_calls"
    ]
    assert check_specs([MetricSpec(name="latency_s", threshold=-1)]) == [
        "latency_s: threshold is a maximum and must be ≥ 0, found -1"
    ]
    assert check_specs([MetricSpec(name="cost_usd", threshold=0.5)]) == []
