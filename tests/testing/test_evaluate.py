"""`evalward.testing.evaluate` in-process: agents of every form, both pass rules, errors, and run merging."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from evalward.model import Criteria, EvalCase, EvalSet, Invocation, MetricSpec, ToolCall
from evalward.testing import _session, evaluate, evaluate_async
from evalward.testing._session import merged_run


@pytest.fixture(autouse=True)
def fresh_session() -> Iterator[None]:
    _session.clear()
    yield
    _session.clear()


def weather_set(eval_set_id: str = "weather") -> EvalSet:
    """Two one-turn cases expecting `get_weather(city=…)`, scored by trajectory EXACT >= 1.0."""

    def case(case_id: str, city: str) -> EvalCase:
        expected = [ToolCall(name="get_weather", args={"city": city})]
        return EvalCase(case_id=case_id, turns=[Invocation(query=f"weather in {city}", expected_tool_calls=expected)])

    return EvalSet(
        eval_set_id=eval_set_id,
        format="native",
        cases=[case("paris", "Paris"), case("rome", "Rome")],
        criteria=Criteria(metrics=[MetricSpec(name="tool_trajectory_avg_score", threshold=1.0)], origin="native"),
    )


def right_weather(request: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": [{"name": "get_weather", "args": {"city": request["query"].rsplit(" ", 1)[-1]}}]}


def no_calls(request: dict[str, Any]) -> str:
    return "none"


calls = {"n": 0}


def flaky_weather(request: dict[str, Any]) -> dict[str, Any]:
    """Right for Paris; for Rome right on the first call of each pair, wrong on the second."""
    city = request["query"].rsplit(" ", 1)[-1]
    if city == "Rome":
        calls["n"] += 1
        if calls["n"] % 2 == 0:
            return {"tool_calls": [{"name": "get_weather", "args": {"city": "Milan"}}]}
    return {"tool_calls": [{"name": "get_weather", "args": {"city": city}}]}


def test_a_callable_agent_passing_every_case_returns_the_run() -> None:
    run = evaluate(right_weather, weather_set(), num_runs=1)
    assert run.passed
    assert [(c.case_id, c.metrics) for c in run.cases] == [
        ("paris", {"tool_trajectory_avg_score": 1.0}),
        ("rome", {"tool_trajectory_avg_score": 1.0}),
    ]
    assert _session.runs() == [run]


def test_mean_over_runs_fails_a_case_whose_mean_misses_the_threshold() -> None:
    calls["n"] = 0
    with pytest.raises(AssertionError) as caught:
        evaluate(flaky_weather, weather_set(), num_runs=2)
    # rome: run 1 → 1.0, run 2 → 0.0; mean = (1.0 + 0.0) / 2 = 0.5 < 1.0.
    lines = str(caught.value).splitlines()
    assert lines[0].startswith("evalward: 1 of 2 case(s) failed (agent ")
    assert lines[0].endswith(", 2 run(s) per case, mean over runs):")
    assert lines[1:3] == [
        "- case 'rome' (eval set 'weather'):",
        "    tool_trajectory_avg_score failed: expected >= 1, got 0.5 = mean of 2 runs",
    ]


def test_per_run_names_the_failing_run() -> None:
    calls["n"] = 0
    with pytest.raises(AssertionError) as caught:
        evaluate(flaky_weather, weather_set(), num_runs=2, pass_rule="per_run", concurrency=1)
    assert "    tool_trajectory_avg_score failed in run 2 of 2: expected >= 1, got 0" in str(caught.value)


async def test_the_async_form_reports_agent_errors_per_run() -> None:
    def broken(request: dict[str, Any]) -> dict[str, Any]:
        raise ValueError("no weather service")

    with pytest.raises(AssertionError) as caught:
        await evaluate_async(broken, weather_set(), num_runs=1)
    text = str(caught.value)
    assert "- case 'paris' (eval set 'weather'):" in text
    assert "    run 1: agent_error: ValueError: no weather service (at " in text
    assert text.count("run 1: agent_error") == 2


def test_raise_on_failure_false_returns_the_failing_run() -> None:
    run = evaluate(no_calls, weather_set(), num_runs=1, raise_on_failure=False)
    assert not run.passed


def test_metric_overrides_apply_to_eval_set_objects() -> None:
    run = evaluate(
        no_calls,
        weather_set(),
        num_runs=1,
        metrics=[MetricSpec(name="max_tool_calls", threshold=1.0, options={"max": 0})],
        metrics_mode="replace",
        raise_on_failure=False,
    )
    assert {m.name for c in run.cases for m in c.metric_results} == {"max_tool_calls"}
    assert run.passed  # no calls made, at most 0 allowed


def test_a_bad_agent_argument_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="agent must be a target string, an Agent or a callable; found int"):
        evaluate(3, weather_set())


def test_runs_of_several_calls_merge_into_one_run_with_recomputed_verdict() -> None:
    good = evaluate(right_weather, weather_set("a"), num_runs=1)
    bad = evaluate(no_calls, weather_set("b"), num_runs=1, raise_on_failure=False)
    merged = merged_run([good, bad])
    assert merged.run_id not in (good.run_id, bad.run_id)
    assert [(c.eval_set_id, c.case_id, c.status) for c in merged.cases] == [
        ("a", "paris", "passed"),
        ("a", "rome", "passed"),
        ("b", "paris", "failed"),
        ("b", "rome", "failed"),
    ]
    assert [i.eval_set_id for i in merged.eval_sets] == ["a", "b"]
    assert merged.agent is not None and merged.agent.kind == "mixed"
    assert merged.passed is False
    # Mean trajectory score over the 4 cases: (1 + 1 + 0 + 0) / 4 = 0.5.
    assert merged.summary["tool_trajectory_avg_score"].mean == 0.5
    again = merged_run([good, good])
    assert "was evaluated more than once; the last result is kept" in again.warnings[0]
    assert len(again.cases) == 2
