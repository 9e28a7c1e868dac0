"""Plain-text renderings of model values shared by metric explanations and reports (no escaping here)."""

from __future__ import annotations

import json
import re
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


_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_TEMPLATE_TAG = re.compile(r"\{%.*?%\}|\{\{[^}]*\|[^}]*\}\}", re.DOTALL)


def template_placeholders(template: str) -> set[str]:
    """The `{{ name }}` placeholders of an instructions template (ADK's Jinja spelling, names only)."""
    return set(_PLACEHOLDER.findall(template))


def template_problem(template: str, required: tuple[str, ...]) -> str | None:
    """Why `template` cannot be filled (a missing required placeholder, Jinja logic), or None."""
    if _TEMPLATE_TAG.search(template):
        return "only {{ name }} placeholders are filled; Jinja tags ({% … %}) and filters (|) are not supported"
    missing = [name for name in required if name not in template_placeholders(template)]
    if missing:
        return "missing placeholder(s) " + ", ".join("{{ " + name + " }}" for name in missing)
    return None


def fill_template(template: str, values: dict[str, str]) -> str:
    """`template` with every `{{ name }}` of `values` replaced (unknown names are left as written)."""
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)
