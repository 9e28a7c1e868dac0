"""The ADK-named metrics, scoring exactly as google-adk 2.13.0 does (checked by differential tests).

Both score one turn (ADK's "invocation"); the case score is the mean over turns, as ADK's
`overall_score` is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Literal

from pydantic import field_validator

from evalward.metrics.base import Metric, Score, TurnContext
from evalward.metrics.metric_options import Flag, StrictOptions
from evalward.metrics.registry import register_metric
from evalward.metrics.rouge import rouge1, unicode_tokens
from evalward.model import ToolCall

MatchType = Literal["EXACT", "IN_ORDER", "ANY_ORDER"]
MATCH_TYPES: tuple[MatchType, ...] = ("EXACT", "IN_ORDER", "ANY_ORDER")


def parse_match_type(value: object) -> MatchType | None:
    """ADK's `ToolTrajectoryCriterion.match_type` coercion, or None when `value` is not one.

    Accepts the enum names with ADK's normalisation (strip, upper-case, `-` and space → `_`, so
    `"in order"`, `"any-order"` work) and the enum values 0, 1, 2 (EXACT, IN_ORDER, ANY_ORDER).
    """
    if isinstance(value, str):
        normalized = value.strip().upper().replace("-", "_").replace(" ", "_")
        return next((m for m in MATCH_TYPES if m == normalized), None)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(MATCH_TYPES):
        return MATCH_TYPES[value]
    return None


class ToolTrajectoryOptions(StrictOptions):
    """`tool_trajectory_avg_score`'s options, with ADK's spellings of `match_type` (`parse_match_type`)."""

    match_type: MatchType = "EXACT"
    ignore_args: Flag = False

    @field_validator("match_type", mode="before")
    @classmethod
    def _adk_spelling(cls, value: object) -> MatchType:
        parsed = parse_match_type(value)
        if parsed is None:
            raise ValueError("match_type: expected one of EXACT, IN_ORDER, ANY_ORDER (or 0, 1, 2)")
        return parsed


def _same_call(ignore_args: bool) -> Callable[[ToolCall, ToolCall], bool]:
    """ADK's call equality: names equal (case-sensitive) and args equal under Python `==`.

    `==` on decoded JSON makes key order irrelevant, `1 == 1.0` and `True == 1`, keeps `"1" != 1` and list
    order significant, and tells absent args (None) from `{}`.
    """
    if ignore_args:
        return lambda actual, expected: actual.name == expected.name
    return lambda actual, expected: actual.name == expected.name and actual.args == expected.args


def _multiset_diff(
    actual: list[ToolCall], expected: list[ToolCall], same: Callable[[ToolCall, ToolCall], bool]
) -> tuple[list[int], list[int]]:
    """Indices of expected calls with no equal actual call, and of actual calls left unmatched."""
    remaining = list(range(len(actual)))
    missing: list[int] = []
    for e_index, call in enumerate(expected):
        hit = next((pos for pos, a_index in enumerate(remaining) if same(actual[a_index], call)), None)
        if hit is None:
            missing.append(e_index)
        else:
            remaining.pop(hit)
    return missing, remaining


def _count(calls: list[ToolCall]) -> str:
    return f"{len(calls)} call" if len(calls) == 1 else f"{len(calls)} calls"


@register_metric
class ToolTrajectoryAvgScore(Metric):
    """ADK's `tool_trajectory_avg_score`: 1.0 when the turn's tool calls match the expected ones, else 0.0.

    Calls are equal when their names are equal (case-sensitive) and, unless `ignore_args`, their args are
    equal under Python `==` on decoded JSON (`1 == 1.0`, `True == 1`, `"1" != 1`, list order matters,
    absent args ≠ `{}`).

    - `EXACT`: same length and pairwise equal in order (both empty → 1.0).
    - `IN_ORDER`: expected is a subsequence of actual: walk actual once, advancing through expected on each
      equal call (expected empty → 1.0; actual empty, expected not → 0.0).
    - `ANY_ORDER`: multiset containment: each expected call, in order, removes the first equal call from a
      copy of actual; duplicates count (expected empty → 1.0).

    Not applicable when the turn has no expected tool calls (None), as every turn of a `conversation_scenario`
    case; `[]` expects no call.
    Options: `match_type` (`EXACT` default, `IN_ORDER`, `ANY_ORDER`; ADK's spellings and 0/1/2 accepted),
    `ignore_args` (bool, default false).
    """

    name: ClassVar[str] = "tool_trajectory_avg_score"
    scope: ClassVar[Literal["turn", "case"]] = "turn"
    description: ClassVar[str] = "ADK trajectory match (EXACT / IN_ORDER / ANY_ORDER), 1.0 or 0.0 per turn"
    Options = ToolTrajectoryOptions

    def score_turn(self, ctx: TurnContext[ToolTrajectoryOptions]) -> Score | None:
        expected = ctx.expected.expected_tool_calls
        if expected is None:
            return None
        options = ctx.options
        return score_trajectory(ctx.actual.tool_calls, expected, options.match_type, options.ignore_args)


def score_trajectory(
    actual: list[ToolCall], expected: list[ToolCall], match_type: MatchType, ignore_args: bool = False
) -> Score:
    """The `tool_trajectory_avg_score` of one turn (rules in `ToolTrajectoryAvgScore`'s docstring)."""
    same = _same_call(ignore_args)
    # Signatures are JSON renderings, the costliest part of scoring: build each one once.
    expected_sigs = [c.signature() for c in expected]
    actual_sigs = [c.signature() for c in actual]
    expected_shown = [c.name for c in expected] if ignore_args else expected_sigs
    actual_shown = [c.name for c in actual] if ignore_args else actual_sigs

    def show(items: list[str]) -> str:
        return "[" + ", ".join(items) + "]"

    # Greedy multiset matching; for ANY_ORDER it is ADK's own algorithm, for the others a diagnostic.
    missing, unexpected = _multiset_diff(actual, expected, same)
    first_mismatch: int | None = None
    if match_type == "EXACT":
        first_mismatch = next(
            (i for i, (a, e) in enumerate(zip(actual, expected, strict=False)) if not same(a, e)),
            None if len(actual) == len(expected) else min(len(actual), len(expected)),
        )
        passed = first_mismatch is None
        if passed:
            verdict = f"expected {show(expected_shown)} equals actual {show(actual_shown)}"
        elif len(actual) != len(expected):
            verdict = (
                f"expected {_count(expected)} {show(expected_shown)}, actual has {len(actual)} {show(actual_shown)}"
                f" (first difference at index {first_mismatch})"
            )
        else:
            verdict = (
                f"expected {show(expected_shown)} differs from actual {show(actual_shown)} at index {first_mismatch}"
            )
    elif match_type == "IN_ORDER":
        # Walk actual once; `matched` counts the expected calls found so far, in order.
        matched = 0
        for call in actual:
            if matched < len(expected) and same(call, expected[matched]):
                matched += 1
        passed = matched == len(expected)
        if passed:
            verdict = f"expected {show(expected_shown)} found in order in actual {show(actual_shown)}"
        else:
            first_mismatch = matched
            verdict = (
                f"expected {show(expected_shown)} not found in order in actual {show(actual_shown)}:"
                f" {matched} of {len(expected)} matched, expected[{matched}] not found after them"
            )
    else:
        passed = not missing
        if passed:
            verdict = f"every call of expected {show(expected_shown)} found in actual {show(actual_shown)}"
        else:
            first_mismatch = missing[0]
            verdict = (
                f"expected {show(expected_shown)} not contained in actual {show(actual_shown)}:"
                f" missing {show([expected_shown[i] for i in missing])}"
            )

    value = 1.0 if passed else 0.0
    details: dict[str, Any] = {
        "match_type": match_type,
        "ignore_args": ignore_args,
        "expected": expected_sigs,
        "actual": actual_sigs,
        "first_mismatch": first_mismatch,
        "missing": [expected_sigs[i] for i in missing],
        "unexpected": [actual_sigs[i] for i in unexpected],
    }
    return Score(value=value, explanation=f"{match_type}: {verdict} -> {value:.1f}", details=details)


@register_metric
class ResponseMatchScore(Metric):
    """ADK's `response_match_score`: ROUGE-1 F-measure of the response against the reference.

    Tokens come from ADK 2.13.0's Unicode-aware tokenizer (`evalward.metrics.rouge.unicode_tokens`:
    NFKC, lower-case, CJK characters one token each, ASCII words Porter-stemmed).
        overlap = Σ_w min(count_ref(w), count_resp(w))
        P = overlap / #response tokens,  R = overlap / #reference tokens,  F = 2PR / (P + R)
    A missing response or reference counts as `""`. **Both empty → 0.0** (as ADK: a reference-less turn
    always scores 0, unlike `response_rouge1`, which scores it 1.0). Applicable to every scripted turn; not to
    the turns of a `conversation_scenario` case, which have no reference (ADK leaves it NOT_EVALUATED there).
    No options.
    """

    name: ClassVar[str] = "response_match_score"
    scope: ClassVar[Literal["turn", "case"]] = "turn"
    description: ClassVar[str] = "ADK ROUGE-1 F-measure of the final response (Unicode-aware tokenizer)"

    def score_turn(self, ctx: TurnContext[Any]) -> Score | None:
        if ctx.case.scenario is not None:
            return None
        return score_response_match(ctx.actual.response, ctx.expected.expected_response)


def score_response_match(response: str | None, reference: str | None) -> Score:
    """The `response_match_score` of one turn (rules in `ResponseMatchScore`'s docstring)."""
    prediction_tokens = unicode_tokens(response or "")
    reference_tokens = unicode_tokens(reference or "")
    result = rouge1(prediction_tokens, reference_tokens)
    details: dict[str, Any] = {
        "tokenizer": "unicode",
        "overlap": result.overlap,
        "response_tokens": result.prediction_count,
        "reference_tokens": result.reference_count,
        "precision": result.precision,
        "recall": result.recall,
    }
    explanation = result.explain()
    if not prediction_tokens and not reference_tokens:
        explanation += " (both empty -> 0.0, as ADK)"
    return Score(value=result.fmeasure, explanation=explanation, details=details)
