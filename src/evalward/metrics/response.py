"""Response metrics: exact, contains, regex, ROUGE-1 and exact match of other output keys.

Text normalisation for `response_exact` and `response_contains` (`normalize_text`): NFKC, trim,
collapse every run of whitespace to one space, and with `casefold: true` case-fold. A missing response
counts as `""`. Every metric here scores one turn and is binary (1.0 / 0.0) except `response_rouge1`.
"""

from __future__ import annotations

import unicodedata
from typing import Annotated, Any, ClassVar, Literal

from pydantic import field_validator, model_validator

from evalward.metrics.base import Metric, Score, TurnContext
from evalward.metrics.metric_options import Flag, StrictOptions, one_of
from evalward.metrics.patterns import PatternError, bounded_fullmatch, bounded_search, compile_pattern
from evalward.metrics.registry import register_metric
from evalward.metrics.rouge import TokenizerName, rouge1, tokenize
from evalward.model.text import compact_json


def normalize_text(text: str, casefold: bool = False) -> str:
    """NFKC, trim, collapse whitespace runs to one space, optionally case-fold."""
    normalized = " ".join(unicodedata.normalize("NFKC", text).split())
    return normalized.casefold() if casefold else normalized


def _quote(text: str, limit: int = 80) -> str:
    """A JSON-quoted, shortened rendering of `text` for explanations."""
    shown = text if len(text) <= limit else text[: limit - 1] + "…"
    return compact_json(shown)


class ResponseExactOptions(StrictOptions):
    casefold: Flag = False


@register_metric
class ResponseExact(Metric):
    """1.0 when the normalised response equals the normalised `expected_response`, else 0.0.

    Normalisation: NFKC, trim, collapse whitespace; with `casefold: true` also case-fold.
    Not applicable when the turn has no `expected_response`. Options: `casefold` (bool, default false).
    """

    name: ClassVar[str] = "response_exact"
    scope: ClassVar[Literal["turn", "case"]] = "turn"
    description: ClassVar[str] = "normalised response equals the expected response"
    Options = ResponseExactOptions

    def score_turn(self, ctx: TurnContext[ResponseExactOptions]) -> Score | None:
        if ctx.expected.expected_response is None:
            return None
        casefold = ctx.options.casefold
        expected = normalize_text(ctx.expected.expected_response, casefold)
        actual = normalize_text(ctx.actual.response or "", casefold)
        equal = expected == actual
        verdict = "equals" if equal else "differs from"
        value = 1.0 if equal else 0.0
        return Score(
            value=value,
            explanation=f"normalised response {_quote(actual)} {verdict} expected {_quote(expected)} -> {value:.1f}",
            details={"expected": expected, "actual": actual, "casefold": casefold},
        )


class ResponseContainsOptions(StrictOptions):
    text: str | None = None
    texts: list[str] | None = None
    mode: Annotated[Literal["all", "any"], one_of("all", "any")] = "all"
    casefold: Flag = False

    @field_validator("text", mode="before")
    @classmethod
    def _text(cls, value: object) -> object:
        if not isinstance(value, str):
            raise ValueError("text: expected a string")
        return value

    @field_validator("texts", mode="before")
    @classmethod
    def _texts(cls, value: object) -> object:
        if not isinstance(value, list) or not all(isinstance(text, str) for text in value):
            raise ValueError("texts: expected a list of strings")
        if not value:
            raise ValueError("texts: expected at least one string")
        return value

    @model_validator(mode="after")
    def _one_source(self) -> ResponseContainsOptions:
        if self.text is not None and self.texts is not None:
            raise ValueError("give either text or texts, not both")
        return self


@register_metric
class ResponseContains(Metric):
    """1.0 when the normalised response contains the given texts as substrings, else 0.0.

    Texts: option `text` (one string) or `texts` (a list); without either, the turn's `expected_response`.
    `mode: all` (default) needs every text, `mode: any` at least one. Response and texts are normalised
    alike (NFKC, trim, collapse whitespace, optional `casefold`). Not applicable when no text is
    configured and the turn has no `expected_response`.
    """

    name: ClassVar[str] = "response_contains"
    scope: ClassVar[Literal["turn", "case"]] = "turn"
    description: ClassVar[str] = "response contains the given text(s) (all or any)"
    Options = ResponseContainsOptions

    def score_turn(self, ctx: TurnContext[ResponseContainsOptions]) -> Score | None:
        options = ctx.options
        if options.text is not None:
            raw = [options.text]
        elif options.texts is not None:
            raw = list(options.texts)
        elif ctx.expected.expected_response is not None:
            raw = [ctx.expected.expected_response]
        else:
            return None
        casefold = options.casefold
        mode = options.mode
        actual = normalize_text(ctx.actual.response or "", casefold)
        texts = [normalize_text(t, casefold) for t in raw]
        found = [t for t in texts if t in actual]
        missing = [t for t in texts if t not in actual]
        passed = bool(found) if mode == "any" else not missing
        value = 1.0 if passed else 0.0
        explanation = f"mode={mode}: {len(found)} of {len(texts)} found in response"
        if missing:
            explanation += ", missing " + ", ".join(_quote(t) for t in missing)
        return Score(
            value=value,
            explanation=f"{explanation} -> {value:.1f}",
            details={"mode": mode, "found": found, "missing": missing, "casefold": casefold},
        )


class ResponseRegexOptions(StrictOptions):
    pattern: str
    fullmatch: Flag = False

    @field_validator("pattern", mode="before")
    @classmethod
    def _pattern(cls, value: object) -> object:
        if not isinstance(value, str):
            raise ValueError("pattern: expected a string")
        try:
            compile_pattern(value)
        except PatternError as error:
            raise ValueError(f"pattern: not a valid regular expression ({error})") from None
        return value


@register_metric
class ResponseRegex(Metric):
    """1.0 when the regular expression `pattern` matches the response, else 0.0.

    `re.search` by default, `re.fullmatch` with `fullmatch: true`; applied to the raw response (a missing
    response is `""`), without normalisation, so the pattern sees exactly what the agent said.
    Always applicable (the pattern is the expectation). Options: `pattern` (required), `fullmatch` (bool).
    """

    name: ClassVar[str] = "response_regex"
    scope: ClassVar[Literal["turn", "case"]] = "turn"
    description: ClassVar[str] = "response matches a regular expression (search or fullmatch)"
    Options = ResponseRegexOptions

    def score_turn(self, ctx: TurnContext[ResponseRegexOptions]) -> Score | None:
        pattern = ctx.options.pattern
        fullmatch = ctx.options.fullmatch
        response = ctx.actual.response or ""
        # Time-bounded: a catastrophic pattern raises PatternTimeout, a metric error for this case only.
        match = bounded_fullmatch(pattern, response) if fullmatch else bounded_search(pattern, response)
        how = "fullmatch" if fullmatch else "search"
        value = 1.0 if match else 0.0
        verdict = f"matched {_quote(match.group(0))} at {match.start()}-{match.end()}" if match else "no match"
        return Score(
            value=value,
            explanation=f"{how} {_quote(pattern)} in response: {verdict} -> {value:.1f}",
            details={
                "pattern": pattern,
                "fullmatch": fullmatch,
                "match": match.group(0) if match else None,
                "span": [match.start(), match.end()] if match else None,
            },
        )


class ResponseRouge1Options(StrictOptions):
    tokenizer: Annotated[TokenizerName, one_of("unicode", "default")] = "unicode"
    variant: Annotated[Literal["f", "p", "r"], one_of("f", "p", "r")] = "f"


@register_metric
class ResponseRouge1(Metric):
    """ROUGE-1 of the response against `expected_response`: F-measure (default), precision or recall.

        overlap = Σ_w min(count_ref(w), count_resp(w))
        P = overlap / #response tokens,  R = overlap / #reference tokens,  F = 2PR / (P + R), 0 when P+R = 0
    Options: `tokenizer` — `unicode` (default; ADK 2.13's tokenizer, keeps non-Latin scripts) or `default`
    (rouge-score's, drops every character outside [a-z0-9]); `variant` — `f` (default), `p` or `r`.
    A missing response counts as `""`. **Both sides without tokens → 1.0** (nothing expected, nothing
    said), unlike ADK's `response_match_score`, which scores that 0.0. Not applicable when the turn has
    no `expected_response`.
    """

    name: ClassVar[str] = "response_rouge1"
    scope: ClassVar[Literal["turn", "case"]] = "turn"
    description: ClassVar[str] = "ROUGE-1 (F, P or R) of the response against the expected response"
    Options = ResponseRouge1Options

    def score_turn(self, ctx: TurnContext[ResponseRouge1Options]) -> Score | None:
        if ctx.expected.expected_response is None:
            return None
        tokenizer = ctx.options.tokenizer
        variant = ctx.options.variant
        prediction = tokenize(ctx.actual.response or "", tokenizer)
        reference = tokenize(ctx.expected.expected_response, tokenizer)
        result = rouge1(prediction, reference)
        details: dict[str, Any] = {
            "tokenizer": tokenizer,
            "variant": variant,
            "overlap": result.overlap,
            "response_tokens": result.prediction_count,
            "reference_tokens": result.reference_count,
            "precision": result.precision,
            "recall": result.recall,
            "fmeasure": result.fmeasure,
        }
        if not prediction and not reference:
            return Score(
                value=1.0,
                explanation=f"tokenizer={tokenizer}: response and reference both have no tokens -> 1.0",
                details=details,
            )
        value = {"f": result.fmeasure, "p": result.precision, "r": result.recall}[variant]
        return Score(
            value=value,
            explanation=f"tokenizer={tokenizer}, {result.explain()} -> {variant.upper()}={value:.3f}",
            details=details,
        )


def json_equal(left: Any, right: Any) -> bool:
    """Equality of decoded JSON values that keeps JSON's types apart.

    Unlike Python `==`, `true` is not `1`; numbers compare by value (`1 == 1.0`); objects compare by key
    set and values, arrays in order.
    """
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return left == right
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(json_equal(left[k], right[k]) for k in left)
    if isinstance(left, list | tuple) and isinstance(right, list | tuple):
        return len(left) == len(right) and all(json_equal(a, b) for a, b in zip(left, right, strict=True))
    return type(left) is type(right) and bool(left == right)


class OutputMatchOptions(StrictOptions):
    key: str | None = None

    @field_validator("key", mode="before")
    @classmethod
    def _key(cls, value: object) -> object:
        if not isinstance(value, str) or not value:
            raise ValueError("key: expected a non-empty string")
        return value


@register_metric
class OutputMatch(Metric):
    """1.0 when the agent's other outputs equal the expected ones exactly, else 0.0.

    With `key`: compares `AgentOutput.outputs[key]` with `Invocation.expected_outputs[key]`; not applicable
    when the turn expects no such key. Without `key`: every key of `expected_outputs` must match; not
    applicable when the turn expects none. A key the agent did not return never matches. Values compare
    as JSON (`json_equal`: `1 == 1.0`, but `true != 1` and `"1" != 1`); strings are not normalised.
    """

    name: ClassVar[str] = "output_match"
    scope: ClassVar[Literal["turn", "case"]] = "turn"
    description: ClassVar[str] = "other output keys (e.g. route) equal the expected ones"
    Options = OutputMatchOptions

    def score_turn(self, ctx: TurnContext[OutputMatchOptions]) -> Score | None:
        expected_outputs = ctx.expected.expected_outputs
        key = ctx.options.key
        if key is not None:
            if key not in expected_outputs:
                return None
            keys = [key]
        else:
            keys = sorted(expected_outputs)
            if not keys:
                return None
        actual_outputs = ctx.actual.outputs
        parts: list[str] = []
        mismatched: list[str] = []
        for name in keys:
            expected = compact_json(expected_outputs[name])
            if name not in actual_outputs:
                mismatched.append(name)
                parts.append(f"{name}: missing, expected {expected}")
            elif json_equal(actual_outputs[name], expected_outputs[name]):
                parts.append(f"{name}: {compact_json(actual_outputs[name])} equals expected")
            else:
                mismatched.append(name)
                parts.append(f"{name}: {compact_json(actual_outputs[name])} != expected {expected}")
        value = 0.0 if mismatched else 1.0
        return Score(
            value=value,
            explanation="; ".join(parts) + f" -> {value:.1f}",
            details={
                "keys": keys,
                "mismatched": mismatched,
                "expected": {k: expected_outputs[k] for k in keys},
                "actual": {k: actual_outputs[k] for k in keys if k in actual_outputs},
            },
        )
