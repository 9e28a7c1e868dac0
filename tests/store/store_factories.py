"""Small hand-built runs and case results for the store tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from evalward.model import (
    AgentTarget,
    CaseError,
    CaseResult,
    EvalSetInfo,
    MetricResult,
    MetricSpec,
    RunContext,
    RunResult,
)

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def eval_set_info(case_ids: list[str], *, set_id: str = "smoke", threshold: float = 0.8) -> EvalSetInfo:
    return EvalSetInfo(
        eval_set_id=set_id,
        format="native",
        content_hash=f"set-{set_id}-{len(case_ids)}",
        criteria=[MetricSpec(name="trajectory_f1", threshold=threshold), MetricSpec(name="response_match")],
        case_hashes={case_id: f"hash-{case_id}" for case_id in case_ids},
    )


def make_run(
    run_id: str,
    *,
    case_ids: list[str] | None = None,
    commit: str | None = "c0ffee",
    branch: str | None = "main",
    status: str = "running",
    threshold: float = 0.8,
    shard: tuple[int, int] | None = None,
    group_id: str | None = None,
    fingerprint: str = "fp-1",
    started: datetime = T0,
) -> RunResult:
    return RunResult(
        run_id=run_id,
        status=status,  # type: ignore[arg-type]
        passed=False,
        repetitions=1,
        started_at=started,
        agent=AgentTarget(kind="python", target="agents.support:agent", config_hash="cfg-1"),
        eval_sets=[eval_set_info(case_ids or ["a", "b"], threshold=threshold)],
        context=RunContext(
            repository="acme/support-bot",
            commit=commit,
            branch=branch,
            base_branch="main",
            shard_index=shard[0] if shard else None,
            shard_count=shard[1] if shard else None,
            group_id=group_id,
        ),
        evalward_version="0.1.0",
        fingerprint=fingerprint,
    )


def make_case(
    case_id: str,
    *,
    repetition: int = 0,
    passed: bool = True,
    score: float = 1.0,
    set_id: str = "smoke",
    error: bool = False,
) -> CaseResult:
    status = "error" if error else ("passed" if passed else "failed")
    return CaseResult(
        eval_set_id=set_id,
        case_id=case_id,
        repetition=repetition,
        status=status,  # type: ignore[arg-type]
        metric_results=[
            MetricResult(
                name="trajectory_f1",
                score=None if error else score,
                threshold=0.8,
                status="error" if error else ("passed" if passed else "failed"),
                explanation=f"LCS=1, precision=1/1={score:.3f}",
                details={"matched": [["lookup", "lookup"]]},
            ),
            MetricResult(name="response_match", score=0.5, status="informational"),
        ],
        error=CaseError(kind="timeout", message="turn 0 exceeded 30 s", turn=0) if error else None,
        latency_s=1.25,
        content_hash=f"hash-{case_id}",
        started_at=T0 + timedelta(seconds=repetition),
        finished_at=T0 + timedelta(seconds=repetition + 1),
    )
