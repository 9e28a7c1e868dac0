"""Two deliveries of one pull request enqueued at the same moment (a burst of resends after the web process was
down, benchmarks/daemon_under_fire.py) still leave one head running: the newer job cancels the other even when
both transactions are open at once. Before the per-PR lock, on PostgreSQL each transaction inserted its job,
looked for the PR's other open jobs, missed the other's uncommitted row, and both heads ran."""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from sqlalchemy import event

from evalward.store import open_store
from evalward.store.job_queue import JobQueue, JobSpec

REPO = "acme/agent"
HEADS = ("a" * 40, "b" * 40)


def spec(head: str) -> JobSpec:
    payload = {"repo": REPO, "pr_number": 7, "head_sha": head}
    return JobSpec(kind="evaluate", dedupe_key=f"evaluate:{REPO}:{head}:default", payload=payload, repo=REPO,
                   head_sha=head)  # fmt: skip


def test_two_heads_of_one_pr_enqueued_at_once_leave_one_open(db_url: str) -> None:
    # Each transaction, once it has inserted its job, waits (up to 2 s) for the other to have inserted too, so
    # without serialisation both go on to cancel the PR's other jobs before either has committed.
    both_inserted = threading.Barrier(2, timeout=2)

    def after_insert(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.lstrip().upper().startswith("INSERT INTO JOBS"):
            # Broken after 2 s: the other transaction waits for this one's commit (serialised).
            with contextlib.suppress(threading.BrokenBarrierError):
                both_inserted.wait()

    with open_store(db_url) as store:
        queue = JobQueue(store.engine)
        event.listen(store.engine, "after_cursor_execute", after_insert)
        results: dict[str, Any] = {}

        def deliver(head: str) -> None:
            results[head] = queue.enqueue(spec(head), supersede=(7, f"superseded by {head[:12]}"))

        threads = [threading.Thread(target=deliver, args=(head,)) for head in HEADS]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        event.remove(store.engine, "after_cursor_execute", after_insert)
        assert all(results[head].created for head in HEADS)
        jobs = {job.head_sha: job for job in queue.list_jobs()}
        assert sorted(job.status for job in jobs.values()) == ["cancelled", "queued"]
        [cancelled] = [job for job in jobs.values() if job.status == "cancelled"]
        # The one that committed last cancelled the other: its id is in that delivery's answer.
        assert any(cancelled.id in results[head].cancelled for head in HEADS)
