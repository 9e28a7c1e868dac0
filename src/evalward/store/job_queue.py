"""The daemon's durable job queue: rows of the `jobs` table (store migrations 0002, 0006, 0007), nothing else.

Life of a job (`status`):

    held ──(label / re-request)──▶ queued ──claim──▶ running ──▶ done | failed | cancelled
     ▲                                ▲                 │
     │                                └── lease expired, released on shutdown, or a retryable failure
     └── the worker found the author has no write access (or could not find out): `hold`

- **Enqueue is idempotent.** `dedupe_key` is UNIQUE (`evaluate:{repo}:{head_sha}:{suite}` for PR runs), so
  a redelivered webhook or a double send finds the existing row and creates nothing. Enqueuing a trusted
  job over a `held` one releases it instead; a newer PR job over a head superseded or closed revives it (a
  reopen at that head, a force-push back to it: `job_supersede.py`).
- **A newer head supersedes.** A new PR job cancels the PR's open jobs at other heads in its own transaction.
  On PostgreSQL that transaction first takes `pg_advisory_xact_lock` on the PR (so does closing it), so two
  deliveries of one PR enqueued at once — a burst of resends after an outage — cannot each miss the other's
  uncommitted row and leave both heads running: the later one sees the earlier's job and cancels it. On
  SQLite the write lock serialises them already.
- **The newest push wins, not the newest delivery.** A PR job carries the PR's `updated_at` (migration 0007);
  one that arrives after a job of a newer push (or the PR's close) cancels nothing and is recorded `cancelled`
  at once, so a late redelivery of an old push never cancels the PR's real head (`job_supersede.py`).
- **Claim** takes the oldest claimable row — `queued`, or `running` whose lease has expired (its worker
  died) — in one write transaction. On PostgreSQL the candidates are read `FOR UPDATE SKIP LOCKED`, so
  workers on several hosts never wait for or take the same row; on SQLite the transaction's write lock
  (`BEGIN IMMEDIATE`) serialises claimers, so run one worker process there.
- **At most N running jobs per repository.** Before claiming a job of repository R the claimer counts R's
  running jobs with a live lease. On PostgreSQL it first takes `pg_try_advisory_xact_lock` on R, so two
  claimers cannot both see N−1 and both claim; a claimer that cannot get the lock skips R this time.
- **Fencing.** A claim increments `attempts`; heartbeats and the final update match `(id, attempts,
  status='running')`. A worker whose lease expired and whose job was re-claimed (or cancelled) updates
  no row, learns it lost the job, and stops without reporting — so a job is reported once.
- After `max_attempts` claims a job whose lease expires again is marked `failed` (`LEASE_EXPIRED`).
- **Check runs** (migration 0006): the check run each `evaluate` job opens is kept in its row, from
  `opening` to `closed` (`job_check_runs.py`).

Times come from the database's clock on PostgreSQL (`now()`), so hosts with skewed clocks agree on
leases; SQLite (one host) uses this process's UTC clock.

The queue also keeps the `webhook_deliveries` table: the GUID of every delivery the web role accepted
(`record_delivery`), so the start-up redelivery (`redeliver.py`) asks GitHub to resend only deliveries
that never reached us.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel
from sqlalchemy.exc import DataError

from evalward.store.engine import read_transaction, write_transaction
from evalward.store.job_check_runs import JobCheckRuns
from evalward.store.job_supersede import attempt_limit, cancel_open, lock_pr, newer_event, note_event_time
from evalward.store.job_supersede import revive_if_newer as revive
from evalward.store.schema import JOB_FINAL_STATUSES, JOB_OPEN_STATUSES, jobs_table, webhook_deliveries_table

if TYPE_CHECKING:
    from sqlalchemy import Connection, Engine

JobStatus = Literal["held", "queued", "running", "done", "failed", "cancelled"]
OPEN_STATUSES = JOB_OPEN_STATUSES
FINAL_STATUSES = JOB_FINAL_STATUSES
_CANDIDATES = 32
"""Rows looked at per claim; enough to skip past repositories that are at their limit."""
ERROR_MAX_CHARS = 4000
LEASE_EXPIRED = "its worker stopped heartbeating"
"""How the last error of a job failed by its expired lease begins."""

ValueRefused = DataError
"""What the database raises for a value it cannot store (a number out of its column's range, a NUL byte in
PostgreSQL text): the web role answers it as a bad request, not as an outage."""


@dataclass(frozen=True)
class JobSpec:
    """A job to enqueue."""

    kind: str
    dedupe_key: str
    payload: dict[str, Any]
    repo: str | None = None
    head_sha: str | None = None
    status: JobStatus = "queued"
    pr_number: int | None = None
    pr_updated_at: datetime | None = None
    """The PR's `updated_at` in the delivery (a PR job): orders the PR's pushes whatever order they arrive in."""


@dataclass(frozen=True)
class Enqueued:
    """What enqueue did: `created` False means the key existed (a redelivery); `released` a held job went queued (or,
    `revived`, a cancelled head; `job_supersede.py`); `superseded` why a new job was recorded `cancelled` at once."""

    job_id: int
    created: bool
    status: str
    released: bool = False
    revived: bool = False
    cancelled: list[int] = field(default_factory=list)
    superseded: str | None = None


@dataclass(frozen=True)
class ClaimedJob:
    """A job a worker holds; `attempt` is its fencing token."""

    id: int
    kind: str
    payload: dict[str, Any]
    repo: str | None
    head_sha: str | None
    attempt: int
    dedupe_key: str
    lease_until: datetime = field(compare=False)


class JobView(BaseModel):
    """A job as the API and dashboard show it."""

    id: int
    kind: str
    status: str
    repo: str | None
    head_sha: str | None
    attempts: int
    dedupe_key: str
    created_at: datetime
    updated_at: datetime
    lease_until: datetime | None
    last_error: str | None
    pr_number: int | None = None
    event: str | None = None
    run_id: str | None = None
    conclusion: str | None = None


def _pg(conn: Connection) -> bool:
    return conn.dialect.name == "postgresql"


def _now(conn: Connection) -> datetime:
    if _pg(conn):
        from sqlalchemy import text

        value: datetime = conn.execute(text("SELECT now()")).scalar_one()
        return value.astimezone(UTC)
    return datetime.now(UTC)


def _repo_lock_key(repo: str) -> int:
    """A stable signed 64-bit advisory-lock key per repository (first 8 bytes of SHA-256)."""
    return int.from_bytes(hashlib.sha256(b"evalward-job-repo:" + repo.encode()).digest()[:8], "big", signed=True)


def _view(row: Any) -> JobView:
    payload = row.payload or {}
    result = payload.get("result") or {}
    return JobView(
        id=row.id,
        kind=row.kind,
        status=row.status,
        repo=row.repo,
        head_sha=row.head_sha,
        attempts=row.attempts,
        dedupe_key=row.dedupe_key,
        created_at=row.created_at,
        updated_at=row.updated_at,
        lease_until=row.lease_until,
        last_error=row.last_error,
        pr_number=payload.get("pr_number"),
        event=payload.get("event"),
        run_id=result.get("run_id"),
        conclusion=result.get("conclusion"),
    )


class JobQueue(JobCheckRuns):
    """Every read and write of the jobs table (its check-run columns: `JobCheckRuns`). Thread-safe; several
    processes and hosts may share it."""

    def __init__(self, engine: Engine, *, max_attempts: int = 3) -> None:
        self.engine = engine
        self.max_attempts = max_attempts

    # -- producing ------------------------------------------------------------------------------

    def enqueue(self, spec: JobSpec, *, supersede: tuple[int, str] | None = None) -> Enqueued:
        """Insert the job unless its dedupe key exists; see the module docstring.

        With `supersede=(pr_number, reason)`, a newly inserted job cancels, in the same transaction, the
        open `evaluate` jobs of that PR in its repository at another head (`Enqueued.cancelled`) — unless the
        PR has a job of a newer push (by `spec.pr_updated_at`) or was closed after it: then it cancels nothing
        and is inserted `cancelled` (`Enqueued.superseded`; `job_supersede.py`). A `queued` spec over a `held`
        row releases it and takes the spec's payload (who approved it, and how).
        """
        from sqlalchemy import select, update
        from sqlalchemy.exc import IntegrityError

        j = jobs_table.c
        repo, pr = (spec.repo, supersede[0]) if supersede is not None and spec.repo is not None else (None, None)
        for _ in range(2):
            try:
                with write_transaction(self.engine) as conn:
                    if repo is not None and pr is not None:
                        lock_pr(conn, repo, pr)
                    existing = conn.execute(select(jobs_table).where(j.dedupe_key == spec.dedupe_key)).one_or_none()
                    now = _now(conn)
                    if existing is not None:
                        if repo is not None and pr is not None and supersede is not None:
                            back = revive(conn, existing, spec, repo, pr, supersede[1], now)
                            if back is not None:
                                return Enqueued(existing.id, False, spec.status, True, revived=True, cancelled=back)
                        if pr is not None and spec.pr_updated_at is not None:
                            note_event_time(conn, existing.id, pr, spec.pr_updated_at)
                        if existing.status == "held" and spec.status == "queued":
                            conn.execute(
                                update(jobs_table)
                                .where(j.id == existing.id, j.status == "held")
                                .values(
                                    status="queued",
                                    payload={**(existing.payload or {}), **spec.payload},
                                    updated_at=now,
                                )
                            )
                            return Enqueued(existing.id, created=False, status="queued", released=True)
                        return Enqueued(existing.id, created=False, status=existing.status)
                    stale = None
                    if repo is not None and pr is not None and spec.pr_updated_at is not None:
                        stale = newer_event(conn, repo, pr, head_sha=spec.head_sha, updated_at=spec.pr_updated_at)
                    job_id = self._insert(conn, spec, now, pr_number=pr, superseded=stale)
                    if stale is not None:
                        return Enqueued(job_id, created=True, status="cancelled", superseded=stale)
                    cancelled: list[int] = []
                    if repo is not None and pr is not None and supersede is not None:
                        cancelled = cancel_open(conn, repo, pr, spec.head_sha, supersede[1], now)
                    return Enqueued(job_id, created=True, status=spec.status, cancelled=cancelled)
            except IntegrityError:
                # Two deliveries raced on PostgreSQL; the other insert won. Read it on the next pass.
                continue
        raise RuntimeError(f"could not enqueue or find job {spec.dedupe_key!r}")  # pragma: no cover

    @staticmethod
    def _insert(
        conn: Connection, spec: JobSpec, now: datetime, *, pr_number: int | None, superseded: str | None
    ) -> int:
        """Insert the spec's row (`cancelled` with the reason when `superseded`); its id."""
        from sqlalchemy import insert

        j = jobs_table.c
        job_id = conn.execute(
            insert(jobs_table)
            .values(
                kind=spec.kind,
                payload=spec.payload,
                status="cancelled" if superseded is not None else spec.status,
                lease_until=None,
                attempts=0,
                repo=spec.repo,
                head_sha=spec.head_sha,
                dedupe_key=spec.dedupe_key,
                last_error=superseded,
                created_at=now,
                updated_at=now,
                pr_number=spec.pr_number if spec.pr_number is not None else pr_number,
                pr_updated_at=spec.pr_updated_at,
            )
            .returning(j.id)
        ).scalar_one()
        return int(job_id)

    def release_held(self, repo: str, head_sha: str, *, updates: Mapping[str, Any] | None = None) -> list[int]:
        """`held` → `queued` for the repository's jobs at `head_sha` (a maintainer approved); their ids.

        `updates` are merged into each released job's payload (how it was approved, whose access to check)."""
        from sqlalchemy import select, update

        j = jobs_table.c
        with write_transaction(self.engine) as conn:
            rows = conn.execute(
                select(j.id, j.payload).where(j.repo == repo, j.head_sha == head_sha, j.status == "held")
            ).all()
            now = _now(conn)
            for row in rows:
                conn.execute(
                    update(jobs_table)
                    .where(j.id == row.id, j.status == "held")
                    .values(status="queued", payload={**(row.payload or {}), **(updates or {})}, updated_at=now)
                )
        return [row.id for row in rows]

    def cancel_pr_jobs(
        self,
        repo: str,
        pr_number: int,
        *,
        keep_head_sha: str | None,
        reason: str,
        closed: JobSpec | None = None,
    ) -> list[int]:
        """Cancel the open `evaluate` jobs of PR `pr_number` whose head is not `keep_head_sha`; their ids.

        A running one is cancelled too: its worker's next heartbeat fails and it stops without reporting.
        `closed` (a `pull_request_closed` row with the close's `pr_updated_at`) records the close, so a push
        delivered after it starts nothing; a close older than a known push or reopen of the PR cancels nothing
        (its row is recorded `cancelled`, superseded).
        """
        from sqlalchemy import select

        with write_transaction(self.engine) as conn:
            lock_pr(conn, repo, pr_number)
            now = _now(conn)
            if closed is not None and closed.pr_updated_at is not None:
                stale = newer_event(conn, repo, pr_number, head_sha=None, updated_at=closed.pr_updated_at)
                known = conn.execute(
                    select(jobs_table.c.id).where(jobs_table.c.dedupe_key == closed.dedupe_key)
                ).first()
                if known is None:  # else a redelivery of the close: recorded already
                    self._insert(conn, closed, now, pr_number=pr_number, superseded=stale)
                if stale is not None:
                    return []
            return cancel_open(conn, repo, pr_number, keep_head_sha, reason, now)

    # -- consuming ------------------------------------------------------------------------------

    def claim(
        self, *, lease_s: float, max_per_repo: int | None = None, kinds: Sequence[str] | None = None
    ) -> ClaimedJob | None:
        """Claim the oldest claimable job (see the module docstring), or None when there is none."""
        from sqlalchemy import and_, func, or_, select, text, update

        j = jobs_table.c
        with write_transaction(self.engine) as conn:
            now = _now(conn)
            query = select(jobs_table).where(
                or_(j.status == "queued", and_(j.status == "running", j.lease_until < now))
            )
            if kinds is not None:
                query = query.where(j.kind.in_(list(kinds)))
            query = query.order_by(j.id).limit(_CANDIDATES)
            if _pg(conn):
                query = query.with_for_update(skip_locked=True)
            skipped: set[str] = set()
            for row in conn.execute(query).all():
                if row.status == "running" and row.attempts >= attempt_limit(row.payload, self.max_attempts):
                    conn.execute(
                        update(jobs_table)
                        .where(j.id == row.id)
                        .values(
                            status="failed",
                            lease_until=None,
                            updated_at=now,
                            last_error=f"{LEASE_EXPIRED} {row.attempts} times (lease expired)",
                        )
                    )
                    continue
                if row.repo is not None and max_per_repo is not None:
                    if row.repo in skipped:
                        continue
                    if (
                        _pg(conn)
                        and not conn.execute(
                            text("SELECT pg_try_advisory_xact_lock(:key)"), {"key": _repo_lock_key(row.repo)}
                        ).scalar_one()
                    ):
                        skipped.add(row.repo)
                        continue
                    running = conn.execute(
                        select(func.count()).where(
                            j.repo == row.repo, j.status == "running", j.lease_until >= now, j.id != row.id
                        )
                    ).scalar_one()
                    if running >= max_per_repo:
                        skipped.add(row.repo)
                        continue
                lease_until = now + timedelta(seconds=lease_s)
                attempt = row.attempts + 1
                conn.execute(
                    update(jobs_table)
                    .where(j.id == row.id)
                    .values(status="running", attempts=attempt, lease_until=lease_until, updated_at=now)
                )
                return ClaimedJob(
                    id=row.id,
                    kind=row.kind,
                    payload=dict(row.payload or {}),
                    repo=row.repo,
                    head_sha=row.head_sha,
                    attempt=attempt,
                    dedupe_key=row.dedupe_key,
                    lease_until=lease_until,
                )
        return None

    def _fenced(self, conn: Connection, job: ClaimedJob) -> Any:
        j = jobs_table.c
        return (j.id == job.id) & (j.attempts == job.attempt) & (j.status == "running")

    def heartbeat(self, job: ClaimedJob, *, lease_s: float) -> bool:
        """Extend the lease; False when the job is no longer ours (re-claimed or cancelled)."""
        from sqlalchemy import update

        with write_transaction(self.engine) as conn:
            now = _now(conn)
            result = conn.execute(
                update(jobs_table)
                .where(self._fenced(conn, job))
                .values(lease_until=now + timedelta(seconds=lease_s), updated_at=now)
            )
            return bool(result.rowcount)

    def complete(self, job: ClaimedJob, *, result: Mapping[str, Any] | None = None) -> bool:
        """Mark the job done (storing `result` in its payload); False when it was no longer ours."""
        return self._finish(job, status="done", result=result, error=None)

    def fail(self, job: ClaimedJob, error: str, *, retry: bool) -> bool:
        """Record a failure: back to `queued` when `retry` and attempts remain, else `failed`."""
        retry = retry and job.attempt < attempt_limit(job.payload, self.max_attempts)
        status = "queued" if retry else "failed"
        return self._finish(job, status=status, result=None, error=error)

    def release(self, job: ClaimedJob) -> bool:
        """Give the job back unfinished (shutdown): `queued`, and this claim does not count as an attempt."""
        from sqlalchemy import update

        with write_transaction(self.engine) as conn:
            result = conn.execute(
                update(jobs_table)
                .where(self._fenced(conn, job))
                .values(status="queued", lease_until=None, attempts=job.attempt - 1, updated_at=_now(conn))
            )
            return bool(result.rowcount)

    def hold(self, job: ClaimedJob, reason: str) -> bool:
        """`running` → `held` until a maintainer approves (label or re-run); the claim is not an attempt."""
        from sqlalchemy import update

        with write_transaction(self.engine) as conn:
            result = conn.execute(
                update(jobs_table)
                .where(self._fenced(conn, job))
                .values(
                    status="held",
                    lease_until=None,
                    attempts=job.attempt - 1,
                    last_error=reason[:ERROR_MAX_CHARS],
                    updated_at=_now(conn),
                )
            )
            return bool(result.rowcount)

    def _finish(self, job: ClaimedJob, *, status: str, result: Mapping[str, Any] | None, error: str | None) -> bool:
        from sqlalchemy import select, update

        j = jobs_table.c
        with write_transaction(self.engine) as conn:
            values: dict[str, Any] = {"status": status, "lease_until": None, "updated_at": _now(conn)}
            if error is not None:
                values["last_error"] = error[:ERROR_MAX_CHARS]
            if result is not None:
                payload = conn.execute(select(j.payload).where(self._fenced(conn, job))).scalar_one_or_none()
                if payload is None:
                    return False
                values["payload"] = {**payload, "result": dict(result)}
            changed = conn.execute(update(jobs_table).where(self._fenced(conn, job)).values(**values))
            return bool(changed.rowcount)

    def still_ours(self, job: ClaimedJob) -> bool:
        """Whether `job` is still running under this claim (a read: the lease is not extended)."""
        from sqlalchemy import select

        with read_transaction(self.engine) as conn:
            return conn.execute(select(jobs_table.c.id).where(self._fenced(conn, job))).first() is not None

    def running_attempts(self, job_ids: Iterable[int]) -> dict[int, int]:
        """{job id: claim number} of those of `job_ids` that are running (held by some worker)."""
        from sqlalchemy import select

        j = jobs_table.c
        wanted = sorted(set(job_ids))
        found: dict[int, int] = {}
        with read_transaction(self.engine) as conn:
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                rows = conn.execute(select(j.id, j.attempts).where(j.id.in_(chunk), j.status == "running")).all()
                found.update({int(r.id): int(r.attempts) for r in rows})
        return found

    # -- webhook deliveries -------------------------------------------------------------------------

    def record_delivery(self, guid: str, *, event: str, action: str | None, outcome: str) -> bool:
        """Remember an accepted delivery's GUID; False when it was already recorded (a redelivery)."""
        from sqlalchemy import insert, select
        from sqlalchemy.exc import IntegrityError

        d = webhook_deliveries_table.c
        try:
            with write_transaction(self.engine) as conn:
                if conn.execute(select(d.guid).where(d.guid == guid)).first() is not None:
                    return False
                conn.execute(
                    insert(webhook_deliveries_table).values(
                        guid=guid, event=event[:64], action=action[:64] if action else None, outcome=outcome[:32],
                        received_at=_now(conn),
                    )
                )  # fmt: skip
        except IntegrityError:  # the same GUID raced in on another connection
            return False
        return True

    def recorded_deliveries(self, guids: Iterable[str]) -> set[str]:
        """The subset of `guids` this database has recorded."""
        from sqlalchemy import select

        wanted = list(dict.fromkeys(guids))
        found: set[str] = set()
        d = webhook_deliveries_table.c
        with read_transaction(self.engine) as conn:
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                found.update(conn.execute(select(d.guid).where(d.guid.in_(chunk))).scalars())
        return found

    def prune_deliveries(self, older_than: timedelta) -> int:
        """Forget deliveries received more than `older_than` ago (GitHub redelivers only 3 days back)."""
        from sqlalchemy import delete

        d = webhook_deliveries_table.c
        with write_transaction(self.engine) as conn:
            result = conn.execute(delete(webhook_deliveries_table).where(d.received_at < _now(conn) - older_than))
            return int(result.rowcount or 0)

    # -- reading ----------------------------------------------------------------------------------

    def get(self, job_id: int) -> JobView | None:
        from sqlalchemy import select

        with read_transaction(self.engine) as conn:
            row = conn.execute(select(jobs_table).where(jobs_table.c.id == job_id)).one_or_none()
        return _view(row) if row is not None else None

    def list_jobs(
        self,
        *,
        status: str | None = None,
        repo: str | None = None,
        kinds: Iterable[str] | None = None,
        limit: int = 50,
    ) -> list[JobView]:
        """Jobs, newest first."""
        from sqlalchemy import select

        j = jobs_table.c
        query = select(jobs_table)
        if status is not None:
            query = query.where(j.status == status)
        if repo is not None:
            query = query.where(j.repo == repo)
        if kinds is not None:
            query = query.where(j.kind.in_(list(kinds)))
        with read_transaction(self.engine) as conn:
            rows = conn.execute(query.order_by(j.id.desc()).limit(limit)).all()
        return [_view(r) for r in rows]

    def context_for(self, repo: str, head_sha: str) -> dict[str, Any] | None:
        """The payload of the newest `evaluate` job at (repo, head_sha): the PR facts a re-run reuses."""
        from sqlalchemy import select

        j = jobs_table.c
        with read_transaction(self.engine) as conn:
            rows = conn.execute(
                select(j.payload)
                .where(j.repo == repo, j.head_sha == head_sha, j.kind == "evaluate")
                .order_by(j.id.desc())
                .limit(10)
            ).scalars()
            for payload in rows:
                if payload and payload.get("pr_number") is not None:
                    return dict(payload)
        return None

    def counts(self) -> dict[tuple[str, str], int]:
        """{(kind, status): number of jobs}, for /metrics."""
        from sqlalchemy import func, select

        j = jobs_table.c
        with read_transaction(self.engine) as conn:
            rows = conn.execute(select(j.kind, j.status, func.count()).group_by(j.kind, j.status)).all()
        return {(r[0], r[1]): int(r[2]) for r in rows}

    def repositories(self) -> list[str]:
        from sqlalchemy import select

        j = jobs_table.c
        with read_transaction(self.engine) as conn:
            return sorted(r for r in conn.execute(select(j.repo).distinct()).scalars() if r)
