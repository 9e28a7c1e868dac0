"""Hand-built runs for the gate tests, made with evalward.model constructors only."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Literal

from evalward.model import (
    CaseError,
    CaseResult,
    EvalSetInfo,
    MetricResult,
    MetricSpec,
    RunResult,
    Usage,
)

SET = "s"
STARTED = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


def result(
    case_id: str,
    scores: Mapping[str, float | None],
    *,
    repetition: int = 0,
    threshold: float | None = None,
    higher_is_better: bool = True,
    errored: bool = False,
    must_pass: bool = False,
    content_hash: str | None = None,
    cost: float | None = None,
    latency: float | None = None,
    eval_set_id: str = SET,
) -> CaseResult:
    """One case × repetition. Status: `error` if errored; else passed when every thresholded score meets it
    (or, without thresholds, when every score is ≥ 0.5)."""
    metric_results = []
    passed = True
    for name, score in scores.items():
        if score is None:
            status = "not_applicable"
        elif threshold is None:
            status = "informational"
            passed = passed and score >= 0.5
        else:
            ok = score >= threshold if higher_is_better else score <= threshold
            status = "passed" if ok else "failed"
            passed = passed and ok
        metric_results.append(
            MetricResult(name=name, score=score, threshold=threshold, status=status, higher_is_better=higher_is_better)
        )
    return CaseResult(
        eval_set_id=eval_set_id,
        case_id=case_id,
        repetition=repetition,
        status="error" if errored else ("passed" if passed else "failed"),
        metric_results=[] if errored else metric_results,
        error=CaseError(kind="timeout", message="turn 0 exceeded 30s") if errored else None,
        must_pass=must_pass,
        content_hash=content_hash if content_hash is not None else f"hash-{case_id}",
        usage=Usage(cost_usd=cost) if cost is not None else None,
        latency_s=latency,
    )


def reps(case_id: str, metric: str, values: Sequence[float], **kwargs: object) -> list[CaseResult]:
    """One result per repetition, scoring `metric` with each value in turn."""
    return [
        result(case_id, {metric: v}, repetition=i, **kwargs)  # type: ignore[arg-type]
        for i, v in enumerate(values)
    ]


def run(
    run_id: str,
    cases: Sequence[CaseResult],
    *,
    repetitions: int = 1,
    listed: Sequence[str] | None = None,
    criteria: Sequence[MetricSpec] = (),
    status: Literal["running", "complete", "cancelled", "failed"] = "complete",
) -> RunResult:
    """A run over one eval set `s`; `listed` defaults to the case ids present (so nothing is missing)."""
    ids = sorted({c.case_id for c in cases}) if listed is None else list(listed)
    info = EvalSetInfo(
        eval_set_id=SET,
        format="native",
        content_hash="set-hash",
        criteria=list(criteria),
        case_hashes={case_id: f"hash-{case_id}" for case_id in ids},
    )
    return RunResult(
        run_id=run_id,
        status=status,
        passed=all(c.status == "passed" for c in cases),
        repetitions=repetitions,
        started_at=STARTED,
        eval_sets=[info],
        cases=list(cases),
    )


def binary_pair(n: int, down: int, up: int, metric: str = "m") -> tuple[RunResult, RunResult]:
    """n cases at k = 1: `down` go pass → fail, `up` go fail → pass, the rest pass on both sides."""
    base: list[CaseResult] = []
    cur: list[CaseResult] = []
    for i in range(n):
        case_id = f"c{i:02d}"
        before, after = 1.0, 1.0
        if i < down:
            after = 0.0
        elif i < down + up:
            before = 0.0
        base.append(result(case_id, {metric: before}))
        cur.append(result(case_id, {metric: after}))
    return run("base", base), run("head", cur)
