"""Fold metrics scored outside `score_case` (judges, step-by-step evaluation) into a `CaseResult`.

Rules (the same as `metrics.scoring` for a case, applied to the merged list):
1. A new case-level result replaces an existing one of the same name, else it is appended; per-turn
   results are appended to their turn's `metric_results` (replacing the same name).
2. Status: an existing error (agent failure, metric error) stays; else a new `error` (e.g. judge_error)
   makes the case `error`; else `failed` if any metric failed; else `passed` if any passed; else `failed`
   ("no gating metric applied" — never a silent pass).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from evalward.model import CaseError, CaseResult, CaseStatus, MetricResult


def _replace_or_append(existing: Sequence[MetricResult], new: Sequence[MetricResult]) -> list[MetricResult]:
    by_name = {r.name: r for r in new}
    merged = [by_name.pop(r.name, r) for r in existing]
    merged.extend(r for r in new if r.name in by_name)
    return merged


def merge_metric_results(
    result: CaseResult,
    case_level: Sequence[MetricResult],
    turn_level: Mapping[int, Sequence[MetricResult]] | None = None,
    error: CaseError | None = None,
) -> CaseResult:
    """`result` with the new results merged and its status recomputed (module docstring)."""
    metrics = _replace_or_append(result.metric_results, case_level)
    invocations = [
        turn.model_copy(update={"metric_results": _replace_or_append(turn.metric_results, turn_level[turn.turn])})
        if turn_level and turn.turn in turn_level
        else turn
        for turn in result.invocations
    ]
    status: CaseStatus
    kept_error = result.error or error
    if kept_error is not None or any(r.status == "error" for r in metrics):
        status = "error"
        if kept_error is None:
            message = "; ".join(f"{r.name}: {r.explanation}" for r in metrics if r.status == "error")
            kept_error = CaseError(kind="metric_error", message=message)
    elif any(r.status == "failed" for r in metrics):
        status = "failed"
    elif any(r.status == "passed" for r in metrics):
        status = "passed"
    else:
        status = "failed"
    return result.model_copy(
        update={"metric_results": metrics, "invocations": invocations, "status": status, "error": kept_error}
    )
