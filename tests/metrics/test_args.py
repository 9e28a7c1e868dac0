"""Native argument matching: JSON typing, modes, key paths, value matchers (docs/metrics.md §4)."""

from __future__ import annotations

from typing import Any

import pytest

from evalward.metrics.args import (
    ArgsRule,
    MatcherError,
    args_match,
    check_matchers,
    compare_args,
    diff_values,
    normalize_json,
    scalar_equal,
    split_path,
)

EXACT = ArgsRule()
CONTAINS = ArgsRule(mode="contains")
WITHIN = ArgsRule(mode="within")


@pytest.mark.parametrize(
    ("actual", "expected", "coerce", "equal"),
    [
        (1, 1.0, False, True),  # numbers by value
        (True, 1, False, False),  # booleans are not numbers
        (False, 0, False, False),
        ("1", 1, False, False),  # strings are not numbers …
        ("1", 1, True, True),  # … unless coerce
        (" 2.5 ", 2.5, True, True),
        ("true", True, True, True),
        ("abc", 1, True, False),
        (None, None, False, True),
        (None, "null", False, False),
        ("a", "a", False, True),
    ],
)
def test_scalar_equality_is_json_typed(actual: Any, expected: Any, coerce: bool, equal: bool) -> None:
    assert scalar_equal(actual, expected, coerce=coerce) is equal


def test_json_strings_are_parsed_but_scalars_stay_strings() -> None:
    assert normalize_json({"filter": '{"a": [1, 2]}', "n": "1", "bad": "{nope"}) == {
        "filter": {"a": [1, 2]},
        "n": "1",
        "bad": "{nope",
    }
    # an OpenAI-style JSON-string argument matches its decoded form
    assert args_match({"q": '{"city": "Paris"}'}, {"q": {"city": "Paris"}}, EXACT)


def test_exact_mode_reports_every_difference_with_paths() -> None:
    diffs = compare_args({"a": 1, "b": {"c": [1, 2]}, "x": 0}, {"a": 2, "b": {"c": [1, 3]}, "d": None}, EXACT)
    assert [d.as_dict() for d in diffs] == [
        {"path": "$.a", "reason": "not equal", "expected": 2, "actual": 1},
        {"path": "$.b.c[1]", "reason": "not equal", "expected": 3, "actual": 2},
        # missing key is not null
        {"path": "$.d", "reason": "missing key", "expected": None},
        {"path": "$.x", "reason": "unexpected key", "actual": 0},
    ]


def test_key_order_is_irrelevant_and_list_order_matters_by_default() -> None:
    assert args_match({"b": 1, "a": 2}, {"a": 2, "b": 1}, EXACT)
    assert not args_match({"l": [1, 2]}, {"l": [2, 1]}, EXACT)
    assert args_match({"l": [1, 2]}, {"l": [2, 1]}, ArgsRule(list_policy="unordered"))


def test_contains_and_within_directions() -> None:
    actual = {"a": 1, "b": {"c": 2, "d": 3}}
    # contains: actual ⊇ expected, recursively
    assert args_match(actual, {"b": {"c": 2}}, CONTAINS)
    assert not args_match(actual, {"b": {"e": 2}}, CONTAINS)
    # within: actual ⊆ expected
    assert not args_match(actual, {"a": 1}, WITHIN)
    assert args_match({"a": 1}, {"a": 1, "z": 9}, WITHIN)
    diffs = compare_args({"a": 1, "y": 2}, {"a": 1}, WITHIN)
    assert [d.as_dict() for d in diffs] == [{"path": "$.y", "reason": "key not allowed (within)", "actual": 2}]


def test_list_policy_contains_uses_optimal_pairing() -> None:
    rule = ArgsRule(mode="contains", list_policy="contains")
    # expected elements {a:1} and {a:1,b:2}; greedy would give {a:1,b:2} to the first and fail the second
    actual = {"items": [{"a": 1, "b": 2}, {"a": 1, "c": 3}]}
    assert args_match(actual, {"items": [{"a": 1}, {"a": 1, "b": 2}]}, rule)
    assert not args_match(actual, {"items": [{"a": 1, "b": 2}, {"a": 1, "b": 2}]}, rule)


def test_keys_compare_only_listed_paths_and_missing_is_not_null() -> None:
    rule = ArgsRule(keys=("user.id", "limit"))
    assert args_match({"user": {"id": 7, "name": "x"}, "ts": 1}, {"user": {"id": 7}, "ts": 2}, rule)
    # both sides missing the path: equal
    assert args_match({"user": {"id": 7}}, {"user": {"id": 7}}, rule)
    # expected null, actual missing: different (openevals 0.2.2 semantics)
    diffs = compare_args({"user": {"id": 7}}, {"user": {"id": 7}, "limit": None}, rule)
    assert [d.as_dict() for d in diffs] == [{"path": "$.limit", "reason": "missing key", "expected": None}]


def test_ignore_mode_and_absent_args() -> None:
    assert args_match({"a": 1}, {"a": 2}, ArgsRule(mode="ignore"))
    # expected args not specified → nothing to compare; actual args not recorded → name only
    assert args_match({"a": 1}, None, EXACT)
    assert args_match(None, {"a": 1}, EXACT)


@pytest.mark.parametrize(
    ("actual", "matcher", "matches"),
    [
        ("2024-05-01T10:00", {"$any": True}, True),
        ("order-123", {"$regex": r"order-\d+"}, True),
        ("order-x", {"$regex": r"^order-\d+$"}, False),
        ("hello world", {"$contains": "lo wo"}, True),
        (["a", "b"], {"$contains": "b"}, True),
        ("PaRiS", {"$icase": "paris"}, True),
        (10.4, {"$approx": 10, "abs": 0.5}, True),
        (10.6, {"$approx": 10, "abs": 0.5}, False),
        (105, {"$approx": 100, "rel": 0.05}, True),  # |5| ≤ 0.05·100
        (106, {"$approx": 100, "rel": 0.05}, False),
        (1.0000001, {"$approx": 1}, True),  # default rel 1e-6
        (True, {"$approx": 1}, False),  # booleans are not numbers
        ("b", {"$in": ["a", "b"]}, True),
        ("c", {"$in": ["a", "b"]}, False),
        ("x", {"$type": "string"}, True),
        (3, {"$type": "number"}, True),  # integers are numbers
        (3.5, {"$type": "integer"}, False),
        (None, {"$type": ["string", "null"]}, True),
        ([3, 1, 2], {"$unordered": [1, 2, 3]}, True),
        ([1, 1, 2], {"$unordered": [1, 2, 2]}, False),  # multiset, duplicates count
        ({"n": 2}, {"$schema": {"type": "object", "required": ["n"]}}, True),
        ({"m": 2}, {"$schema": {"type": "object", "required": ["n"]}}, False),
    ],
)
def test_value_matchers(actual: Any, matcher: dict[str, Any], matches: bool) -> None:
    assert args_match({"v": actual}, {"v": matcher}, EXACT) is matches


def test_any_matcher_still_requires_the_key() -> None:
    diffs = compare_args({}, {"id": {"$any": True}}, EXACT)
    assert [d.reason for d in diffs] == ["missing key"]


def test_matchers_nest_inside_lists_and_dicts() -> None:
    expected = {"rows": [{"id": {"$any": True}, "name": {"$icase": "ANN"}}]}
    assert args_match({"rows": [{"id": 9, "name": "ann"}]}, expected, EXACT)


def test_objects_that_merely_look_like_matchers_are_plain_values() -> None:
    # two operators, or an unknown modifier, make it an ordinary object compared by equality
    plain = {"$regex": "a", "$in": ["a"]}
    assert args_match({"v": dict(plain)}, {"v": plain}, EXACT)
    assert args_match({"v": {"$ref": "#/x"}}, {"v": {"$ref": "#/x"}}, EXACT)


def test_malformed_matchers_are_reported_and_raise() -> None:
    assert check_matchers({"q": {"$regex": "("}, "n": [{"$approx": "x"}]}) == [
        "$.q: invalid $regex '(': missing ) at position 1",
        '$.n[0]: matcher $approx needs a number, found "x"',
    ]
    assert check_matchers({"t": {"$type": "str"}}) == [
        '$.t: matcher $type needs one of string, number, integer, boolean, object, array, null (or a list of them), found "str"'
    ]
    with pytest.raises(MatcherError, match="needs true"):
        diff_values("x", {"$any": False}, EXACT)


def test_schema_errors_point_inside_the_value() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    diffs = compare_args({"v": {"n": "x"}}, {"v": {"$schema": schema}}, EXACT)
    assert [d.path for d in diffs] == ["$.v.n"]
    assert diffs[0].reason == "schema: 'x' is not of type 'integer'"


def test_split_path_forms() -> None:
    assert split_path("a.b.0") == ["a", "b", "0"]
    assert split_path("$.a.b[0]") == ["a", "b", "0"]
    assert split_path("rows[*].id") == ["rows", "*", "id"]


# --- partial credit (weighted trajectory metrics) ---------------------------------------------------------


def test_args_credit_symmetric_and_recall() -> None:
    from evalward.metrics.args import args_credit

    expected = {"q": "a", "lang": "en"}
    actual = {"q": "a", "lang": "fr", "page": 2}
    # hand calculation: leaves(e) = {q, lang}, leaves(a) = {q, lang, page}; only q matches
    # symmetric: 1 / |{q, lang, page}| = 1/3; recall: 1 / |{q, lang}| = 1/2
    symmetric = args_credit(actual, expected, EXACT)
    assert (symmetric.matched, symmetric.total, symmetric.full_match) == (1, 3, False)
    assert symmetric.value == pytest.approx(1 / 3)
    assert symmetric.render() == "1/3=0.333"
    recall = args_credit(actual, expected, EXACT, "recall")
    assert (recall.value, recall.render()) == (0.5, "1/2=0.500")


def test_args_credit_nested_leaves_matchers_and_lists() -> None:
    from evalward.metrics.args import args_credit, leaves

    # nested objects contribute their leaves: filter.city matches, filter.max does not → 1/2
    nested = args_credit({"filter": {"city": "Paris", "max": 120}}, {"filter": {"city": "Paris", "max": 100}}, EXACT)
    assert nested.value == 0.5
    # a matcher object is one leaf: $any matches, q differs → 1/2
    matcher = args_credit({"id": 5, "q": "y"}, {"id": {"$any": True}, "q": "x"}, EXACT)
    assert matcher.value == 0.5
    # a list is one leaf compared under list_policy: reordered under `exact` → 0/1
    assert args_credit({"tags": ["b", "a"]}, {"tags": ["a", "b"]}, EXACT).value == 0.0
    assert leaves({"a": {"b": 1, "c": {}}, "d": [1], "e": {"$any": True}}) == {
        ("a", "b"): 1,
        ("a", "c"): {},
        ("d",): [1],
        ("e",): {"$any": True},
    }
    # normalisation first: a JSON string is parsed; 1 == 1.0; true != 1
    assert args_credit({"f": '{"x": 1.0}', "b": 1}, {"f": {"x": 1}, "b": True}, EXACT).value == 0.5


def test_args_credit_is_one_whenever_the_rule_matches() -> None:
    from evalward.metrics.args import args_credit

    # `contains` allows extra actual keys: M holds → credit 1 (never below the 0/1 predicate)
    credit = args_credit({"q": "a", "page": 2}, {"q": "a"}, CONTAINS)
    assert (credit.value, credit.full_match, credit.render()) == (1.0, True, "1.000 (args match)")
    # names only, or args not recorded on either side: matched by name → 1
    assert args_credit({"q": "b"}, {"q": "a"}, ArgsRule(mode="ignore")).value == 1.0
    assert args_credit(None, {"q": "a"}, EXACT).value == 1.0
    # `keys`: only the listed paths count; q differs, lang is not compared → 0/1
    keyed = args_credit({"q": "b", "lang": "fr"}, {"q": "a", "lang": "en"}, ArgsRule(keys=("q",)))
    assert (keyed.matched, keyed.total) == (0, 1)
    # recall with nothing expected but something extra (exact mode fails on the extra key) → 1 by the empty rule
    assert args_credit({"page": 2}, {}, EXACT, "recall").value == 1.0
    assert args_credit({"page": 2}, {}, EXACT).value == 0.0
