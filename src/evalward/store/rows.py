"""What a row of the history database holds: the rows written for a run and its case results, and the
read models `Store` returns. Pure functions of the models; the SQL that writes and reads them is `Store`'s."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from evalward.model import CaseResult, RunResult
from evalward.redact import redact_model, redact_model_json
from evalward.store.comparability import comparability_key
from evalward.store.engine import JSONText
from evalward.store.row_shapes import ROWS_PER_INSERT as ROWS_PER_INSERT
from evalward.store.row_shapes import ItemKey as ItemKey
from evalward.store.row_shapes import case_columns, case_rows
from evalward.store.row_shapes import case_order_json as case_order_json
from evalward.store.row_shapes import unique_keys as unique_keys

RunStatus = Literal["running", "complete", "cancelled", "failed"]


class RunRow(BaseModel):
    """One line of `evalward runs`: a run's identity, context and counts, without its cases."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    run_id: str
    status: str
    repository: str | None
    commit: str | None
    branch: str | None
    pr_number: int | None
    shard_index: int | None
    shard_count: int | None
    group_id: str | None
    started_at: datetime | None
    finished_at: datetime | None
    passed: bool | None
    fingerprint: str
    comparability_key: str
    evalward_version: str
    planned: int
    recorded: int
    passes: int
    failures: int
    errors: int


class HistoryPoint(BaseModel):
    """One metric in one run: the mean score over the matching case results (one case's repetitions with
    `--case`, every case of the run without it)."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    run_id: str
    commit: str | None
    branch: str | None
    started_at: datetime | None
    metric: str
    eval_set_id: str | None
    case_id: str | None
    score: float | None
    """mean of the non-null scores; None when every score was null (not applicable or error)."""
    scored: int
    """number of non-null scores in the mean."""
    passes: int
    """number of case results whose metric status was `passed`."""
    results: int
    """number of case results (null scores included)."""


class ScoreRow(BaseModel):
    """One case-level metric score as stored (what the gate reads for a baseline)."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    eval_set_id: str
    case_id: str
    repetition: int
    metric: str
    score: float | None
    status: str


def run_columns(run: RunResult, status: str, *, eval_sets: bool = True) -> dict[str, Any]:
    """The runs row for `run` (without planned_count/created_at): run JSON without its cases and case
    summaries (and, with `eval_sets=False`, without its eval sets: for a writer that keeps the stored ones),
    secrets redacted like every row written (`evalward.redact`).

    The case summaries are not stored: each is a fold of the case's stored results, and `load_run` folds
    them again. A row holding them took ~600 bytes a case, all written as one value: a 100,000-case run's
    finish_run held ~250 MB of JSON text and its copies."""
    # Dumped once: the redaction check reads the JSON text the row stores (`engine.JSONText`, kept as it is).
    left_out: dict[str, Any] = {"cases": [], "case_summaries": [], "status": status}
    if not eval_sets:
        left_out["eval_sets"] = []
    run, text = redact_model_json(run.model_copy(update=left_out))
    run_json = JSONText(text)
    ctx = run.context
    return {
        "run_id": run.run_id,
        "status": status,
        "repository": ctx.repository,
        "commit_sha": ctx.commit,
        "branch": ctx.branch,
        "base_branch": ctx.base_branch,
        "base_sha": ctx.base_sha,
        "pr_number": ctx.pr_number,
        "merge_base": ctx.merge_base,
        "shard_index": ctx.shard_index,
        "shard_count": ctx.shard_count,
        "group_id": ctx.group_id,
        "fingerprint": run.fingerprint,
        "comparability_key": comparability_key(run),
        "evalward_version": run.evalward_version,
        "agent_kind": run.agent.kind if run.agent else None,
        "agent_target": run.agent.target if run.agent else None,
        "agent_config_hash": run.agent.config_hash if run.agent else None,
        "passed": run.passed if status != "running" else None,
        "repetitions": run.repetitions,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "run_json": run_json,
    }


def rows_of_case(
    run_id: str, case: CaseResult, recorded_at: datetime, encoded: bytes | None = None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The case_results row and the metric_scores rows of one case result (secrets redacted).

    `encoded`: the case's JSON when the caller has it and the case is already redacted
    (`redact.redact_encoded_model`, as the run pipeline records every result), stored as it is."""
    if encoded is None:
        dumped: dict[str, Any] = redact_model(case).model_dump(mode="json")
        return case_rows(run_id, *case_columns(dumped), dumped, recorded_at)
    return case_rows(run_id, *case_columns(case), JSONText(encoded.decode("utf-8")), recorded_at)


ROWS_PER_READ = 500
"""Case rows a streamed read fetches at once."""
