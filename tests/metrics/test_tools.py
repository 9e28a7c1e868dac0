"""Reference-free single-tool checks and budgets."""

from __future__ import annotations

from typing import Any

import pytest

from evalward.metrics.base import Score, TurnContext
from evalward.metrics.registry import check_specs, get_metric
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
    problems = check_specs([MetricSpec(name=metric, options=options)])
    assert any(fragment in p for p in problems), problems


# --- allowed_tools, step_ratio, redundant_calls, error_calls ----------------------------------------------


def run_expected(metric: str, calls: list[ToolCall], expected: list[ToolCall] | None, **options: Any) -> Score | None:
    turn = Invocation(query="q", expected_tool_calls=expected)
    spec = MetricSpec(name=metric, options=options)
    ctx = TurnContext(
        case=EvalCase(case_id="c", turns=[turn]), turn=0, expected=turn, actual=AgentOutput(tool_calls=calls), spec=spec
    )
    return get_metric(metric).score_turn(ctx)


def test_allowed_tools_list_ignores_multiplicity() -> None:
    # every call's name is listed; search twice is fine → 1
    ok = run("allowed_tools", [call("search", q="a"), call("search", q="b"), call("book")], tools=["search", "book"])
    assert ok.value == 1.0
    assert ok.explanation == "allowed search, book: 3 call(s), 0 not allowed → 1"
    # a failed attempt at an unlisted tool is a violation; a deferred one is not counted
    bad = run(
        "allowed_tools",
        [call("search", q="a"), call("delete_user", status="error", id=7), call("shell", status="deferred")],
        tools=["search"],
    )
    assert bad.value == 0.0
    assert bad.explanation == "allowed search: 2 call(s), 1 not allowed (delete_user(id=7)) → 0"
    assert bad.details["offending"] == [{"index": 1, "call": "delete_user(id=7)"}]


def test_allowed_tools_from_the_expected_calls() -> None:
    expected = [call("search", q="a"), call("book", id=1)]
    # multiplicity ignored: search(q=a) twice is allowed by the one expected search(q=a)
    repeated = run_expected("allowed_tools", [call("search", q="a"), call("search", q="a")], expected)
    assert repeated is not None and repeated.value == 1.0
    # other args are not allowed under exact args; names only allows them
    other = run_expected("allowed_tools", [call("search", q="b")], expected)
    assert other is not None and other.value == 0.0
    assert other.explanation == (
        'allowed = expected calls [search(q="a"), book(id=1)] (args_mode exact): 1 call(s), 1 not allowed '
        '(search(q="b")) → 0'
    )
    names_only = run_expected("allowed_tools", [call("search", q="b")], expected, args_mode="ignore")
    assert names_only is not None and names_only.value == 1.0
    # no expectation and no list: nothing to check against
    assert run_expected("allowed_tools", [call("search")], None) is None
    # [] expects no calls: any call is outside the allowlist
    none_allowed = run_expected("allowed_tools", [call("search")], [])
    assert none_allowed is not None and none_allowed.value == 0.0


def test_step_ratio_counts_failed_but_not_deferred_calls() -> None:
    actual = [call("a"), call("b", status="error"), call("c"), call("d", status="deferred")]
    # hand calculation: n = 3 (a, b, c), m = 2 → 3/2 = 1.5
    result = run_expected("step_ratio", actual, [call("a"), call("c")])
    assert result is not None
    assert (result.value, result.explanation) == (1.5, "step_ratio=3/2=1.500")
    # n = m = 0 → 1.0; m = 0 < n → not applicable (no finite ratio)
    empty = run_expected("step_ratio", [], [])
    assert empty is not None and empty.value == 1.0
    assert run_expected("step_ratio", [call("a")], []) is None
    assert run_expected("step_ratio", [call("a")], None) is None


def test_step_ratio_over_steps_and_threshold_is_a_maximum() -> None:
    from evalward.metrics.scoring import score_case

    turn = Invocation(query="q", expected_trajectory=["a", "b", "c", "d"])
    case = EvalCase(case_id="c", turns=[turn])
    output = AgentOutput(trajectory=["a", "d"])
    # hand calculation: 2 steps / 4 expected = 0.5 ≤ 1.0 → passed
    scored = score_case(case, [MetricSpec(name="step_ratio", threshold=1.0)], [output])
    [result] = scored.metric_results
    assert (result.score, result.status, result.higher_is_better) == (0.5, "passed", False)
    assert result.explanation == "step_ratio=2/4=0.500; 0.500 <= 1"
    long = AgentOutput(trajectory=["a", "b", "b", "c", "d", "d"])
    [too_long] = score_case(case, [MetricSpec(name="step_ratio", threshold=1.25)], [long]).metric_results
    # 6/4 = 1.5 > 1.25 → failed
    assert (too_long.score, too_long.status) == (1.5, "failed")
    assert check_specs([MetricSpec(name="step_ratio", threshold=-1)]) == [
        "step_ratio: threshold is a maximum and must be ≥ 0, found -1"
    ]


def test_redundant_calls_canonical_args_and_retries() -> None:
    calls = [
        ToolCall(name="search", args={"q": "a", "n": 1}),
        ToolCall(name="search", args={"n": 1.0, "q": "a"}),  # same after key order and 1 == 1.0
        ToolCall(name="flag", args={"x": True}),
        ToolCall(name="flag", args={"x": 1}),  # true != 1: not a repeat
        ToolCall(name="get", args={"id": 1}, status="error"),
        ToolCall(name="get", args={"id": 1}),  # a retry after an error
        ToolCall(name="get", args={"id": "1"}),  # "1" != 1
        ToolCall(name="lookup", args={"filter": '{"a": 1}'}),
        ToolCall(name="lookup", args={"filter": {"a": 1}}),  # the JSON string is parsed first
        ToolCall(name="ping"),  # args not recorded: not compared
        ToolCall(name="ping"),
    ]
    result = run("redundant_calls", calls)
    # hand calculation: #1 repeats #0, #8 repeats #7 → 2
    assert result.value == 2.0
    assert result.explanation == (
        '2 of 11 call(s) repeat an earlier call (#1 search(n=1.0, q="a") = #0, #8 lookup(filter={"a": 1}) = #7)'
    )
    assert result.details["notes"] == ["2 call(s) without recorded args were not compared"]
    # counting retries too: #5 repeats the failed #4 → 3
    assert run("redundant_calls", calls, count_retries=True).value == 3.0


def test_error_calls_and_sums_over_turns() -> None:
    from evalward.metrics.scoring import score_case

    first = AgentOutput(
        tool_calls=[
            ToolCall(name="refund", args={"order": 2}, status="error", result="order 2 not found"),
            ToolCall(name="refund", args={"order": 3}),
            ToolCall(name="notify", status="error", result={"code": 503}),
        ]
    )
    second = AgentOutput(tool_calls=[ToolCall(name="refund", args={"order": 3}, status="error", result="timeout")])
    one = run("error_calls", first.tool_calls)
    assert (one.value, one.explanation) == (2.0, "2 of 3 call(s) failed (refund(order=2), notify)")
    assert one.details["failed"] == [
        {"index": 0, "call": "refund(order=2)", "error": "order 2 not found"},
        {"index": 2, "call": "notify", "error": '{"code": 503}'},
    ]
    case = EvalCase(case_id="c", turns=[Invocation(query="a"), Invocation(query="b")])
    scored = score_case(case, [MetricSpec(name="error_calls", threshold=2)], [first, second])
    [result] = scored.metric_results
    # hand calculation: 2 + 1 = 3 failed calls in the case > maximum 2 → failed
    assert (result.score, result.status) == (3.0, "failed")
    assert result.explanation == "sum over 2 applicable turn(s) of 2: 2.000 + 1.000 = 3.000; 3.000 not <= 2"
    assert scored.status == "failed"
