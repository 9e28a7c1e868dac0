"""Native trajectory metrics: docs/metrics.md §2 worked example, empty rules, duplicates, greedy counter-example."""

from __future__ import annotations

from typing import Any

import pytest

from evalward.metrics.base import Score, TurnContext
from evalward.metrics.registry import check_specs, get_metric
from evalward.model import AgentOutput, EvalCase, Invocation, MetricSpec, ToolCall


def call(name: str, agent: str | None = None, status: str = "ok", step: int | None = None, **args: Any) -> ToolCall:
    return ToolCall.model_validate({"name": name, "args": args, "agent": agent, "status": status, "step": step})


def score(
    metric: str,
    actual: list[ToolCall] | None = None,
    expected: list[ToolCall] | None = None,
    *,
    steps: list[str] | None = None,
    expected_steps: list[str] | None = None,
    **options: Any,
) -> Score | None:
    turn = Invocation(query="q", expected_tool_calls=expected, expected_trajectory=expected_steps)
    output = AgentOutput(tool_calls=actual or [], trajectory=steps)
    spec = MetricSpec(name=metric, threshold=1.0, options=options)
    case = EvalCase(case_id="c", turns=[turn])
    return get_metric(metric).score_turn(TurnContext(case=case, turn=0, expected=turn, actual=output, spec=spec))


def value(metric: str, actual: list[ToolCall], expected: list[ToolCall], **options: Any) -> float:
    result = score(metric, actual, expected, **options)
    assert result is not None
    return result.value


# docs/metrics.md §2 worked example
E_WORKED = [call("search", q="a"), call("search", q="a"), call("book", id=1)]
A_WORKED = [call("search", q="a"), call("book", id=1), call("book", id=1), call("notify")]


def test_worked_example_precision_recall_f1() -> None:
    # hand calculation: one search pair, one book pair → k* = 2, n = 4, m = 3
    # P = 2/4 = 0.500, R = 2/3 = 0.667, F1 = 2·0.5·0.667/1.167 = 0.571
    f1 = score("trajectory_f1", A_WORKED, E_WORKED)
    assert f1 is not None
    assert f1.value == pytest.approx(4 / 7)
    assert f1.explanation == "k*=2, P=2/4=0.500, R=2/3=0.667, F1=0.571"
    assert value("trajectory_precision", A_WORKED, E_WORKED) == 0.5
    assert value("trajectory_recall", A_WORKED, E_WORKED) == pytest.approx(2 / 3)


def test_worked_example_boolean_modes_and_ordered_f1() -> None:
    # hand calculation: superset needs k* = m (2 < 3), subset needs k* = n (2 < 4), in_order fails (only one search)
    assert value("trajectory_superset", A_WORKED, E_WORKED) == 0.0
    assert value("trajectory_any_order", A_WORKED, E_WORKED) == 0.0
    assert value("trajectory_subset", A_WORKED, E_WORKED) == 0.0
    assert value("trajectory_in_order", A_WORKED, E_WORKED) == 0.0
    assert value("trajectory_same_multiset", A_WORKED, E_WORKED) == 0.0
    assert value("trajectory_exact", A_WORKED, E_WORKED) == 0.0
    # LCS = 2 (search, book) → same P/R as above → 0.571
    ordered = score("trajectory_ordered_f1", A_WORKED, E_WORKED)
    assert ordered is not None
    assert ordered.value == pytest.approx(4 / 7)
    assert ordered.explanation.startswith("LCS=2, P=2/4=0.500")


def test_worked_example_diagnostics() -> None:
    result = score("trajectory_f1", A_WORKED, E_WORKED)
    assert result is not None
    details = result.details
    assert details["matched"] == [
        {"actual": 0, "expected": 0, "item": 'search(q="a")'},
        {"actual": 1, "expected": 2, "item": "book(id=1)"},
    ]
    assert details["missing"] == [{"index": 1, "item": 'search(q="a")'}]
    assert details["unexpected"] == [{"index": 2, "item": "book(id=1)"}, {"index": 3, "item": "notify()"}]
    assert details["first_divergence"] == {"index": 1, "expected": 'search(q="a")', "actual": "book(id=1)"}


def test_greedy_counter_example_under_contains() -> None:
    # docs/metrics.md §1: E1 = f(a=1), E2 = f(a=1,b=2); A1 = f(a=1,b=2), A2 = f(a=1,c=3), args mode contains.
    # Greedy: E1→A1 leaves E2 unmatched. Maximum matching: E1→A2, E2→A1 → k* = 2.
    expected = [call("f", a=1), call("f", a=1, b=2)]
    actual = [call("f", a=1, b=2), call("f", a=1, c=3)]
    assert value("trajectory_superset", actual, expected, args_mode="contains") == 1.0
    assert value("trajectory_same_multiset", actual, expected, args_mode="contains") == 1.0
    assert value("trajectory_recall", actual, expected, args_mode="contains") == 1.0
    result = score("trajectory_superset", actual, expected, args_mode="contains")
    assert result is not None
    assert result.details["matched"] == [
        {"actual": 0, "expected": 1, "item": "f(a=1, b=2)"},
        {"actual": 1, "expected": 0, "item": "f(a=1)"},
    ]
    # Under exact args only A1 = E2 pairs: k* = 1 → R = 1/2
    assert value("trajectory_recall", actual, expected) == 0.5


@pytest.mark.parametrize(
    ("metric", "both_empty", "only_expected", "only_actual"),
    [
        # docs/metrics.md §2 empty rules: P/R/F1 = 1 when both empty, 0 when exactly one side is empty
        ("trajectory_precision", 1.0, 0.0, 0.0),
        ("trajectory_recall", 1.0, 0.0, 0.0),
        ("trajectory_f1", 1.0, 0.0, 0.0),
        ("trajectory_ordered_f1", 1.0, 0.0, 0.0),
        # boolean modes: empty E passes in_order/any_order; exact only with empty A too
        ("trajectory_exact", 1.0, 0.0, 0.0),
        ("trajectory_in_order", 1.0, 0.0, 1.0),
        ("trajectory_any_order", 1.0, 0.0, 1.0),
        ("trajectory_superset", 1.0, 0.0, 1.0),
        # subset: k* = n, so empty A passes, extras fail
        ("trajectory_subset", 1.0, 1.0, 0.0),
        ("trajectory_same_multiset", 1.0, 0.0, 0.0),
        # seed subsequence: empty reference → 1.0 (documented), n < m → 0
        ("trajectory_subsequence", 1.0, 0.0, 1.0),
    ],
)
def test_empty_rules(metric: str, both_empty: float, only_expected: float, only_actual: float) -> None:
    assert value(metric, [], []) == both_empty
    assert value(metric, [], [call("f")]) == only_expected
    assert value(metric, [call("f")], []) == only_actual


def test_both_empty_score_is_configurable() -> None:
    # Ragas convention: both empty → 0
    assert value("trajectory_f1", [], [], both_empty_score=0.0) == 0.0
    result = score("trajectory_f1", [], [])
    assert result is not None
    assert result.explanation == "k*=0, n=m=0 (both empty) → P=R=F1=1.000"


def test_duplicates_count() -> None:
    # DeepEval merges identical repeats (scores 0.5 here); we count them: k* = 2, P = R = 1
    twice = [call("s", q="a"), call("s", q="a")]
    assert value("trajectory_f1", twice, twice) == 1.0
    # expected [s, s] vs actual [s]: k* = 1, R = 1/2, any_order fails
    assert value("trajectory_recall", twice[:1], twice) == 0.5
    assert value("trajectory_any_order", twice[:1], twice) == 0.0


def test_adk_reference_examples_in_order_any_order_exact() -> None:
    expected = [call("T1"), call("T2"), call("T3")]
    interleaved = [call("T1"), call("X"), call("T2"), call("Y"), call("T3")]
    swapped = [call("T2"), call("T1"), call("T3")]
    # ADK-FORMATS §6.1: [T1,X,T2,Y,T3] → IN_ORDER 1, ANY_ORDER 1, EXACT 0; [T2,T1,T3] → IN_ORDER 0, ANY_ORDER 1
    assert value("trajectory_in_order", interleaved, expected) == 1.0
    assert value("trajectory_any_order", interleaved, expected) == 1.0
    assert value("trajectory_exact", interleaved, expected) == 0.0
    assert value("trajectory_in_order", swapped, expected) == 0.0
    assert value("trajectory_any_order", swapped, expected) == 1.0
    # ordered_f1 on swapped: LCS = 2 (T1,T3 or T2,T3) → P = R = 2/3 → F1 = 0.667
    assert value("trajectory_ordered_f1", swapped, expected) == pytest.approx(2 / 3)
    exact = score("trajectory_exact", swapped, expected)
    assert exact is not None
    assert exact.explanation == "exact: first divergence at index 0 (expected T1(), got T2()) → 0"


def test_exact_length_mismatch_explanation() -> None:
    result = score("trajectory_exact", [call("a")], [call("a"), call("b")])
    assert result is not None
    assert (result.value, result.explanation) == (0.0, "exact: n=1 ≠ m=2 → 0")
    assert result.details["first_divergence"] == {"index": 1, "expected": "b()", "actual": None}


def test_exact_parallel_unordered_compares_step_groups_as_multisets() -> None:
    expected = [call("a"), call("b"), call("c")]
    # a and b issued in one model step (parallel), in the other order
    actual = [call("b", step=1), call("a", step=1), call("c", step=2)]
    assert value("trajectory_exact", actual, expected) == 0.0
    # hand calculation: groups {b,a} vs expected cut {a,b} → multiset equal; {c} vs {c} → pass
    assert value("trajectory_exact", actual, expected, parallel_unordered=True) == 1.0
    # c moved into the first step: groups [b,a,c] vs expected cut [a,b,c] still pass, but [c,a],[b] vs [a,b],[c] fail
    moved = [call("c", step=1), call("a", step=1), call("b", step=2)]
    assert value("trajectory_exact", moved, expected, parallel_unordered=True) == 0.0


def test_parallel_unordered_is_rejected_outside_exact() -> None:
    spec = MetricSpec(name="trajectory_f1", options={"parallel_unordered": True})
    assert check_specs([spec]) == [
        "trajectory_f1: option parallel_unordered applies to trajectory_exact only, found True"
    ]
    assert check_specs([MetricSpec(name="trajectory_f1", options={"parallel_unordered": False})]) == []


def test_unknown_and_badly_typed_options_are_reported() -> None:
    spec = MetricSpec(name="trajectory_f1", options={"args_mode": "fuzzy", "colour": 1})
    problems = check_specs([spec])
    assert len(problems) == 2
    assert problems[0] == (
        "trajectory_f1: option args_mode: Input should be 'exact', 'ignore', 'contains' or 'within', found 'fuzzy'"
    )
    assert problems[1].startswith("trajectory_f1: unknown option 'colour'; known: over, args_mode, keys, tool_args,")
    # an unknown key inside a per-tool override names its place and what the override takes
    nested = MetricSpec(name="trajectory_f1", options={"tool_args": {"search": {"mode": "contains"}}})
    assert check_specs([nested]) == ["trajectory_f1: unknown option 'tool_args.search.mode'; known: args_mode, keys"]


def test_args_modes_keys_and_per_tool_overrides() -> None:
    expected = [call("search", q="a", limit=10), call("book", id=1)]
    actual = [call("search", q="a", limit=20, lang="en"), call("book", id=1, ts="2024")]
    # exact: neither call matches → R = 0/2
    assert value("trajectory_recall", actual, expected) == 0.0
    # ignore: names only → R = 2/2
    assert value("trajectory_recall", actual, expected, args_mode="ignore") == 1.0
    # keys=[q, id]: only those paths compared; id missing in search on both sides is fine → 2/2
    assert value("trajectory_recall", actual, expected, keys=["q", "id"]) == 1.0
    # per tool: search compares only q, book uses contains → 2/2
    overrides = {"search": {"keys": ["q"]}, "book": {"args_mode": "contains"}}
    assert value("trajectory_recall", actual, expected, tool_args=overrides) == 1.0
    # only the search override → book still exact and differs (extra ts) → 1/2
    assert value("trajectory_recall", actual, expected, tool_args={"search": {"keys": ["q"]}}) == 0.5


def test_arg_diffs_for_missing_calls() -> None:
    result = score("trajectory_f1", [call("search", q="b")], [call("search", q="a")])
    assert result is not None
    assert result.details["arg_diffs"] == [
        {
            "expected_index": 0,
            "actual_index": 0,
            "tool": "search",
            "diffs": [{"path": "$.q", "reason": "not equal", "expected": "a", "actual": "b"}],
        }
    ]


def test_json_typed_args_and_coerce() -> None:
    # 1 == 1.0; true != 1; "1" != 1 unless coerce
    assert value("trajectory_exact", [call("f", x=1.0)], [call("f", x=1)]) == 1.0
    assert value("trajectory_exact", [call("f", x=True)], [call("f", x=1)]) == 0.0
    assert value("trajectory_exact", [call("f", x="1")], [call("f", x=1)]) == 0.0
    assert value("trajectory_exact", [call("f", x="1")], [call("f", x=1)], coerce=True) == 1.0


def test_value_matchers_inside_expected_args() -> None:
    expected = [call("book", id={"$any": True}, city={"$icase": "paris"}, price={"$approx": 10, "abs": 0.5})]
    actual = [call("book", id="uuid-123", city="PARIS", price=10.4)]
    assert value("trajectory_exact", actual, expected) == 1.0
    wrong = [call("book", id="uuid-123", city="Lyon", price=10.4)]
    assert value("trajectory_exact", wrong, expected) == 0.0


def test_malformed_matcher_in_expectation_raises() -> None:
    with pytest.raises(ValueError, match=r"expected_tool_calls\[0\]\.args\.q: matcher \$regex needs a string"):
        score("trajectory_exact", [call("f", q="a")], [call("f", q={"$regex": 3})])


def test_agent_attribution_is_matched_when_expectation_names_it() -> None:
    expected = [call("lookup", agent="qa")]
    # hand calculation: same name and args but another agent → no pair
    assert value("trajectory_recall", [call("lookup", agent="refund")], expected) == 0.0
    assert value("trajectory_recall", [call("lookup", agent="refund")], expected, match_agent=False) == 1.0
    # diagnostics name the misattributed call: right call, wrong agent (docs/metrics.md §7)
    result = score("trajectory_recall", [call("lookup", agent="refund")], expected)
    assert result is not None
    assert result.details["misattributed"] == [
        {"expected_index": 0, "actual_index": 0, "call": "lookup()", "expected_agent": "qa", "actual_agent": "refund"}
    ]
    # expectation without agent matches any agent
    assert value("trajectory_recall", [call("lookup", agent="refund")], [call("lookup")]) == 1.0


def test_failed_calls_excluded_from_matching_and_deferred_not_counted() -> None:
    expected = [call("a"), call("b")]
    actual = [call("a"), call("b", status="error"), call("b"), call("c", status="deferred")]
    # hand calculation: usable actual = [a, b] → exact passes
    result = score("trajectory_exact", actual, expected)
    assert result is not None
    assert result.value == 1.0
    assert result.details["notes"] == [
        "1 failed call(s) excluded from matching (exclude_error_calls)",
        "1 deferred call(s) not counted (count_deferred)",
    ]
    # counting everything: [a, b(err), b, c] vs [a, b] → precision 2/4
    assert value("trajectory_precision", actual, expected, exclude_error_calls=False, count_deferred=True) == 0.5


def test_not_applicable_without_expectation_and_over_steps() -> None:
    assert score("trajectory_f1", [call("a")], None) is None
    assert score("trajectory_f1", [call("a")], [call("a")], over="steps") is None
    # steps: reported trajectory vs expected_trajectory (names only)
    result = score("trajectory_f1", steps=["router", "lookup", "x"], expected_steps=["router", "lookup"])
    assert result is not None
    # hand calculation: k* = 2, P = 2/3, R = 2/2 → F1 = 0.8
    assert result.value == pytest.approx(0.8)
    assert result.details["over"] == "steps"
    # steps fall back to tool-call names when no trajectory is reported
    fallback = score("trajectory_exact", [call("a"), call("b")], expected_steps=["a", "b"])
    assert fallback is not None
    assert fallback.value == 1.0


def _seed_trajectory_subsequence(outputs: list[str], reference: list[str]) -> float:
    """The music-store tutorial's evaluator, as given in guide 000 (test oracle only)."""
    if len(reference) > len(outputs):
        return 0.0
    i = j = 0
    while i < len(reference) and j < len(outputs):
        if reference[i] == outputs[j]:
            i += 1
        j += 1
    return i / len(reference)


@pytest.mark.parametrize(
    ("actual", "reference", "expected_value"),
    [
        # full match in order: 2/2
        (["question_answering_agent", "lookup_track"], ["question_answering_agent", "lookup_track"], 1.0),
        # extras in between: 2/2
        (
            ["intent_classifier", "question_answering_agent", "x", "lookup_track"],
            ["question_answering_agent", "lookup_track"],
            1.0,
        ),
        # actual shorter than reference → 0
        (["refund_agent"], ["refund_agent", "lookup"], 0.0),
        # wrong order, same length: greedy finds lookup? no — ref[0]=qa matches actual[1], then nothing → 1/2
        (["lookup_track", "question_answering_agent"], ["question_answering_agent", "lookup_track"], 0.5),
        # 3 reference steps, 2 found in order → 2/3
        (["a", "x", "c", "y"], ["a", "b", "c"], 1 / 3),
    ],
)
def test_trajectory_subsequence_reproduces_the_seed(
    actual: list[str], reference: list[str], expected_value: float
) -> None:
    result = score("trajectory_subsequence", steps=actual, expected_steps=reference)
    assert result is not None
    assert result.value == pytest.approx(_seed_trajectory_subsequence(actual, reference))
    assert result.value == pytest.approx(expected_value)


def test_trajectory_subsequence_explanations() -> None:
    short = score("trajectory_subsequence", steps=["a"], expected_steps=["a", "b"])
    assert short is not None
    assert short.explanation == "actual has n=1 < m=2 reference items → 0"
    partial = score("trajectory_subsequence", steps=["a", "c", "d"], expected_steps=["a", "b", "c"])
    assert partial is not None
    # greedy: a matched, then b never found → 1/3
    assert partial.explanation == "subsequence: 1/3=0.333"


def test_langchain_benchmarks_expected_steps_list_equality() -> None:
    # guide 003: order_matters=true is `actual_steps == expected_steps`; false compares sorted lists
    expected = ["a", "b", "c"]
    assert value_steps("trajectory_exact", ["a", "b", "c"], expected) == 1.0
    assert value_steps("trajectory_exact", ["a", "c", "b"], expected) == 0.0
    assert value_steps("trajectory_same_multiset", ["a", "c", "b"], expected) == 1.0
    # sorted(["a","a","c"]) != sorted(["a","b","c"]) and duplicates count
    assert value_steps("trajectory_same_multiset", ["a", "a", "c"], expected) == 0.0


def value_steps(metric: str, steps: list[str], expected_steps: list[str]) -> float:
    result = score(metric, steps=steps, expected_steps=expected_steps)
    assert result is not None
    return result.value


def test_exact_predicate_agrees_with_multiset_and_list_definitions_on_random_trajectories() -> None:
    # Under an equivalence (exact args) the optimum equals the multiset intersection size and
    # in_order equals the plain subsequence test, so random cases can be checked against those definitions.
    import random
    from collections import Counter

    rng = random.Random(11)
    for _ in range(300):
        actual = [call(rng.choice("abc"), q=rng.randint(0, 1)) for _ in range(rng.randint(0, 6))]
        expected = [call(rng.choice("abc"), q=rng.randint(0, 1)) for _ in range(rng.randint(0, 6))]
        keys_a = Counter(c.signature() for c in actual)
        keys_e = Counter(c.signature() for c in expected)
        k = sum((keys_a & keys_e).values())
        recall = value("trajectory_recall", actual, expected)
        assert recall == (k / len(expected) if expected else (1.0 if not actual else 0.0))
        assert value("trajectory_same_multiset", actual, expected) == float(keys_a == keys_e)
        it = iter(c.signature() for c in actual)
        is_subsequence = all(any(s == e.signature() for s in it) for e in expected)
        assert value("trajectory_in_order", actual, expected) == float(is_subsequence)


# --- weighted_* (partial credit, Hungarian / weighted LCS) --------------------------------------------------

E_PARTIAL = [call("search", q="a", lang="en"), call("book", id=1)]
A_PARTIAL = [call("search", q="a", lang="fr"), call("book", id=1), call("notify")]


def test_weighted_f1_hand_calculation() -> None:
    # hand calculation: search pair credit = q matches of {q, lang} = 1/2 = 0.5; book pair = 1 (M holds)
    # k*_w = 0.5 + 1 = 1.5, n = 3, m = 2 → P = 1.5/3 = 0.5, R = 1.5/2 = 0.75, F1 = 2·0.5·0.75/1.25 = 0.6
    result = score("trajectory_weighted_f1", A_PARTIAL, E_PARTIAL)
    assert result is not None
    assert result.value == pytest.approx(0.6)
    assert result.explanation == "k*=Σcredit=0.500 + 1.000 = 1.500, P=1.500/3=0.500, R=1.500/2=0.750, F1=0.600"
    assert result.details["weighted_k"] == 1.5
    assert result.details["credits"] == [
        {
            "actual": 0,
            "expected": 0,
            "credit": 0.5,
            "arithmetic": "1/2=0.500",
            "arg_diffs": [{"path": "$.lang", "reason": "not equal", "expected": "en", "actual": "fr"}],
        },
        {"actual": 1, "expected": 1, "credit": 1.0, "arithmetic": "1.000 (match)", "arg_diffs": []},
    ]
    assert result.details["unexpected"] == [{"index": 2, "item": "notify()"}]
    precision = score("trajectory_weighted_precision", A_PARTIAL, E_PARTIAL)
    recall = score("trajectory_weighted_recall", A_PARTIAL, E_PARTIAL)
    assert precision is not None and recall is not None
    assert (precision.value, precision.explanation) == (0.5, "k*=Σcredit=0.500 + 1.000 = 1.500, P=1.500/3=0.500")
    assert (recall.value, recall.explanation) == (0.75, "k*=Σcredit=0.500 + 1.000 = 1.500, R=1.500/2=0.750")
    # the unweighted F1 gives no credit to the half-right search: k* = 1 → P=1/3, R=1/2, F1=0.4
    assert value("trajectory_f1", A_PARTIAL, E_PARTIAL) == pytest.approx(0.4)


def test_weighted_pairing_is_optimal_not_greedy() -> None:
    # E0 = f(a=1), E1 = f(a=1, b=2); A0 = f(a=1, b=2), A1 = f(a=1, b=3).
    # credits: A0-E0 = 1/2, A0-E1 = 1 (match), A1-E0 = 1/2, A1-E1 = 1/2 (a matches, b differs)
    # greedy by expected order takes A0 for E0 (0.5), leaving A1-E1 (0.5): 1.0
    # hand calculation: the assignment A0→E1 (1) + A1→E0 (0.5) = 1.5 → P = R = F1 = 1.5/2 = 0.75
    expected = [call("f", a=1), call("f", a=1, b=2)]
    actual = [call("f", a=1, b=2), call("f", a=1, b=3)]
    result = score("trajectory_weighted_f1", actual, expected)
    assert result is not None
    assert result.value == pytest.approx(0.75)
    assert [(c["actual"], c["expected"], c["credit"]) for c in result.details["credits"]] == [(0, 1, 1.0), (1, 0, 0.5)]


def test_weighted_ordered_f1_keeps_order() -> None:
    # actual = [book(id=1), search(q=a, lang=fr)]: the two pairs cross, so only one fits a common subsequence
    # hand calculation: best single pair is book (1) over search (0.5) → P = R = 1/2, F1 = 0.5
    result = score("trajectory_weighted_ordered_f1", [A_PARTIAL[1], A_PARTIAL[0]], E_PARTIAL)
    assert result is not None
    assert result.value == 0.5
    assert result.explanation == "Σcredit(LCS)=1.000, P=1.000/2=0.500, R=1.000/2=0.500, F1=0.500"
    # in order both pairs count: k = 0.5 + 1 = 1.5, n = m = 2 → P = R = F1 = 0.75
    in_order = score("trajectory_weighted_ordered_f1", A_PARTIAL[:2], E_PARTIAL)
    assert in_order is not None
    assert in_order.value == pytest.approx(0.75)


def test_weighted_credit_recall_option_and_empty_rules() -> None:
    # recall credit divides by the expected leaves only: extra actual keys cost nothing
    # search: q matches of {q, lang} → 1/2 either way here; page adds to the symmetric denominator only
    actual = [call("search", q="a", lang="fr", page=2)]
    expected = [call("search", q="a", lang="en")]
    # symmetric: 1/3 ; recall: 1/2
    assert value("trajectory_weighted_recall", actual, expected) == pytest.approx(1 / 3)
    assert value("trajectory_weighted_recall", actual, expected, credit="recall") == 0.5
    both_empty = score("trajectory_weighted_f1", [], [])
    one_empty = score("trajectory_weighted_f1", [], expected)
    assert both_empty is not None and one_empty is not None
    assert (both_empty.value, both_empty.explanation) == (1.0, "k*=Σcredit=0, n=m=0 (both empty) → 1.000")
    assert (one_empty.value, one_empty.explanation) == (0.0, "k*=Σcredit=0, n=0, m=1 (actual empty) → 0.000")
    # another tool, or another agent than the expectation names, earns nothing
    assert value("trajectory_weighted_f1", [call("other", q="a")], [call("search", q="a")]) == 0.0
    assert value("trajectory_weighted_f1", [call("s", agent="x", q="a")], [call("s", agent="y", q="a")]) == 0.0


def test_weighted_metrics_options_are_checked() -> None:
    assert check_specs([MetricSpec(name="trajectory_weighted_f1", options={"credit": "bogus"})]) == [
        "trajectory_weighted_f1: option credit: Input should be 'symmetric' or 'recall', found 'bogus'"
    ]
    # `credit` belongs to the weighted metrics only
    assert check_specs([MetricSpec(name="trajectory_f1", options={"credit": "recall"})]) == [
        "trajectory_f1: unknown option 'credit'; known: over, args_mode, keys, tool_args, coerce, list_policy, "
        "match_agent, parallel_unordered, exclude_error_calls, count_deferred, both_empty_score"
    ]


def test_weighted_never_below_unweighted_on_random_trajectories() -> None:
    import random

    rng = random.Random(11)
    for _ in range(150):
        expected = [call(rng.choice("fg"), a=rng.randint(0, 2), b=rng.randint(0, 1)) for _ in range(rng.randint(0, 4))]
        actual = [call(rng.choice("fg"), a=rng.randint(0, 2), b=rng.randint(0, 1)) for _ in range(rng.randint(0, 4))]
        for plain, weighted in (
            ("trajectory_f1", "trajectory_weighted_f1"),
            ("trajectory_ordered_f1", "trajectory_weighted_ordered_f1"),
            ("trajectory_precision", "trajectory_weighted_precision"),
        ):
            assert value(weighted, actual, expected) >= value(plain, actual, expected) - 1e-12
