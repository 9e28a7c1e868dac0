"""The ADK-named metrics (`evalward.metrics.adk`): hand-calculated scores, explanations and diagnostics.

Parity with google-adk itself is checked in `test_adk_differential.py`.
"""

from __future__ import annotations

from typing import Any

import pytest

from evalward.metrics.adk import ResponseMatchScore, ToolTrajectoryAvgScore, ToolTrajectoryOptions, parse_match_type
from evalward.metrics.base import Score, TurnContext
from evalward.metrics.registry import check_specs, options_of
from evalward.model import AgentOutput, EvalCase, Invocation, MetricSpec, ToolCall


def call(name: str, args: dict[str, Any] | None = None) -> ToolCall:
    return ToolCall(name=name, args=args)


def turn(expected: Invocation, actual: AgentOutput, name: str, **options: Any) -> TurnContext:
    return TurnContext(
        case=EvalCase(case_id="c1", turns=[expected]),
        turn=0,
        expected=expected,
        actual=actual,
        spec=MetricSpec(name=name, threshold=1.0, options=options),
    )


def trajectory(expected: list[ToolCall] | None, actual: list[ToolCall], **options: Any) -> Score | None:
    ctx = turn(
        Invocation(query="q", expected_tool_calls=expected),
        AgentOutput(tool_calls=actual),
        "tool_trajectory_avg_score",
        **options,
    )
    return ToolTrajectoryAvgScore().score_turn(ctx)


def test_metric_identity() -> None:
    assert (ToolTrajectoryAvgScore.name, ToolTrajectoryAvgScore.scope) == ("tool_trajectory_avg_score", "turn")
    assert (ResponseMatchScore.name, ResponseMatchScore.scope) == ("response_match_score", "turn")


def test_trajectory_not_applicable_without_expected_calls() -> None:
    assert trajectory(None, [call("a")]) is None


def test_exact_match_explanation_and_details() -> None:
    score = trajectory([call("a", {"x": 1}), call("b")], [call("a", {"x": 1.0}), call("b")])
    assert score is not None
    # hand calculation: same length, a(x=1) == a(x=1.0) and b == b -> 1.0
    assert score.value == 1.0
    assert score.explanation == "EXACT: expected [a(x=1), b] equals actual [a(x=1.0), b] -> 1.0"
    assert score.details == {
        "match_type": "EXACT",
        "ignore_args": False,
        "expected": ["a(x=1)", "b"],
        "actual": ["a(x=1.0)", "b"],
        "first_mismatch": None,
        "missing": [],
        "unexpected": [],
    }


def test_exact_mismatch_reports_first_index_missing_and_unexpected() -> None:
    score = trajectory([call("a"), call("b")], [call("a"), call("x")])
    assert score is not None
    # hand calculation: index 1 differs (b vs x) -> 0.0; b is missing, x unexpected
    assert score.value == 0.0
    assert score.explanation == "EXACT: expected [a, b] differs from actual [a, x] at index 1 -> 0.0"
    assert (score.details["first_mismatch"], score.details["missing"], score.details["unexpected"]) == (1, ["b"], ["x"])


def test_exact_length_mismatch() -> None:
    score = trajectory([call("a")], [call("a"), call("a")])
    assert score is not None
    # hand calculation: 1 expected vs 2 actual -> 0.0; the extra a is unexpected
    assert score.value == 0.0
    assert score.explanation == ("EXACT: expected 1 call [a], actual has 2 [a, a] (first difference at index 1) -> 0.0")
    assert score.details["unexpected"] == ["a"]


def test_exact_both_empty_passes() -> None:
    score = trajectory([], [])
    assert score is not None
    assert score.value == 1.0
    assert score.explanation == "EXACT: expected [] equals actual [] -> 1.0"


def test_in_order_subsequence() -> None:
    score = trajectory([call("a"), call("b")], [call("a"), call("x"), call("b")], match_type="IN_ORDER")
    assert score is not None
    # hand calculation: walk [a, x, b]: a matches expected[0], x skipped, b matches expected[1] -> 1.0
    assert score.value == 1.0
    assert score.explanation == "IN_ORDER: expected [a, b] found in order in actual [a, x, b] -> 1.0"
    assert score.details["unexpected"] == ["x"]


def test_in_order_wrong_order_fails_at_the_first_unmatched_expected_call() -> None:
    score = trajectory([call("a"), call("b")], [call("b"), call("a")], match_type="IN_ORDER")
    assert score is not None
    # hand calculation: walk [b, a]: b != a (expected[0]), a matches -> 1 of 2 matched; expected[1]=b not after it
    assert score.value == 0.0
    assert score.explanation == (
        "IN_ORDER: expected [a, b] not found in order in actual [b, a]:"
        " 1 of 2 matched, expected[1] not found after them -> 0.0"
    )
    assert score.details["first_mismatch"] == 1
    # as multisets both sides hold a and b, so nothing is missing or unexpected
    assert (score.details["missing"], score.details["unexpected"]) == ([], [])


def test_in_order_empty_rules() -> None:
    # expected empty -> 1.0; actual empty with calls expected -> 0.0
    empty_expected = trajectory([], [call("a")], match_type="IN_ORDER")
    empty_actual = trajectory([call("a")], [], match_type="IN_ORDER")
    assert empty_expected is not None and empty_expected.value == 1.0
    assert empty_actual is not None and empty_actual.value == 0.0


def test_any_order_multiset_containment_counts_duplicates() -> None:
    swapped = trajectory([call("a"), call("b")], [call("b"), call("x"), call("a")], match_type="ANY_ORDER")
    assert swapped is not None
    assert swapped.value == 1.0
    assert swapped.explanation == "ANY_ORDER: every call of expected [a, b] found in actual [b, x, a] -> 1.0"

    duplicate = trajectory([call("f"), call("f")], [call("f")], match_type="ANY_ORDER")
    assert duplicate is not None
    # hand calculation: the first f takes the only actual f; the second f finds none -> 0.0
    assert duplicate.value == 0.0
    assert duplicate.explanation == "ANY_ORDER: expected [f, f] not contained in actual [f]: missing [f] -> 0.0"
    assert (duplicate.details["first_mismatch"], duplicate.details["missing"]) == (1, ["f"])


@pytest.mark.parametrize(
    ("expected_args", "actual_args", "equal"),
    [
        ({"x": 1}, {"x": 1.0}, True),
        ({"x": 1}, {"x": True}, True),
        ({"x": 1}, {"x": "1"}, False),
        ({"n": {"p": 1, "q": 2}}, {"n": {"q": 2, "p": 1}}, True),
        ({"l": [1, 2]}, {"l": [2, 1]}, False),
        (None, {}, False),
        (None, None, True),
    ],
)
def test_argument_equality_is_python_equality(
    expected_args: dict[str, Any] | None, actual_args: dict[str, Any] | None, equal: bool
) -> None:
    score = trajectory([call("f", expected_args)], [call("f", actual_args)])
    assert score is not None
    assert score.value == (1.0 if equal else 0.0)


def test_ignore_args_compares_names_only_and_shows_names() -> None:
    score = trajectory([call("f", {"x": 1})], [call("f", {"x": 2})], ignore_args=True)
    assert score is not None
    assert score.value == 1.0
    assert score.explanation == "EXACT: expected [f] equals actual [f] -> 1.0"
    # details keep the full signatures for diagnosis
    assert score.details["actual"] == ["f(x=2)"]


def test_names_are_case_sensitive() -> None:
    score = trajectory([call("Search")], [call("search")], ignore_args=True)
    assert score is not None and score.value == 0.0


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("EXACT", "EXACT"),
        ("in_order", "IN_ORDER"),
        ("in order", "IN_ORDER"),
        (" any-order ", "ANY_ORDER"),
        (0, "EXACT"),
        (1, "IN_ORDER"),
        (2, "ANY_ORDER"),
        (3, None),
        (True, None),
        ("ordered", None),
        (None, None),
    ],
)
def test_parse_match_type_follows_adk_normalisation(value: object, parsed: str | None) -> None:
    assert parse_match_type(value) == parsed


def test_trajectory_option_problems() -> None:
    spec = MetricSpec(name="tool_trajectory_avg_score", options={"match_type": "fuzzy", "ignore_args": "yes", "x": 1})
    assert check_specs([spec]) == [
        "tool_trajectory_avg_score: match_type: expected one of EXACT, IN_ORDER, ANY_ORDER (or 0, 1, 2), found 'fuzzy'",
        "tool_trajectory_avg_score: ignore_args: expected true or false, found 'yes'",
        "tool_trajectory_avg_score: unknown option 'x'; known: match_type, ignore_args",
    ]
    valid = MetricSpec(name="tool_trajectory_avg_score", options={"match_type": 2, "ignore_args": True})
    assert check_specs([valid]) == []
    # ADK's 2 is ANY_ORDER: the metric reads the option as it was validated
    assert options_of(valid) == ToolTrajectoryOptions(match_type="ANY_ORDER", ignore_args=True)


def response_match(response: str | None, reference: str | None) -> Score:
    ctx = turn(
        Invocation(query="q", expected_response=reference), AgentOutput(response=response), "response_match_score"
    )
    score = ResponseMatchScore().score_turn(ctx)
    assert score is not None
    return score


def test_response_match_score_arithmetic() -> None:
    score = response_match("the cats sat on a mat", "a cat sat on the mat today")
    # hand calculation: response tokens [the, cat, sat, on, a, mat] (cats -> cat), reference
    # [a, cat, sat, on, the, mat, today]: overlap 6; P = 6/6 = 1.0; R = 6/7 = 0.857; F = 2·6/13 = 0.923
    assert score.value == 2 * 1.0 * (6 / 7) / (1.0 + 6 / 7)
    assert score.explanation == "overlap=6, P=6/6=1.000, R=6/7=0.857, F=0.923"
    assert score.details["reference_tokens"] == 7


def test_response_match_score_unicode() -> None:
    # hand calculation: "naïve" stays unstemmed, "naive" -> "naiv": overlap {approach} = 1, P = R = 1/2 -> 0.5
    assert response_match("naïve approach", "naive approach").value == 0.5


def test_response_match_score_both_empty_is_zero_as_in_adk() -> None:
    score = response_match(None, None)
    assert score.value == 0.0
    assert score.explanation == "overlap=0, P=0/0=0.000, R=0/0=0.000, F=0.000 (both empty -> 0.0, as ADK)"


def test_response_match_score_takes_no_options() -> None:
    spec = MetricSpec(name="response_match_score", options={"tokenizer": "default"})
    assert check_specs([spec]) == ["response_match_score: unknown option 'tokenizer'; it takes no options"]
