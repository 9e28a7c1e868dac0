"""Response metrics (`evalward.metrics.response`): hand-calculated scores, explanations and option checks."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

import pytest

from evalward.metrics.base import Metric, Score, TurnContext
from evalward.metrics.registry import check_specs
from evalward.metrics.response import (
    OutputMatch,
    ResponseContains,
    ResponseExact,
    ResponseRegex,
    ResponseRouge1,
    json_equal,
    normalize_text,
)
from evalward.model import AgentOutput, EvalCase, Invocation, MetricSpec


def score(
    metric: Metric,
    response: str | None = None,
    expected_response: str | None = None,
    *,
    outputs: dict[str, Any] | None = None,
    expected_outputs: dict[str, Any] | None = None,
    **options: Any,
) -> Score | None:
    expected = Invocation(query="q", expected_response=expected_response, expected_outputs=expected_outputs or {})
    ctx = TurnContext(
        case=EvalCase(case_id="c1", turns=[expected]),
        turn=0,
        expected=expected,
        actual=AgentOutput(response=response, outputs=outputs or {}),
        spec=MetricSpec(name=metric.name, options=options),
    )
    assert check_specs([ctx.spec]) == []
    scored = metric.score_turn(ctx)
    assert not isinstance(scored, Awaitable)
    return scored


def problems(metric: Metric, **options: Any) -> list[str]:
    """The problems of the metric's criterion with `options`, without the metric's name that leads each."""
    return [
        problem.removeprefix(f"{metric.name}: ")
        for problem in check_specs([MetricSpec(name=metric.name, options=options)])
    ]


def test_metric_names() -> None:
    names = [m.name for m in (ResponseExact, ResponseContains, ResponseRegex, ResponseRouge1, OutputMatch)]
    assert names == ["response_exact", "response_contains", "response_regex", "response_rouge1", "output_match"]


def test_normalize_text() -> None:
    # NFKC ("ﬁ" -> "fi", "１" -> "1"), trim, collapse whitespace; casefold only on request ("ß" -> "ss")
    assert normalize_text("  ﬁle\n\t１  Straße ") == "file 1 Straße"
    assert normalize_text("  ﬁle\n\t１  Straße ", casefold=True) == "file 1 strasse"


# ------------------------------------------------------------------------------------------------ exact


def test_exact_equal_after_normalisation() -> None:
    result = score(ResponseExact(), "  Paris\n is  the capital ", "Paris is the capital")
    assert result is not None
    assert result.value == 1.0
    assert result.explanation == (
        'normalised response "Paris is the capital" equals expected "Paris is the capital" -> 1.0'
    )


def test_exact_is_case_sensitive_unless_casefold() -> None:
    strict = score(ResponseExact(), "PARIS", "Paris")
    folded = score(ResponseExact(), "PARIS", "Paris", casefold=True)
    assert strict is not None and strict.value == 0.0
    assert strict.explanation == 'normalised response "PARIS" differs from expected "Paris" -> 0.0'
    assert folded is not None and folded.value == 1.0


def test_exact_not_applicable_without_expected_response_and_none_response_is_empty() -> None:
    assert score(ResponseExact(), "anything", None) is None
    empty = score(ResponseExact(), None, "")
    assert empty is not None and empty.value == 1.0


def test_exact_option_problems() -> None:
    assert problems(ResponseExact(), casefold="yes", strip=True) == [
        "casefold: expected true or false, found 'yes'",
        "unknown option 'strip'; known: casefold",
    ]


# --------------------------------------------------------------------------------------------- contains


def test_contains_defaults_to_expected_response() -> None:
    result = score(ResponseContains(), "The order  #42 was shipped.", "order #42")
    assert result is not None
    assert result.value == 1.0
    assert result.explanation == "mode=all: 1 of 1 found in response -> 1.0"


def test_contains_all_and_any() -> None:
    response = "Your refund of $20 is approved"
    all_mode = score(ResponseContains(), response, texts=["refund", "denied"])
    any_mode = score(ResponseContains(), response, texts=["refund", "denied"], mode="any")
    assert all_mode is not None and any_mode is not None
    # hand calculation: "refund" found, "denied" missing -> all: 0.0, any: 1.0
    assert all_mode.value == 0.0
    assert all_mode.explanation == 'mode=all: 1 of 2 found in response, missing "denied" -> 0.0'
    assert all_mode.details["missing"] == ["denied"]
    assert any_mode.value == 1.0


def test_contains_text_option_and_casefold() -> None:
    assert (s := score(ResponseContains(), "REFUND approved", text="refund")) is not None and s.value == 0.0
    assert (s := score(ResponseContains(), "REFUND approved", text="refund", casefold=True)) is not None
    assert s.value == 1.0


def test_contains_not_applicable_without_any_text() -> None:
    assert score(ResponseContains(), "anything", None) is None


def test_contains_option_problems() -> None:
    assert problems(ResponseContains(), text="a", texts=["b"], mode="most") == [
        "mode: expected 'all' or 'any', found 'most'",
    ]
    assert problems(ResponseContains(), text="a", texts=["b"]) == ["give either text or texts, not both"]
    assert problems(ResponseContains(), texts=[]) == ["texts: expected at least one string, found []"]
    assert problems(ResponseContains(), texts="abc") == ["texts: expected a list of strings, found 'abc'"]
    assert problems(ResponseContains(), text=3) == ["text: expected a string, found 3"]


# ------------------------------------------------------------------------------------------------ regex


def test_regex_search_and_fullmatch() -> None:
    found = score(ResponseRegex(), "Order #1234 shipped", pattern=r"#\d+")
    assert found is not None and found.value == 1.0
    assert found.explanation == 'search "#\\\\d+" in response: matched "#1234" at 6-11 -> 1.0'
    assert found.details["span"] == [6, 11]

    full = score(ResponseRegex(), "Order #1234 shipped", pattern=r"#\d+", fullmatch=True)
    assert full is not None and full.value == 0.0
    assert full.explanation == 'fullmatch "#\\\\d+" in response: no match -> 0.0'


def test_regex_applies_to_raw_text_and_missing_response_is_empty() -> None:
    # no normalisation: the double space must be matched literally
    assert (s := score(ResponseRegex(), "a  b", pattern="a  b", fullmatch=True)) is not None and s.value == 1.0
    assert (s := score(ResponseRegex(), None, pattern="^$")) is not None and s.value == 1.0


def test_regex_option_problems() -> None:
    assert problems(ResponseRegex()) == ["option pattern: Field required"]
    assert problems(ResponseRegex(), pattern="(", fullmatch=1) == [
        "pattern: not a valid regular expression (missing ) at position 1), found '('",
        "fullmatch: expected true or false, found 1",
    ]


# ------------------------------------------------------------------------------------------------ rouge1


def test_rouge1_f_p_r() -> None:
    response, reference = "the cat sat", "the cat sat on the mat"
    # hand calculation: response [the, cat, sat], reference [the, cat, sat, on, the, mat]:
    # overlap 3; P = 3/3 = 1.0; R = 3/6 = 0.5; F = 2·1·0.5/1.5 = 0.667
    f = score(ResponseRouge1(), response, reference)
    p = score(ResponseRouge1(), response, reference, variant="p")
    r = score(ResponseRouge1(), response, reference, variant="r")
    assert f is not None and p is not None and r is not None
    assert (f.value, p.value, r.value) == (2 * 1.0 * 0.5 / 1.5, 1.0, 0.5)
    assert f.explanation == "tokenizer=unicode, overlap=3, P=3/3=1.000, R=3/6=0.500, F=0.667 -> F=0.667"
    assert r.explanation == "tokenizer=unicode, overlap=3, P=3/3=1.000, R=3/6=0.500, F=0.667 -> R=0.500"


def test_rouge1_tokenizer_option() -> None:
    # unicode: 你 好 世 界 vs 你 好: overlap 2, P = 2/2, R = 2/4, F = 0.667; default drops every CJK character,
    # so both sides have no tokens -> the both-empty rule gives 1.0
    unicode = score(ResponseRouge1(), "你好", "你好世界")
    default = score(ResponseRouge1(), "你好", "你好世界", tokenizer="default")
    assert unicode is not None and default is not None
    assert unicode.value == 2 * 1.0 * 0.5 / 1.5
    assert default.value == 1.0
    assert default.explanation == "tokenizer=default: response and reference both have no tokens -> 1.0"


def test_rouge1_both_empty_is_one_unlike_adk_and_one_empty_is_zero() -> None:
    both = score(ResponseRouge1(), None, "")
    one = score(ResponseRouge1(), "", "some text")
    assert both is not None and both.value == 1.0
    assert one is not None and one.value == 0.0
    assert one.explanation == "tokenizer=unicode, overlap=0, P=0/0=0.000, R=0/2=0.000, F=0.000 -> F=0.000"


def test_rouge1_not_applicable_without_expected_response() -> None:
    assert score(ResponseRouge1(), "text", None) is None


def test_rouge1_option_problems() -> None:
    assert problems(ResponseRouge1(), tokenizer="nltk", variant="F", stem=True) == [
        "tokenizer: expected 'unicode' or 'default', found 'nltk'",
        "variant: expected 'f', 'p' or 'r', found 'F'",
        "unknown option 'stem'; known: tokenizer, variant",
    ]


# -------------------------------------------------------------------------------------------- output_match


def test_output_match_key() -> None:
    result = score(
        OutputMatch(), outputs={"route": "refund_agent"}, expected_outputs={"route": "refund_agent"}, key="route"
    )
    assert result is not None and result.value == 1.0
    assert result.explanation == 'route: "refund_agent" equals expected -> 1.0'


def test_output_match_mismatch_and_missing() -> None:
    wrong = score(OutputMatch(), outputs={"route": "sales"}, expected_outputs={"route": "refund"}, key="route")
    missing = score(OutputMatch(), outputs={}, expected_outputs={"route": "refund"}, key="route")
    assert wrong is not None and wrong.value == 0.0
    assert wrong.explanation == 'route: "sales" != expected "refund" -> 0.0'
    assert missing is not None and missing.value == 0.0
    assert missing.explanation == 'route: missing, expected "refund" -> 0.0'


def test_output_match_not_applicable_when_expected_key_absent() -> None:
    assert score(OutputMatch(), outputs={"route": "x"}, expected_outputs={"other": 1}, key="route") is None
    assert score(OutputMatch(), outputs={"route": "x"}) is None


def test_output_match_without_key_needs_every_expected_key() -> None:
    result = score(OutputMatch(), outputs={"a": 1, "b": [1, 2], "c": 0}, expected_outputs={"b": [1, 2], "a": 1.0})
    assert result is not None and result.value == 1.0
    assert result.details["keys"] == ["a", "b"]
    result = score(OutputMatch(), outputs={"a": True}, expected_outputs={"a": 1, "b": 2})
    assert result is not None and result.value == 0.0
    assert result.details["mismatched"] == ["a", "b"]


@pytest.mark.parametrize(
    ("left", "right", "equal"),
    [
        (1, 1.0, True),
        (True, 1, False),
        ("1", 1, False),
        ({"a": [1, {"b": None}]}, {"a": [1.0, {"b": None}]}, True),
        ([1, 2], [2, 1], False),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        (None, None, True),
        (None, 0, False),
    ],
)
def test_json_equal(left: Any, right: Any, equal: bool) -> None:
    assert json_equal(left, right) is equal


def test_output_match_option_problems() -> None:
    assert problems(OutputMatch(), key="", field="x") == [
        "key: expected a non-empty string, found ''",
        "unknown option 'field'; known: key",
    ]
