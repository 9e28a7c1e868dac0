"""Plain-text renderings of model values shared by metric explanations and reports (no escaping here)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

# One shared encoder: building a new one per call dominated the cost of rendering explanations.
_COMPACT = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(", ", ": "), default=str)


def compact_json(value: Any) -> str:
    """JSON with sorted keys, single spaces after separators, non-ASCII kept."""
    return _COMPACT.encode(value)


MAX_LISTED_IDS = 20
"""Ids an error lists (e.g. the case ids a selection could have named) before `… and N more`."""


def listed_ids(ids: Sequence[str]) -> str:
    """`'a', 'b', 'c'` — at most `MAX_LISTED_IDS` of them, then `… and N more`."""
    shown = ", ".join(repr(i) for i in ids[:MAX_LISTED_IDS])
    return shown + (f" … and {len(ids) - MAX_LISTED_IDS} more" if len(ids) > MAX_LISTED_IDS else "")


def format_call(name: str, args: dict[str, Any] | None) -> str:
    """`name(a=1, b="x")`; `name` alone when args are absent, `name()` when empty."""
    if args is None:
        return name
    inner = ", ".join(f"{key}={compact_json(value)}" for key, value in sorted(args.items()))
    return f"{name}({inner})"


def ratio(numerator: float, denominator: float, digits: int = 3) -> str:
    """`2/3=0.667`: the arithmetic behind a score, as explanations print it."""
    value = numerator / denominator if denominator else 0.0
    return f"{numerator:g}/{denominator:g}={value:.{digits}f}"
