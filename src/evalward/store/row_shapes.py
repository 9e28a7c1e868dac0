"""The shapes of a run's rows, shared by the code that makes them (`rows`, in the run's process) and the code
that writes them (`writes`, maybe in the history writer process): plain Python, neither SQLAlchemy nor pydantic."""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from evalward.store.engine import JSONText

ItemKey = tuple[str, str, int]
"""(eval_set_id, case_id, repetition): one planned or recorded unit of work."""
CaseRows = tuple[dict[str, Any], list[dict[str, Any]]]
"""A case_results row and its metric_scores rows."""

ROWS_PER_INSERT = 5000
"""Rows a multi-row insert sends at once."""


def unique_keys(keys: Iterable[ItemKey]) -> list[ItemKey]:
    return list(dict.fromkeys((str(e), str(c), int(r)) for e, c, r in keys))


def case_order_json(keys: Iterable[ItemKey]) -> JSONText:
    """The runs row's `case_order` (the keys as JSON lists), written key by key: a large run's keys are made
    as they are read (`evalward.case_keys`) and never held as a million lists."""
    text = io.StringIO()
    text.write("[")
    for index, (eval_set_id, case_id, repetition) in enumerate(keys):
        text.write((", " if index else "") + json.dumps([eval_set_id, case_id, repetition]))
    text.write("]")
    return JSONText(text.getvalue())


def now() -> datetime:
    return datetime.now(UTC)


def case_rows(
    run_id: str, columns: dict[str, Any], scores: Sequence[tuple[str, float | None, str]], case_json: Any, at: datetime
) -> CaseRows:
    """The rows of one case result from its columns (`rows.case_columns`), its first score per metric name
    (name, score, status) and its JSON (a JSONText or a dict)."""
    row = {"run_id": run_id, **columns, "recorded_at": at, "case_json": case_json}
    key = {"run_id": run_id, "eval_set_id": columns["eval_set_id"], "case_id": columns["case_id"]}
    key["repetition"] = columns["repetition"]
    return row, [{**key, "metric": name, "score": score, "status": status} for name, score, status in scores]


def case_columns(case: Any) -> tuple[dict[str, Any], list[tuple[str, float | None, str]]]:
    """The case_results columns a case result fills (all but run_id, recorded_at and its JSON), and its metric
    scores as (name, score, status), the first of each name: a metric named twice keeps its first score in the
    table; the case JSON keeps both.

    `case` is a `CaseResult` (the run's process) or its JSON parsed (`model_dump(mode="json")`'s shape: the
    history writer process, which has no models and reads the columns from the JSON it stores). One reading
    for both, so neither parses what it already has."""
    usage, error = _field(case, "usage"), _field(case, "error")
    columns = {
        "eval_set_id": _field(case, "eval_set_id"),
        "case_id": _field(case, "case_id"),
        "repetition": _field(case, "repetition"),
        "status": _field(case, "status"),
        "content_hash": _field(case, "content_hash"),
        "must_pass": bool(_field(case, "must_pass")),
        "latency_s": _field(case, "latency_s"),
        "input_tokens": _field(usage, "input_tokens"),
        "output_tokens": _field(usage, "output_tokens"),
        "cost_usd": _field(usage, "cost_usd"),
        "error_kind": _field(error, "kind"),
        "started_at": _datetime(_field(case, "started_at")),
        "finished_at": _datetime(_field(case, "finished_at")),
    }
    scores: dict[str, tuple[str, float | None, str]] = {}
    for metric in _field(case, "metric_results") or ():
        name = _field(metric, "name")
        scores.setdefault(name, (name, _field(metric, "score"), _field(metric, "status")))
    return columns, list(scores.values())


def _field(value: Any, name: str) -> Any:
    """`value`'s `name` (a mapping's key or a model's attribute); None for a missing one or no value."""
    if value is None:
        return None
    if type(value) is dict:  # the writer process's parsed JSON: ~34 lookups a case, before the slower ABC check
        return value.get(name)
    return value.get(name) if isinstance(value, Mapping) else getattr(value, name, None)


def _datetime(value: datetime | str | None) -> datetime | None:
    # pydantic writes UTC as "Z", which datetime.fromisoformat reads from Python 3.11 on.
    return datetime.fromisoformat(value) if isinstance(value, str) else value
