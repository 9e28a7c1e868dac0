"""Response metrics: exact, contains, regex, ROUGE-1 and exact match of other output keys.

Text normalisation for `response_exact` and `response_contains` (`normalize_text`): NFKC, trim,
collapse every run of whitespace to one space, and with `casefold: true` case-fold. A missing response
counts as `""`. Every metric here scores one turn and is binary (1.0 / 0.0) except `response_rouge1`.
"""

from __future__ import annotations

import unicodedata
from typing import Any, ClassVar, Literal

from evalward.metrics.base import Metric, Score, TurnContext
from evalward.metrics.patterns import PatternError, bounded_fullmatch, bounded_search, compile_pattern
from evalward.metrics.rouge import TOKENIZERS, TokenizerName, rouge1, tokenize
from evalward.model import MetricSpec
from evalward.model.text import compact_json


def normalize_text(text: str, casefold: bool = False) -> str:
    """NFKC, trim, collapse whitespace runs to one space, optionally case-fold."""
    normalized = " ".join(unicodedata.normalize("NFKC", text).split())
    return normalized.casefold() if casefold else normalized


def _quote(text: str, limit: int = 80) -> str:
    """A JSON-quoted, shortened rendering of `text` for explanations."""
    shown = text if len(text) <= limit else text[: limit - 1] + "…"
    return compact_json(shown)


def _unknown(options: dict[str, Any], known: tuple[str, ...]) -> list[str]:
    return [f"unknown option {key!r} (known: {', '.join(known) or 'none'})" for key in options if key not in known]


def _check_bool(options: dict[str, Any], key: str) -> list[str]:
    if key in options and not isinstance(options[key], bool):
        return [f"{key}: expected true or false, found {options[key]!r}"]
    return []


class ResponseExact(Metric):
    """1.0 when the normalised response equals the normalised `expected_response`, else 0.0.

    Normalisation: NFKC, trim, collapse whitespace; with `casefold: true` also case-fold.
    Not applicable when the turn has no `expected_response`. Options: `casefold` (bool, default false).
    """

    name: ClassVar[str] = "response_exact"
    scope: ClassVar[Literal["turn", "case"]] = "turn"
    description: ClassVar[str] = "normalised response equals the expected response"

    _OPTIONS: ClassVar[tuple[str, ...]] = ("casefold",)

    def check_options(self, spec: MetricSpec) -> list[str]:
        return _unknown(spec.options, self._OPTIONS) + _check_bool(spec.options, "casefold")

    def score_turn(self, ctx: TurnContext) -> Score | None:
        if ctx.expected.expected_response is None:
            return None
        casefold = ctx.spec.options.get("casefold") is True
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

    _OPTIONS: ClassVar[tuple[str, ...]] = ("text", "texts", "mode", "casefold")

    def check_options(self, spec: MetricSpec) -> list[str]:
        options = spec.options
        problems = _unknown(options, self._OPTIONS) + _check_bool(options, "casefold")
        if "text" in options and "texts" in options:
            problems.append("give either text or texts, not both")
        if "text" in options and not isinstance(options["text"], str):
            problems.append(f"text: expected a string, found {options['text']!r}")
        if "texts" in options:
            texts = options["texts"]
            if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
                problems.append(f"texts: expected a list of strings, found {texts!r}")
            elif not texts:
                problems.append("texts: expected at least one string, found an empty list")
        if options.get("mode", "all") not in ("all", "any"):
            problems.append(f"mode: expected 'all' or 'any', found {options['mode']!r}")
        return problems

    def score_turn(self, ctx: TurnContext) -> Score | None:
        options = ctx.spec.options
        if "text" in options:
            raw = [str(options["text"])]
        elif "texts" in options:
            raw = [str(t) for t in options["texts"]]
        elif ctx.expected.expected_response is not None:
            raw = [ctx.expected.expected_response]
        else:
            return None
        casefold = options.get("casefold") is True
        mode = "any" if options.get("mode") == "any" else "all"
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


class ResponseRegex(Metric):
    """1.0 when the regular expression `pattern` matches the response, else 0.0.

    `re.search` by default, `re.fullmatch` with `fullmatch: true`; applied to the raw response (a missing
    response is `""`), without normalisation, so the pattern sees exactly what the agent said.
    Always applicable (the pattern is the expectation). Options: `pattern` (required), `fullmatch` (bool).
    """

    name: ClassVar[str] = "response_regex"
    scope: ClassVar[Literal["turn", "case"]] = "turn"
    description: ClassVar[str] = "response matches a regular expression (search or fullmatch)"

    _OPTIONS: ClassVar[tuple[str, ...]] = ("pattern", "fullmatch")

    def check_options(self, spec: MetricSpec) -> list[str]:
        options = spec.options
        problems = _unknown(options, self._OPTIONS) + _check_bool(options, "fullmatch")
        pattern = options.get("pattern")
        if pattern is None:
            problems.append("pattern: required, found nothing")
        elif not isinstance(pattern, str):
            problems.append(f"pattern: expected a string, found {pattern!r}")
        else:
            try:
                compile_pattern(pattern)
            except PatternError as error:
                problems.append(f"pattern: not a valid regular expression ({error}): {pattern!r}")
        return problems

    def score_turn(self, ctx: TurnContext) -> Score | None:
        pattern = str(ctx.spec.options["pattern"])
        fullmatch = ctx.spec.options.get("fullmatch") is True
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

    _OPTIONS: ClassVar[tuple[str, ...]] = ("tokenizer", "variant")

    def check_options(self, spec: MetricSpec) -> list[str]:
        options = spec.options
        problems = _unknown(options, self._OPTIONS)
        if options.get("tokenizer", "unicode") not in TOKENIZERS:
            problems.append(f"tokenizer: expected 'unicode' or 'default', found {options['tokenizer']!r}")
        if options.get("variant", "f") not in ("f", "p", "r"):
            problems.append(f"variant: expected 'f', 'p' or 'r', found {options['variant']!r}")
        return problems

    def score_turn(self, ctx: TurnContext) -> Score | None:
        if ctx.expected.expected_response is None:
            return None
        tokenizer: TokenizerName = "default" if ctx.spec.options.get("tokenizer") == "default" else "unicode"
        variant = str(ctx.spec.options.get("variant", "f"))
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

    _OPTIONS: ClassVar[tuple[str, ...]] = ("key",)

    def check_options(self, spec: MetricSpec) -> list[str]:
        problems = _unknown(spec.options, self._OPTIONS)
        key = spec.options.get("key")
        if key is not None and (not isinstance(key, str) or not key):
            problems.append(f"key: expected a non-empty string, found {key!r}")
        return problems

    def score_turn(self, ctx: TurnContext) -> Score | None:
        expected_outputs = ctx.expected.expected_outputs
        key = ctx.spec.options.get("key")
        if key is not None:
            if key not in expected_outputs:
                return None
            keys = [str(key)]
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
