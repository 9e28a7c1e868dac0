"""Workers: results and failures reach the queue; a cancelled job stops; shutdown releases what is running."""

from __future__ import annotations

import threading
import time

from evalward._server.worker import JobContext, RetryableJobError, Worker, WorkerOptions, WorkerPool
from evalward.store import open_store
from evalward.store.job_queue import JobQueue, JobSpec

FAST = WorkerOptions(lease_s=30, heartbeat_s=0.05, poll_s=0.01, max_per_repo=None)


def make_queue(url: str) -> JobQueue:
    return JobQueue(open_store(url).engine, max_attempts=2)


def test_results_failures_and_retries_are_recorded(sqlite_url: str) -> None:
    queue = make_queue(sqlite_url)
    calls: list[str] = []

    def handler(ctx: JobContext) -> dict[str, str]:
        calls.append(ctx.job.dedupe_key)
        if ctx.job.dedupe_key == "boom":
            raise ValueError("bad input")
        if ctx.job.dedupe_key == "flaky" and ctx.job.attempt == 1:
            raise RetryableJobError("network")
        return {"ok": ctx.job.dedupe_key}

    for key in ("ok", "boom", "flaky"):
        queue.enqueue(JobSpec("t", key, {}))
    worker = Worker(queue, {"t": handler}, FAST)
    while worker.run_once():
        pass
    jobs = {j.dedupe_key: (j.status, j.attempts, j.last_error) for j in queue.list_jobs()}
    assert jobs == {
        "ok": ("done", 1, None),
        "boom": ("failed", 1, "ValueError: bad input"),
        "flaky": ("done", 2, "RetryableJobError: network"),
    }
    assert calls == ["ok", "boom", "flaky", "flaky"]


def test_a_job_cancelled_while_running_stops_and_reports_nothing(sqlite_url: str) -> None:
    queue = make_queue(sqlite_url)
    job_id = queue.enqueue(JobSpec("evaluate", "e1", {"pr_number": 1}, repo="o/r", head_sha="1" * 40)).job_id
    started = threading.Event()
    stopped: list[bool] = []

    def handler(ctx: JobContext) -> dict[str, str]:
        started.set()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if ctx.aborted:
                stopped.append(True)
            ctx.check()
            time.sleep(0.01)
        return {"finished": "yes"}

    worker = Worker(queue, {"evaluate": handler}, FAST)
    thread = threading.Thread(target=worker.run_once)
    thread.start()
    assert started.wait(10)
    queue.cancel_pr_jobs("o/r", 1, keep_head_sha="2" * 40, reason="superseded by 222222222222")
    thread.join(10)
    assert stopped == [True]
    view = queue.get(job_id)
    assert view is not None and (view.status, view.run_id, view.last_error) == (
        "cancelled",
        None,
        "superseded by 222222222222",
    )


def test_shutdown_waits_for_a_quick_job_and_releases_a_slow_one(sqlite_url: str) -> None:
    queue = make_queue(sqlite_url)
    queue.enqueue(JobSpec("slow", "s", {}))
    running = threading.Event()

    def slow(ctx: JobContext) -> None:
        running.set()
        while True:
            ctx.check()
            time.sleep(0.01)

    pool = WorkerPool(queue, {"slow": slow}, FAST, size=1)
    pool.start()
    assert running.wait(10)
    pool.stop(grace_s=0.2)
    view = queue.list_jobs()[0]
    # Released: back in the queue, and the interrupted claim does not count as an attempt.
    assert (view.status, view.attempts, view.lease_until) == ("queued", 0, None)
