"""Per-case scoring: turn means, statuses, thresholds, metric exceptions, no-gating-metric rule."""

from __future__ import annotations

from typing import ClassVar, Literal

import pytest

from evalward.metrics import registry
from evalward.metrics.base import Metric, Score, TurnContext
from evalward.metrics.scoring import NO_GATING_METRIC, metric_status, score_case
from evalward.model import AgentOutput, EvalCase, Invocation, MetricSpec, ToolCall, Usage


def call(name: str) -> ToolCall:
    return ToolCall(name=name, args={})


CASE = EvalCase(
    case_id="c1",
    turns=[
        Invocation(query="one", expected_tool_calls=[call("a")]),
        Invocation(query="two", expected_tool_calls=[call("b"), call("c")]),
        Invocation(query="three"),  # no expectation: trajectory metrics do not apply
    ],
    expected_state={"done": True},
)
OUTPUTS = [
    AgentOutput(tool_calls=[call("a")]),
    AgentOutput(tool_calls=[call("b")]),
    AgentOutput(tool_calls=[call("x")]),
]


def test_turn_metric_case_score_is_the_mean_over_applicable_turns() -> None:
    scored = score_case(CASE, [MetricSpec(name="trajectory_recall", threshold=0.7)], OUTPUTS)
    [result] = scored.metric_results
    # turn 0: R = 1/1; turn 1: R = 1/2; turn 2: not applicable → mean = (1 + 0.5)/2 = 0.75 ≥ 0.7
    assert result.score == 0.75
    assert result.status == "passed"
    assert result.explanation == "mean over 2 applicable turn(s) of 3: (1.000 + 0.500)/2 = 0.750; 0.750 >= 0.7"
    assert result.details == {"turn_scores": {"0": 1.0, "1": 0.5}, "turns_applicable": 2}
    assert [[r.status for r in turn] for turn in scored.turn_results] == [["passed"], ["failed"], ["not_applicable"]]
    assert scored.status == "passed"


def test_failed_metric_fails_the_case() -> None:
    scored = score_case(CASE, [MetricSpec(name="trajectory_recall", threshold=0.8)], OUTPUTS)
    # 0.75 < 0.8
    assert scored.metric_results[0].status == "failed"
    assert (scored.status, scored.error, scored.explanation) == ("failed", None, "failed: trajectory_recall")


def test_lower_is_better_thresholds_and_informational() -> None:
    specs = [
        MetricSpec(name="latency_s", threshold=2.0),
        MetricSpec(name="total_tokens", threshold=100),
        MetricSpec(name="cost_usd"),
    ]
    scored = score_case(
        CASE, specs, OUTPUTS, latency_s=1.5, usage=Usage(input_tokens=90, output_tokens=20, cost_usd=0.1)
    )
    # 1.5 ≤ 2 passes; 110 > 100 fails; cost has no threshold → informational
    assert [(r.name, r.status) for r in scored.metric_results] == [
        ("latency_s", "passed"),
        ("total_tokens", "failed"),
        ("cost_usd", "informational"),
    ]
    assert scored.metric_results[1].explanation == "tokens 90 in + 20 out = 110; 110.000 not <= 100"
    assert scored.status == "failed"


def test_metric_status_rule() -> None:
    assert metric_status(0.5, None, True) == "informational"
    assert metric_status(0.5, 0.5, True) == "passed"  # inclusive, as ADK
    assert metric_status(0.49, 0.5, True) == "failed"
    assert metric_status(3.0, 3.0, False) == "passed"
    assert metric_status(3.1, 3.0, False) == "failed"


def test_not_applicable_everywhere_is_never_a_silent_pass() -> None:
    case = EvalCase(case_id="c2", turns=[Invocation(query="q")])
    scored = score_case(case, [MetricSpec(name="trajectory_f1", threshold=1.0)], [AgentOutput()])
    [result] = scored.metric_results
    assert (result.status, result.score) == ("not_applicable", None)
    assert (scored.status, scored.explanation) == ("failed", NO_GATING_METRIC)


def test_informational_only_case_fails_with_explanation() -> None:
    scored = score_case(CASE, [MetricSpec(name="trajectory_f1")], OUTPUTS)
    assert scored.metric_results[0].status == "informational"
    assert (scored.status, scored.explanation) == ("failed", NO_GATING_METRIC)


class _Exploding(Metric):
    """Raises on the second turn (test double)."""

    name = "exploding"
    scope: ClassVar[Literal["turn", "case"]] = "turn"

    def score_turn(self, ctx: TurnContext) -> Score | None:
        if ctx.turn == 1:
            raise ZeroDivisionError("division by zero")
        return Score(1.0, "ok")


def test_metric_exception_becomes_a_case_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry._REGISTRY, "exploding", _Exploding)
    specs = [MetricSpec(name="exploding", threshold=1.0), MetricSpec(name="trajectory_recall", threshold=0.5)]
    scored = score_case(CASE, specs, OUTPUTS)
    exploding, recall = scored.metric_results
    assert (exploding.status, exploding.score) == ("error", None)
    assert exploding.explanation == "metric raised on turn 1: ZeroDivisionError: division by zero"
    assert exploding.details == {"errored_turns": [1]}
    # the other metric is still scored
    assert recall.status == "passed"
    # turn 1: exploding errored; recall = 1/2 ≥ 0.5
    assert [r.status for r in scored.turn_results[1]] == ["error", "passed"]
    assert scored.status == "error"
    assert scored.error is not None
    assert (scored.error.kind, scored.error.turn) == ("metric_error", 1)
    assert scored.error.message == "exploding: metric raised on turn 1: ZeroDivisionError: division by zero"


def test_malformed_expectation_is_a_metric_error_not_a_zero() -> None:
    case = EvalCase(
        case_id="c3", turns=[Invocation(query="q", expected_tool_calls=[ToolCall(name="f", args={"q": {"$regex": 1}})])]
    )
    scored = score_case(case, [MetricSpec(name="trajectory_exact", threshold=1.0)], [AgentOutput()])
    assert scored.status == "error"
    assert "matcher $regex needs a string" in scored.metric_results[0].explanation


def test_unknown_metric_at_scoring_time_is_an_error() -> None:
    scored = score_case(CASE, [MetricSpec(name="nope", threshold=1.0)], OUTPUTS)
    assert scored.status == "error"
    assert scored.metric_results[0].explanation.startswith("metric raised: KeyError:")


def test_case_metrics_get_state_and_the_turns_that_exist() -> None:
    specs = [MetricSpec(name="state_exact", threshold=1.0), MetricSpec(name="invocation_duration_v1")]
    # agent failed after the first turn: only one output is scored
    scored = score_case(
        CASE, specs, OUTPUTS[:1], final_state={"done": True}, latency_s=4.0, turn_latencies_s=[3.5, 0.5]
    )
    assert len(scored.turn_results) == 1
    state, duration = scored.metric_results
    assert state.status == "passed"
    # the one answered turn took 3.5 s
    assert duration.score == 3.5
    assert scored.status == "passed"


def test_single_turn_case_keeps_the_turn_explanation_and_details() -> None:
    case = EvalCase(case_id="c4", turns=[CASE.turns[1]])
    scored = score_case(case, [MetricSpec(name="trajectory_f1", threshold=0.5)], [OUTPUTS[1]])
    [result] = scored.metric_results
    # k* = 1, P = 1/1, R = 1/2 → F1 = 2·1·0.5/1.5 = 0.667
    assert result.explanation == "k*=1, P=1/1=1.000, R=1/2=0.500, F1=0.667; 0.667 >= 0.5"
    assert result.details["missing"] == [{"index": 1, "item": "c()"}]


def test_cases_sharing_criteria_share_their_work_out_but_never_a_stale_one() -> None:
    from evalward.metrics.scoring import criteria_of
    from evalward.metrics.spec_lists import SpecListCache

    specs = [MetricSpec(name="trajectory_recall", threshold=0.7), MetricSpec(name="no_such_metric")]
    first, again = criteria_of(specs), criteria_of(list(specs))  # a new list of the same specs: worked out once
    assert first is again
    assert [c.problem is None for c in first] == [True, False]
    # Equal specs that are other objects get their own entry, so no identity is ever read for another spec.
    assert criteria_of([s.model_copy() for s in specs]) is not first

    made: list[int] = []
    cache: SpecListCache[int] = SpecListCache(lambda s: made.append(len(s)) or len(made), size=2)
    lists = [[MetricSpec(name=f"m{i}")] for i in range(3)]
    assert [cache(x) for x in lists] == [1, 2, 3]
    assert cache(lists[2]) == 3 and cache(lists[0]) == 4  # the oldest went when the third came
    assert made == [1, 1, 1, 1]


def test_a_not_applicable_result_is_made_once_and_equals_a_fresh_one() -> None:
    spec = MetricSpec(name="trajectory_recall", threshold=0.7)
    no_expectation = EvalCase(case_id="c2", turns=[Invocation(query="q")])
    one = score_case(no_expectation, [spec], [AgentOutput()])
    two = score_case(no_expectation, [spec], [AgentOutput()])
    [result] = one.metric_results
    assert result.status == "not_applicable" and result.score is None
    assert result is two.metric_results[0]  # shared: results are never changed in place
    assert one.turn_results[0][0] is result  # one turn: the case's result is the turn's
    assert result.explanation == registry.get_metric("trajectory_recall").not_applicable


def test_every_turn_metric_sees_the_context_the_public_constructor_makes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scoring loop builds each metric's turn context from fields made once per turn; a metric must see what
    `TurnContext(...)` gives, every field set, and contexts of one turn must not share a criterion."""
    seen: list[TurnContext[object]] = []

    class Recorder(Metric):
        name = "test_context_recorder"
        scope: ClassVar[Literal["turn", "case"]] = "turn"

        def score_turn(self, ctx: TurnContext[object]) -> Score | None:
            seen.append(ctx)
            return Score(1.0, "seen")

    monkeypatch.setitem(registry._REGISTRY, Recorder.name, Recorder)
    specs = [MetricSpec(name="test_context_recorder"), MetricSpec(name="test_context_recorder", threshold=0.5)]
    score_case(CASE, specs, OUTPUTS, turn_latencies_s=[0.25, 0.5])
    assert len(seen) == 2 * len(OUTPUTS)
    for position, ctx in enumerate(seen):
        spec, turn = specs[position // len(OUTPUTS)], position % len(OUTPUTS)
        expected = TurnContext(
            case=CASE,
            turn=turn,
            expected=CASE.turns[turn],
            actual=OUTPUTS[turn],
            spec=spec,
            latency_s=[0.25, 0.5, None][turn],
            options=None,
        )
        assert ctx == expected and ctx.spec is spec
        assert set(vars(ctx)) == set(vars(expected))
    with pytest.raises(AttributeError):
        seen[0].turn = 5  # type: ignore[misc]  # still frozen
