"""The check run of each `evaluate` job, kept in its row of the `jobs` table (store migration 0006): a part of
`JobQueue`.

The job records the check run it opens — `check_run_state` `opening` before the create request, `open` with
`check_run_id` after it — and `closed` once it is completed. Whoever completes it first claims it
(`claim_check_run_close`: open → closed in one update), so two workers never both complete it; a failed
completion gives it back (`reopen_check_run`). `open_check_runs` lists final jobs whose check run is still
open: what ended without its worker (cancelled while queued, failed by an expired lease, a completion GitHub
refused), for the sweeper (`_server/check_runs.py`). A cancelled job revived because its PR is back at its head
(`job_supersede.revive_if_newer`) starts with no check run: it is not final, so the sweeper leaves it alone, and
its worker opens a new run — or takes over, by its `external_id`, one the cancelled attempt left in progress.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalward.store.engine import read_transaction, write_transaction
from evalward.store.schema import JOB_FINAL_STATUSES, jobs_table

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from evalward.store.job_queue import ClaimedJob

CHECK_RUN_OPEN_STATES: tuple[str, ...] = ("opening", "open")


@dataclass(frozen=True)
class OpenCheckRun:
    """A final job whose check run was left `in_progress` (`check_run_id` None: find it by external_id)."""

    job_id: int
    kind: str
    status: str
    repo: str | None
    head_sha: str | None
    attempts: int
    last_error: str | None
    payload: dict[str, Any]
    check_run_id: int | None
    state: str


class JobCheckRuns:
    """The check-run columns of the jobs table (a mixin: `JobQueue` provides the engine)."""

    engine: Engine

    def record_check_run(self, job: ClaimedJob, check_run_id: int | None) -> None:
        """Note the job's check run: `opening` (None: the create request is about to be sent) or `open` with
        its id. Matched by (id, attempt) only, so a job cancelled meanwhile still gets its run closed."""
        from sqlalchemy import update

        j = jobs_table.c
        values: dict[str, Any] = {"check_run_state": "opening" if check_run_id is None else "open"}
        if check_run_id is not None:
            values["check_run_id"] = check_run_id
        with write_transaction(self.engine) as conn:
            conn.execute(update(jobs_table).where(j.id == job.id, j.attempts == job.attempt).values(**values))

    def claim_check_run_close(self, job_id: int) -> bool:
        """open/opening → closed; True for the one caller that changed it (it must now complete the run)."""
        from sqlalchemy import update

        j = jobs_table.c
        with write_transaction(self.engine) as conn:
            result = conn.execute(
                update(jobs_table)
                .where(j.id == job_id, j.check_run_state.in_(CHECK_RUN_OPEN_STATES))
                .values(check_run_state="closed")
            )
            return bool(result.rowcount)

    def reopen_check_run(self, job_id: int, state: str = "open") -> None:
        """closed → `state`: completing the run failed, the sweeper tries again later."""
        from sqlalchemy import update

        j = jobs_table.c
        with write_transaction(self.engine) as conn:
            conn.execute(
                update(jobs_table).where(j.id == job_id, j.check_run_state == "closed").values(check_run_state=state)
            )

    def check_run_closed(self, job_id: int) -> None:
        """The job's check run was completed (with its verdict): nothing is left to close."""
        from sqlalchemy import update

        j = jobs_table.c
        with write_transaction(self.engine) as conn:
            conn.execute(
                update(jobs_table)
                .where(j.id == job_id, j.check_run_state.in_(CHECK_RUN_OPEN_STATES))
                .values(check_run_state="closed")
            )

    def open_check_runs(self, *, limit: int = 20, job_id: int | None = None) -> list[OpenCheckRun]:
        """Final jobs (or job `job_id`, when it is final) whose check run is still open, oldest first."""
        from sqlalchemy import select

        j = jobs_table.c
        query = select(jobs_table).where(j.check_run_state.in_(CHECK_RUN_OPEN_STATES), j.status.in_(JOB_FINAL_STATUSES))
        if job_id is not None:
            query = query.where(j.id == job_id)
        query = query.order_by(j.id).limit(limit)
        with read_transaction(self.engine) as conn:
            rows = conn.execute(query).all()
        return [
            OpenCheckRun(
                job_id=int(r.id),
                kind=r.kind,
                status=r.status,
                repo=r.repo,
                head_sha=r.head_sha,
                attempts=int(r.attempts),
                last_error=r.last_error,
                payload=dict(r.payload or {}),
                check_run_id=int(r.check_run_id) if r.check_run_id is not None else None,
                state=r.check_run_state,
            )
            for r in rows
        ]
