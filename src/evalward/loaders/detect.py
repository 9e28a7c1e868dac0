"""Which eval format a parsed document is, decided by its content (never by its file name).

Rules, first match wins:
1. an object with `evalward` → `native`;
2. an object with `eval_set_id` or `eval_cases` (or their camelCase forms, reported later as a problem)
   → `adk_evalset`;
3. a non-empty list whose first object has `name` and `data` → `adk_legacy_evalset`;
   whose first object has `query` → `adk_legacy_test`;
4. a non-empty list of objects where any `output`/`outputs` object has `expected_steps` →
   `langchain_benchmarks`;
5. a non-empty list whose first object has `expected` and `input` → `multi_agent`;
6. a non-empty list whose first object has `inputs` → `langsmith`;
7. anything else → None.
"""

from __future__ import annotations

from typing import Any

from evalward.model import EvalFormat

_ADK_SET_KEYS = ("eval_set_id", "eval_cases", "evalSetId", "evalCases")


def detect_format(data: Any) -> EvalFormat | None:
    """The format of a parsed eval file (see the module docstring), or None when none fits."""
    if isinstance(data, dict):
        if "evalward" in data:
            return "native"
        if any(key in data for key in _ADK_SET_KEYS):
            return "adk_evalset"
        return None
    if not isinstance(data, list) or not data:
        return None
    return detect_list_format(data[0], any_expected_steps=any(has_expected_steps(item) for item in data))


def detect_list_format(first: Any, *, any_expected_steps: bool) -> EvalFormat | None:
    """Rules 3-7 for a list whose first item is `first`, given whether any item `has_expected_steps` (a
    file read item by item knows the first item early and the rest only at its end)."""
    if not isinstance(first, dict):
        return None
    if "name" in first and "data" in first:
        return "adk_legacy_evalset"
    if "query" in first:
        return "adk_legacy_test"
    if any_expected_steps:
        return "langchain_benchmarks"
    if "expected" in first and "input" in first:
        return "multi_agent"
    if "inputs" in first:
        return "langsmith"
    return None


def has_expected_steps(item: Any) -> bool:
    """Whether `item`'s `output` or `outputs` object names `expected_steps` (rule 4)."""
    if not isinstance(item, dict):
        return False
    return any(isinstance(item.get(key), dict) and "expected_steps" in item[key] for key in ("output", "outputs"))


def describe_shape(data: Any) -> str:
    """A short account of what was found, for the "unrecognised format" problem."""
    if isinstance(data, dict):
        keys = ", ".join(repr(k) for k in list(data)[:8])
        return f"an object with keys {keys}" if keys else "an empty object"
    if isinstance(data, list):
        if not data:
            return "an empty list"
        first = data[0]
        if isinstance(first, dict):
            keys = ", ".join(repr(k) for k in list(first)[:8])
            return f"a list whose first item has keys {keys}" if keys else "a list whose first item is empty"
        return f"a list of {type(first).__name__}"
    return f"a {type(data).__name__}"


KNOWN_SHAPES = (
    "an ADK eval set {eval_set_id, eval_cases}, an ADK legacy list of turns [{query, ...}] or of "
    "conversations [{name, data}], LangSmith examples [{inputs, outputs}], langchain-benchmarks "
    "[{input, output: {expected_steps}}], multi-agent cases [{id, input, expected}], or an evalward file {evalward: 1}"
)
