"""Regular expressions from eval files, matched with a time limit.

A pattern such as `^(a+)+$` backtracks exponentially on `'a' * 30 + 'b'`: with `re` it runs for minutes
and no agent timeout applies (scoring is evalward's own work). The `regex` package stops a match after
`MATCH_TIMEOUT_S`; the metric then fails for that case (`metric_error`, naming the pattern), and the run
goes on. `regex`'s default syntax (VERSION0) is the `re` syntax, so patterns mean what they meant.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import regex

MATCH_TIMEOUT_S = 1.0
"""Longest one match may take. Sane patterns match in microseconds even on megabytes of text."""


class PatternError(ValueError):
    """A pattern that does not compile; the message is `regex`'s, which names the position."""


class PatternTimeout(TimeoutError):
    """A match ran past `MATCH_TIMEOUT_S` (catastrophic backtracking)."""


@lru_cache(maxsize=512)
def compile_pattern(pattern: str) -> regex.Pattern[str]:
    """`pattern` compiled (cached); `PatternError` when it is not a valid regular expression."""
    import regex  # only runs that match patterns pay for its import

    try:
        return regex.compile(pattern)
    except regex.error as exc:
        raise PatternError(str(exc)) from exc


def _bounded(pattern: str, text: str, how: str) -> regex.Match[str] | None:
    compiled = compile_pattern(pattern)
    try:
        if how == "fullmatch":
            return compiled.fullmatch(text, timeout=MATCH_TIMEOUT_S)
        return compiled.search(text, timeout=MATCH_TIMEOUT_S)
    except TimeoutError as exc:
        shown = pattern if len(pattern) <= 80 else pattern[:79] + "…"
        raise PatternTimeout(
            f"regular expression {shown!r} did not finish within {MATCH_TIMEOUT_S:g} s on {len(text):,} "
            "characters (catastrophic backtracking: nested or overlapping repetition such as (a+)+)"
        ) from exc


def bounded_search(pattern: str, text: str) -> regex.Match[str] | None:
    """`re.search` semantics, at most `MATCH_TIMEOUT_S`; `PatternTimeout` past it."""
    return _bounded(pattern, text, "search")


def bounded_fullmatch(pattern: str, text: str) -> regex.Match[str] | None:
    """`re.fullmatch` semantics, at most `MATCH_TIMEOUT_S`; `PatternTimeout` past it."""
    return _bounded(pattern, text, "fullmatch")
