"""Which eval format a parsed document is, decided by its content (never by its file name).

Rules, first match wins:
1. an object with `evalward` → `native`;
2. an object with `eval_set_id` or `eval_cases` (or their camelCase forms, reported later as a problem)
   → `adk_evalset`;
   an object that is a pydantic-evals Dataset file (`is_pydantic_evals_dataset`) → `pydantic_evals`;
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

PYDANTIC_EVALS_DATASET_KEYS = ("$schema", "name", "cases", "evaluators", "report_evaluators")
"""The keys of a pydantic-evals `Dataset` file, as `Dataset.to_file` writes them (`$schema` in JSON only)."""
PYDANTIC_EVALS_CASE_KEYS = ("name", "inputs", "metadata", "expected_output", "evaluators")
"""The keys of one of its cases."""
_PYDANTIC_EVALS_MARKERS = ("$schema", "report_evaluators")
"""Keys only a pydantic-evals Dataset file has among the formats read: `to_file` writes `report_evaluators` in
both syntaxes and `$schema` in JSON."""


def detect_format(data: Any) -> EvalFormat | None:
    """The format of a parsed eval file (see the module docstring), or None when none fits."""
    if isinstance(data, dict):
        if "evalward" in data:
            return "native"
        if any(key in data for key in _ADK_SET_KEYS):
            return "adk_evalset"
        if is_pydantic_evals_dataset(data):
            return "pydantic_evals"
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


def is_pydantic_evals_dataset(data: dict[Any, Any]) -> bool:
    """Whether an object (neither native nor ADK) is a pydantic-evals Dataset file: it has a key only such files
    have (`$schema`, `report_evaluators`), or all its keys are a Dataset's and it has `evaluators`, or `cases`
    whose first item is a Dataset case (an object with `inputs` and only a case's keys).

    So a file `to_file` wrote is recognised even with a key misspelt or `cases` missing (the problem is then
    reported at its line), while an object with other keys (a native file without `evalward: 1`) is not."""
    if any(key in data for key in _PYDANTIC_EVALS_MARKERS):
        return True
    if not all(key in PYDANTIC_EVALS_DATASET_KEYS for key in data):
        return False
    if "evaluators" in data:
        return True
    cases = data.get("cases")
    if not isinstance(cases, list):
        return False
    if not cases:
        return True
    first = cases[0]
    return isinstance(first, dict) and "inputs" in first and all(key in PYDANTIC_EVALS_CASE_KEYS for key in first)


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
    "[{input, output: {expected_steps}}], multi-agent cases [{id, input, expected}], a pydantic-evals Dataset file "
    "{name, cases: [{name, inputs, expected_output, evaluators}], evaluators}, or an evalward file {evalward: 1}"
)
