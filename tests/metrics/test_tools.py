"""Reference-free single-tool checks and budgets."""

from __future__ import annotations

from typing import Any

import pytest

from evalward.metrics.base import Score, TurnContext
from evalward.metrics.registry import get_metric
from evalward.model import AgentOutput, EvalCase, Invocation, MetricSpec, ToolCall


def call(name: str, status: str = "ok", **args: Any) -> ToolCall:
    return ToolCall.model_validate({"name": name, "args": args, "status": status})


def run(metric: str, calls: list[ToolCall], **options: Any) -> Score:
    turn = Invocation(query="q")
    spec = MetricSpec(name=metric, threshold=1.0, options=options)
    ctx = TurnContext(
        case=EvalCase(case_id="c", turns=[turn]), turn=0, expected=turn, actual=AgentOutput(tool_calls=calls), spec=spec
    )
    result = get_metric(metric).score_turn(ctx)
    assert result is not None
    return result


CALLS = [
    call("policy_lookup", topic="refund"),
    call("search", q="a"),
    call("refund", order=1, amount=10),
    call("search", q="b"),
    call("refund", status="error", order=2),
    call("notify", status="deferred"),
]


def test_tool_called_any_counts_matching_calls() -> None:
    # search called twice (ok) → 2 ∈ [1, ∞) → 1
    assert run("tool_called", CALLS, tool="search").value == 1.0
    # args contain q=b: one match → 1; with max=0 → 0
    result = run("tool_called", CALLS, tool="search", args={"q": "b"})
    assert (result.value, result.explanation) == (1.0, "search: 1 matching calls, allowed [1, ∞] → 1")
    assert run("tool_called", CALLS, tool="search", min=2).value == 1.0
    assert run("tool_called", CALLS, tool="search", max=1).value == 0.0
    # failed refund(order=2) is not considered; deferred notify does not count
    assert run("tool_called", CALLS, tool="refund", args={"order": 2}).value == 0.0
    assert run("tool_called", CALLS, tool="notify").value == 0.0


def test_tool_called_occurrence_first_last_index() -> None:
    assert run("tool_called", CALLS, tool="search", args={"q": "a"}, occurrence="first").value == 1.0
    assert run("tool_called", CALLS, tool="search", args={"q": "a"}, occurrence="last").value == 0.0
    result = run("tool_called", CALLS, tool="search", args={"q": "b"}, occurrence=1)
    assert result.value == 1.0
    missing = run("tool_called", CALLS, tool="search", occurrence=5)
    assert (missing.value, missing.explanation) == (0.0, "search: no call at occurrence 5 (2 calls) → 0")
    diff = run("tool_called", CALLS, tool="search", args={"q": "z"}, occurrence="first")
    assert diff.details["arg_diffs"] == [{"path": "$.q", "reason": "not equal", "expected": "z", "actual": "a"}]


def test_tool_called_args_mode_exact_and_matchers() -> None:
    assert run("tool_called", CALLS, tool="refund", args={"order": 1}, args_mode="exact").value == 0.0
    assert (
        run("tool_called", CALLS, tool="refund", args={"order": 1, "amount": {"$approx": 10}}, args_mode="exact").value
        == 1.0
    )


def test_tool_not_called() -> None:
    assert run("tool_not_called", CALLS, tool="delete_user").value == 1.0
    # refund was called (ok and failed attempt): 2 offending calls
    result = run("tool_not_called", CALLS, tools=["refund", "drop_table"])
    assert result.value == 0.0
    assert result.details["offending"] == ["refund(amount=10, order=1)", "refund(order=2)"]
    # deferred calls never count
    assert run("tool_not_called", CALLS, tool="notify").value == 1.0


def test_tool_call_count_counts_failed_calls_but_not_deferred() -> None:
    # refund: 1 ok + 1 error = 2
    assert run("tool_call_count", CALLS, tool="refund", min=2, max=2).value == 1.0
    assert run("tool_call_count", CALLS, tool="refund", max=1).explanation == "refund: 2 call(s), allowed [0, 1] → 0"
    assert run("tool_call_count", CALLS, tool="notify", max=0).value == 1.0


def test_tool_order() -> None:
    assert run("tool_order", CALLS, before="policy_lookup", after="refund").value == 1.0
    reverse = run("tool_order", CALLS, before="refund", after="policy_lookup")
    assert (reverse.value, reverse.explanation) == (0.0, "first refund at 2, first policy_lookup at 0 → 0")
    # after never called → vacuously ordered
    assert run("tool_order", CALLS, before="x", after="escalate").value == 1.0
    # after called without before → 0
    assert run("tool_order", CALLS, before="verify", after="refund").value == 0.0


def test_max_tool_calls_counts_everything_but_deferred() -> None:
    # 5 counted calls (4 ok + 1 error)
    assert run("max_tool_calls", CALLS, max=5).value == 1.0
    assert run("max_tool_calls", CALLS, max=4).value == 0.0


@pytest.mark.parametrize(
    ("metric", "options", "fragment"),
    [
        ("tool_called", {}, "tool_called: option tool: Field required"),
        ("tool_called", {"tool": "a", "min": 3, "max": 1}, "tool_called: max=1 is below min=3"),
        ("tool_called", {"tool": "a", "args": {"q": {"$regex": 1}}}, "tool_called: option args $.q: matcher $regex"),
        ("tool_not_called", {}, "give `tool` or `tools`"),
        ("tool_call_count", {"tool": "a"}, "give `min` and/or `max`"),
        ("tool_order", {"before": "a"}, "tool_order: option after: Field required"),
        ("max_tool_calls", {"max": -1}, "max_tool_calls: option max:"),
    ],
)
def test_bad_options_are_reported(metric: str, options: dict[str, Any], fragment: str) -> None:
    problems = get_metric(metric).check_options(MetricSpec(name=metric, options=options))
    assert any(fragment in p for p in problems), problems
