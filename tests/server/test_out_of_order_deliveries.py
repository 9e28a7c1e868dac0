"""The newest push of a pull request wins, not the newest delivery: deliveries arrive out of order (GitHub's and the
daemon's start-up redelivery bring an old push's delivery back late; requests overtake each other), and before the
fix a late delivery of an older push cancelled the newer head's job, so the PR's real head was never evaluated
(benchmarks/daemon_under_fire.py saw it on up to 12 of 48 PRs a run). The order comes from the event's own time,
`pull_request.updated_at`, kept with each PR job (`store/job_supersede.py`, migration 0007).

Through the daemon on a socket (one worker where the test needs the check runs, none where it needs jobs to stay
queued), on SQLite and PostgreSQL: an older push delivered late is recorded cancelled at once, cancels nothing and
opens no check run; in order, equal or missing times keep the old rule; a closed PR's late push starts nothing and a
close older than a known reopen cancels nothing. Then the same on the queue alone with two deliveries enqueued at
once, and the migration's old rows.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from tests.server.daemon import REPO, Daemon, pr_event, start_daemon
from tests.store.old_schema import queued_job_at

from evalward.store import HEAD_REVISION, open_store, upgrade_database
from evalward.store.job_queue import JobQueue, JobSpec
from evalward.store.job_supersede import CLOSED_KIND

A, B, C = "a" * 40, "b" * 40, "c" * 40
T1, T2, T3, T4 = "2025-03-01T10:00:00Z", "2025-03-01T10:00:05Z", "2025-03-01T10:00:09Z", "2025-03-01T10:01:00Z"
T2_ELSEWHERE = "2025-03-01T12:00:05+02:00"
"""T2 written with another offset: compared as a time, not as text."""


def event(number: int, head: str, updated_at: str | None, *, action: str = "synchronize", **kw: Any) -> dict[str, Any]:
    """A `pull_request` delivery of PR `number` at `head`, GitHub having changed the PR at `updated_at` (None: the
    payload has no such field)."""
    payload = pr_event(number, head, kw.pop("author", "dev"), action=action, **kw)
    if updated_at is None:
        del payload["pull_request"]["updated_at"]
    else:
        payload["pull_request"]["updated_at"] = updated_at
    return payload


@contextlib.contextmanager
def queue_only(tmp_path: Path, caplog: pytest.LogCaptureFixture, db_url: str) -> Iterator[Daemon]:
    """The daemon without worker threads: jobs stay as the webhooks left them."""
    with start_daemon(tmp_path, caplog, db=db_url, workers=0, expect_tokens=False) as daemon:
        yield daemon


def status_of(daemon: Daemon, job_id: int) -> tuple[str, str | None]:
    job = daemon.queue.get(job_id)
    assert job is not None
    return job.status, job.last_error


def test_an_older_push_delivered_late_cancels_nothing_and_opens_no_check_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, db_url: str
) -> None:
    with start_daemon(tmp_path, caplog, db=db_url) as daemon:
        daemon.github.permissions[(REPO, "dev")] = "write"
        newer = daemon.deliver("pull_request", event(5, B, T2_ELSEWHERE))
        b_id = newer["jobs"][0]["id"]
        # Push A happened at T1, before B; its delivery arrives now (a redelivery, a resend after an outage).
        body = event(5, A, T1, action="opened")
        late = daemon.deliver("pull_request", body)
        assert late["cancelled"] == [] and late["duplicate"] is False
        [job] = late["jobs"]
        assert (job["created"], job["status"]) == (True, "cancelled")
        assert f"superseded by {B[:12]}" in late["note"]
        a = daemon.queue.get(job["id"])
        assert a is not None and (a.status, a.last_error, a.attempts) == ("cancelled", f"superseded by {B[:12]}", 0)
        # B's job was not cancelled: the worker evaluates it (as far as the clone, which points nowhere here).
        b = daemon.wait(b_id, ("done", "failed"))
        assert b.last_error is not None and not b.last_error.startswith("superseded")
        assert len(daemon.checks_on(B)) == 1
        # Delivered again (GitHub's manual redelivery: same body, new id): the same row, nothing cancelled.
        again = daemon.deliver("pull_request", body)
        assert again["duplicate"] is True and again["cancelled"] == []
        assert status_of(daemon, b_id) == (b.status, b.last_error)
        # A worker never claimed A: no check run on it, ever.
        assert daemon.checks_on(A) == [] and status_of(daemon, job["id"]) == ("cancelled", f"superseded by {B[:12]}")


def test_a_fork_s_late_push_posts_no_notice(tmp_path: Path, caplog: pytest.LogCaptureFixture, db_url: str) -> None:
    with start_daemon(tmp_path, caplog, db=db_url) as daemon:
        newer = daemon.deliver("pull_request", event(6, B, T2, fork=True))
        assert [j["status"] for j in newer["jobs"]] == ["held", "queued"]  # the job, and its notice
        late = daemon.deliver("pull_request", event(6, A, T1, fork=True))
        assert [j["status"] for j in late["jobs"]] == ["cancelled"] and late["cancelled"] == []
        daemon.wait(newer["jobs"][1]["id"], ("done",))  # B's notice: a check run asking for approval
        assert [j.head_sha for j in daemon.queue.list_jobs(kinds=["notice"])] == [B]
        assert daemon.checks_on(A) == [] and len(daemon.checks_on(B)) == 1
        assert status_of(daemon, newer["jobs"][0]["id"])[0] == "held"


def test_in_order_the_newer_push_cancels_the_older_as_before(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, db_url: str
) -> None:
    with queue_only(tmp_path, caplog, db_url) as daemon:
        first = daemon.deliver("pull_request", event(7, A, T1, action="opened"))["jobs"][0]["id"]
        second = daemon.deliver("pull_request", event(7, B, T2))
        assert second["cancelled"] == [first] and second["jobs"][0]["status"] == "queued"
        assert status_of(daemon, first) == ("cancelled", f"superseded by {B[:12]}")
        # A third push C, then B's delivery again: a redelivery of a known key changes nothing.
        third = daemon.deliver("pull_request", event(7, C, T3))
        assert third["cancelled"] == [second["jobs"][0]["id"]]
        again = daemon.deliver("pull_request", event(7, B, T2))
        assert again["duplicate"] is True and again["cancelled"] == []
        assert status_of(daemon, third["jobs"][0]["id"]) == ("queued", None)


def test_equal_or_missing_times_let_the_newest_delivery_win(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, db_url: str
) -> None:
    """GitHub's times are whole seconds: two pushes in one second tie. Rows from before migration 0007 and payloads
    without the field have none. Either way the order is unknown, and the newest delivery wins, as before."""
    cases = {
        11: (T1, T1),  # a tie
        12: (T2, None),  # the late delivery has no time
        13: (None, T1),  # the job already there has none (an old row)
    }
    with queue_only(tmp_path, caplog, db_url) as daemon:
        for number, (b_time, a_time) in cases.items():
            older, newer = f"{number:02d}" + A[2:], f"{number:02d}" + B[2:]  # job keys are per head, not per PR
            b_id = daemon.deliver("pull_request", event(number, newer, b_time))["jobs"][0]["id"]
            late = daemon.deliver("pull_request", event(number, older, a_time))
            assert late["cancelled"] == [b_id], number
            assert late["jobs"][0]["status"] == "queued", number
            assert status_of(daemon, b_id) == ("cancelled", f"superseded by {older[:12]}"), number


def test_a_closed_pr_s_late_push_starts_nothing_and_a_late_close_spares_a_reopened_head(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, db_url: str
) -> None:
    """Before the fix a push made before the close but delivered after it made a queued job on a closed PR. The close
    is now recorded (a `pull_request_closed` row), so the late push's job is recorded cancelled at once."""
    with queue_only(tmp_path, caplog, db_url) as daemon:
        opened = daemon.deliver("pull_request", event(21, A, T1, action="opened"))["jobs"][0]["id"]
        closed = event(21, A, T3, action="closed")
        answer = daemon.deliver("pull_request", closed)
        assert answer["cancelled"] == [opened] and answer["jobs"] == []
        assert status_of(daemon, opened) == ("cancelled", "pull request closed")
        [record] = daemon.queue.list_jobs(kinds=[CLOSED_KIND])
        assert (record.status, record.pr_number, record.head_sha) == ("done", 21, A)

        late = daemon.deliver("pull_request", event(21, B, T2))  # pushed at T2, before the close at T3
        assert late["cancelled"] == [] and [j["status"] for j in late["jobs"]] == ["cancelled"]
        assert status_of(daemon, late["jobs"][0]["id"]) == ("cancelled", "pull request closed")

        # Reopened at T4 with a head pushed while closed: newer than the close, so it runs.
        reopened = daemon.deliver("pull_request", event(21, C, T4, action="reopened"))
        assert reopened["jobs"][0]["status"] == "queued"
        # The close delivered again now (a redelivery): older than the reopen, it cancels nothing.
        again = daemon.deliver("pull_request", closed)
        assert again["cancelled"] == []
        assert status_of(daemon, reopened["jobs"][0]["id"]) == ("queued", None)
        assert len(daemon.queue.list_jobs(kinds=[CLOSED_KIND])) == 1

        # A close whose delivery arrives after the reopen's, never seen before: recorded, superseded, cancels nothing.
        other = event(21, A, "2025-03-01T10:00:30Z", action="closed")
        assert daemon.deliver("pull_request", other)["cancelled"] == []
        assert status_of(daemon, reopened["jobs"][0]["id"]) == ("queued", None)
        late_close = [j for j in daemon.queue.list_jobs(kinds=[CLOSED_KIND]) if j.status == "cancelled"]
        assert [j.last_error for j in late_close] == [f"superseded by {C[:12]}"]


def spec(head: str, updated_at: str | None) -> JobSpec:
    when = datetime.fromisoformat(updated_at) if updated_at else None
    payload = {"repo": REPO, "pr_number": 7, "head_sha": head, "pr_updated_at": updated_at}
    return JobSpec(kind="evaluate", dedupe_key=f"evaluate:{REPO}:{head}:default", payload=payload, repo=REPO,
                   head_sha=head, pr_number=7, pr_updated_at=when)  # fmt: skip


@pytest.mark.parametrize("first", [A, B])
def test_two_pushes_enqueued_at_once_leave_the_newer_open_whichever_starts_first(db_url: str, first: str) -> None:
    """The comparison runs under the PR's lock: on PostgreSQL a transaction that did not wait would miss the other's
    uncommitted row, and both heads' jobs would stay open. Each transaction, once it has inserted its job, waits (up
    to 2 s) for the other to have inserted too: without serialisation neither sees the other."""
    both_inserted = threading.Barrier(2, timeout=2)

    def after_insert(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.lstrip().upper().startswith("INSERT INTO JOBS"):
            with contextlib.suppress(threading.BrokenBarrierError):  # broken after 2 s: the other one waits
                both_inserted.wait()

    from sqlalchemy import event as sa_event

    with open_store(db_url) as store:
        queue = JobQueue(store.engine)
        sa_event.listen(store.engine, "after_cursor_execute", after_insert)
        results: dict[str, Any] = {}

        def deliver(head: str) -> None:
            results[head] = queue.enqueue(spec(head, T1 if head == A else T2), supersede=(7, f"superseded by {head}"))

        second = B if first == A else A
        threads = [threading.Thread(target=deliver, args=(head,)) for head in (first, second)]
        threads[0].start()
        time.sleep(0.1)  # the first one takes the lock (or SQLite's write lock) first
        threads[1].start()
        for thread in threads:
            thread.join(timeout=30)
        sa_event.remove(store.engine, "after_cursor_execute", after_insert)
        jobs = {job.head_sha: job for job in queue.list_jobs()}
        assert (jobs[A].status, jobs[B].status) == ("cancelled", "queued")
        assert jobs[A].last_error is not None and jobs[A].last_error.startswith("superseded by b")


def test_migration_0007_keeps_old_rows_which_have_no_time(db_url: str) -> None:
    from sqlalchemy import select

    from evalward.store.schema import jobs_table

    queued_job_at(
        db_url, "0006", payload={"pr_number": 7, "head_sha": B}, repo=REPO, sha=B, key=f"evaluate:{REPO}:{B}:default"
    )
    assert upgrade_database(db_url) == HEAD_REVISION == "0007"
    with open_store(db_url) as store:
        with store.engine.connect() as conn:
            row = conn.execute(select(jobs_table.c.pr_number, jobs_table.c.pr_updated_at)).one()
        assert tuple(row) == (None, None)
        queue = JobQueue(store.engine)
        # The old row's push has no time: the new delivery wins, as before the migration.
        done = queue.enqueue(spec(A, T1), supersede=(7, f"superseded by {A[:12]}"))
        assert done.status == "queued" and len(done.cancelled) == 1
        # Its own time is kept: a still older push delivered now is recorded cancelled at once.
        older = queue.enqueue(spec(C, "2025-03-01T09:00:00Z"), supersede=(7, f"superseded by {C[:12]}"))
        assert (older.status, older.superseded, older.cancelled) == ("cancelled", f"superseded by {A[:12]}", [])
        kept = queue.get(done.job_id)
        assert kept is not None and kept.status == "queued"
