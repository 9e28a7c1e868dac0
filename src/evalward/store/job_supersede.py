"""Which of a pull request's deliveries is the newest: by the time of the event, not by when it arrived.

A PR job cancels the PR's open jobs at other heads (`JobQueue.enqueue`). Deliveries can arrive out of order —
GitHub's manual redeliveries and the daemon's start-up redelivery (`_server/redeliver.py`) bring an old push's
delivery back after a newer push's, and concurrent requests overtake each other — so "the newest delivery
wins" would let an old head cancel the PR's real head, which is then never evaluated. A head SHA says nothing
about order; `pull_request.updated_at` does: GitHub sets it when it moves the head (and on any other change),
and every delivery of that event carries the same value. So each PR job keeps it (`jobs.pr_updated_at`,
migration 0007), and:

- A new PR job whose PR already has a job at another head with a strictly newer `updated_at` — open, done or
  failed, or cancelled for any reason but being superseded — cancels nothing and is itself recorded
  `cancelled` at once, "superseded by <that head>". A worker never claims it, so it opens no check run.
- A closed PR: the close is recorded too (a row of kind `pull_request_closed`, born `done`), so a push made
  before the close whose delivery comes after it starts nothing ("pull request closed"). A `reopened` event is
  newer than the close and runs as before. A close older than a known newer event cancels nothing.
- Equal times (GitHub's are whole seconds) or a missing one (rows from before migration 0007, a payload
  without the field): the old rule, the newest delivery wins.
- A delivery that finds its job's row (a redelivery, a label on the current head) moves the row's time forward,
  so the row says "this head was the PR's head as of then".

**A cancelled head comes back** when the PR's head is that commit again and the event is the newest known: a PR
reopened at the head its close cancelled, or a force-push back to a head a newer push superseded (H, K, H). Its
row is found by its dedupe key, so without this nothing would run (and in the second case K's job was cancelled by
the new push). A PR delivery whose job's row is `cancelled` "superseded by …" or "pull request closed" revives the
row (`revive_if_newer`) when both

- its `updated_at` is strictly newer than the row's — the time of the newest delivery that made or matched the row:
  a redelivery of that delivery (or of any older one) has the same or an older time and changes nothing — and
- no other head's job or close of the PR is newer (`newer_event`, as for a new job): an old event of that head
  delivered late (a label added before K was pushed) revives nothing.

Revived, the row is as a new job of this delivery: its payload (approval, who to confirm), status (`queued`, or
`held` for a fork), no lease, no error, the delivery's time, no check run (the worker opens a new one; a run the
old attempt left open has the same `external_id` and is taken over), and it cancels the PR's other open heads.
`attempts` is not set back: it is the fencing token, and the cancelled attempt's worker may still be running until
its next heartbeat fails — a reused number would let it pass as the new claim. The new life gets the full budget
instead: `attempt_base` in its payload says how many attempts came before (`attempt_limit`). Rows cancelled for
another reason (there is none today), and `done` or `failed` ones (a re-run is the label's or a re-request's
job), are not revived; nor are rows without a time (before migration 0007) or deliveries without one.

Cancelled-as-superseded rows are no evidence: they lost to another row, which is itself the evidence. The
callers hold the PR's lock (`lock_pr`) on PostgreSQL, so the comparison and the insert see every
other delivery of the PR that committed before; on SQLite the write lock serialises them.

A maintainer's re-run (`check_run`/`check_suite` rerequested) is not a PR delivery: it runs the head it
names, whatever is newer.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from evalward.store.schema import JOB_OPEN_STATUSES, jobs_table

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from evalward.store.job_queue import JobSpec

CLOSED_KIND = "pull_request_closed"
"""The kind of the row recording that a pull request was closed (born `done`; no worker handles it)."""
SUPERSEDED = "superseded by "
"""How the last error of a job cancelled by a newer head of its PR begins."""
CLOSED = "pull request closed"
"""The last error of a job cancelled because its PR was closed."""
ATTEMPT_BASE = "attempt_base"
"""In a revived job's payload: the attempts (claims) its earlier life used, which its budget does not count."""


def newer_event(
    conn: Connection, repo: str, pr_number: int, *, head_sha: str | None, updated_at: datetime
) -> str | None:
    """Why an event of PR `pr_number` at `updated_at` is stale — "superseded by <sha[:12]>" or "pull request
    closed" — when a strictly newer event of the PR is known; None when it is the newest known (or tied).

    `head_sha` is the new job's head: only other heads' jobs (and closes) count. None for a close: any head's
    job counts (a reopen may keep the head), and other closes do not (an older close has nothing left to do
    that a newer one did not do)."""
    from sqlalchemy import and_, not_, or_, select

    j = jobs_table.c
    kinds = ["evaluate"] if head_sha is None else ["evaluate", CLOSED_KIND]
    query = (
        select(j.kind, j.head_sha)
        .where(
            j.repo == repo,
            j.pr_number == pr_number,
            j.pr_updated_at > updated_at,
            j.kind.in_(kinds),
            not_(and_(j.status == "cancelled", j.last_error.is_not(None), j.last_error.startswith(SUPERSEDED))),
        )
        .order_by(j.pr_updated_at.desc(), j.id.desc())
        .limit(1)
    )
    if head_sha is not None:
        query = query.where(or_(j.kind == CLOSED_KIND, j.head_sha != head_sha))
    newest = conn.execute(query).first()
    if newest is None:
        return None
    if newest.kind == CLOSED_KIND:
        return CLOSED
    return f"{SUPERSEDED}{(newest.head_sha or '')[:12]}"


def note_event_time(conn: Connection, job_id: int, pr_number: int, updated_at: datetime) -> None:
    """A delivery matched job `job_id`'s row (same head): its head was the PR's head as of `updated_at` too, so the
    row's time moves forward to it (never back) — a close delivered late then sees the reopen that matched it."""
    from sqlalchemy import or_, update

    j = jobs_table.c
    conn.execute(
        update(jobs_table)
        .where(j.id == job_id, or_(j.pr_updated_at.is_(None), j.pr_updated_at < updated_at))
        .values(pr_number=pr_number, pr_updated_at=updated_at)
    )


def _pr_lock_key(repo: str, pr_number: int) -> int:
    """A stable signed 64-bit advisory-lock key per pull request (another prefix than the repositories' keys)."""
    digest = hashlib.sha256(f"evalward-job-pr:{repo}#{pr_number}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def lock_pr(conn: Connection, repo: str, pr_number: int) -> None:
    """Wait for the other transactions that supersede or cancel this PR's jobs (PostgreSQL; held until commit)."""
    if conn.dialect.name == "postgresql":
        from sqlalchemy import text

        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _pr_lock_key(repo, pr_number)})


def cancel_open(
    conn: Connection, repo: str, pr_number: int, keep_head_sha: str | None, reason: str, now: datetime
) -> list[int]:
    """Cancel the PR's open `evaluate` jobs at heads other than `keep_head_sha` (all when None); their ids.

    Matched on the payload's `pr_number`, not the 0007 column: jobs queued before that migration have none."""
    from sqlalchemy import select, update

    j = jobs_table.c
    rows = conn.execute(
        select(j.id, j.head_sha, j.payload).where(j.repo == repo, j.kind == "evaluate", j.status.in_(JOB_OPEN_STATUSES))
    ).all()
    ids = [
        r.id
        for r in rows
        if (r.payload or {}).get("pr_number") == pr_number and (keep_head_sha is None or r.head_sha != keep_head_sha)
    ]
    if ids:
        conn.execute(
            update(jobs_table)
            .where(j.id.in_(ids), j.status.in_(JOB_OPEN_STATUSES))
            .values(status="cancelled", lease_until=None, last_error=reason, updated_at=now)
        )
    return ids


def attempt_limit(payload: Mapping[str, Any] | None, max_attempts: int) -> int:
    """The claim number up to which a job may run: `max_attempts` after the attempts of its earlier life (a revived
    job keeps counting its claims — the fencing token — but gets a full budget)."""
    base = (payload or {}).get(ATTEMPT_BASE)
    return max_attempts + (base if isinstance(base, int) and base > 0 else 0)


def revive_if_newer(
    conn: Connection, row: Any, spec: JobSpec, repo: str, pr_number: int, reason: str, now: datetime
) -> list[int] | None:
    """Revive `row` (the existing row of `spec`'s dedupe key: id, status, attempts, last_error) when it is cancelled
    as superseded or by the close and `spec` is newer than the row and the PR's newest event (module docstring):
    the ids of the PR's other open heads it then cancels with `reason`; None when it stays as it is."""
    from sqlalchemy import update

    error = row.last_error or ""
    if row.status != "cancelled" or not (error.startswith(SUPERSEDED) or error == CLOSED):
        return None
    if spec.pr_updated_at is None or spec.kind != "evaluate":
        return None
    if newer_event(conn, repo, pr_number, head_sha=spec.head_sha, updated_at=spec.pr_updated_at) is not None:
        return None
    j = jobs_table.c
    payload = {**spec.payload, ATTEMPT_BASE: int(row.attempts)} if row.attempts else dict(spec.payload)
    revived = conn.execute(
        update(jobs_table)
        .where(j.id == row.id, j.status == "cancelled", j.pr_updated_at.is_not(None), j.pr_updated_at < spec.pr_updated_at)
        .values(status=spec.status, payload=payload, lease_until=None, last_error=None, updated_at=now,
                check_run_state=None, check_run_id=None, pr_number=pr_number, pr_updated_at=spec.pr_updated_at)
    )  # fmt: skip
    if not revived.rowcount:
        return None
    return cancel_open(conn, repo, pr_number, spec.head_sha, reason, now)
