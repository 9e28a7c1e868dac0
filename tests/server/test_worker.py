"""Workers: results and failures reach the queue; a cancelled job stops; shutdown releases what is running."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import pytest

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


def test_a_cancel_is_noticed_between_heartbeats_and_maintenance_runs_around_jobs(sqlite_url: str) -> None:
    queue = make_queue(sqlite_url)
    job_id = queue.enqueue(JobSpec("evaluate", "e2", {"pr_number": 2}, repo="o/r", head_sha="1" * 40)).job_id
    started = threading.Event()
    maintained: list[int | None] = []

    def handler(ctx: JobContext) -> None:
        started.set()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            ctx.check()
            time.sleep(0.01)

    # The lease is written every 30 s; whether the job is still ours is read every 0.05 s.
    options = WorkerOptions(lease_s=60, heartbeat_s=30, poll_s=0.01, max_per_repo=None, cancel_poll_s=0.05)
    worker = Worker(
        queue,
        {"evaluate": handler},
        options,
        maintenance=lambda: maintained.append(worker.current.id if worker.current else None),
    )
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    assert started.wait(10)
    assert maintained == [None]  # at start, before the first claim
    queue.cancel_pr_jobs("o/r", 2, keep_head_sha=None, reason="pull request closed")
    deadline = time.monotonic() + 10
    while len(maintained) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    worker.stop.set()
    thread.join(10)
    assert maintained[:2] == [None, None]  # and right after the job, which stopped well before its 30 s
    view = queue.get(job_id)
    assert view is not None and view.status == "cancelled"


def test_an_aborted_child_is_killed_with_its_whole_process_group(tmp_path: Path) -> None:
    from tests.server.chaos import alive, wait_until

    from evalward._server.worker import JobAborted
    from evalward._server.workspace import supervise

    pids = tmp_path / "pids"
    abort = threading.Event()
    ctx = JobContext(None, abort, "w", threading.Event())  # type: ignore[arg-type]
    script = f'sleep 60 & echo "$! $$" > {pids}.tmp && mv {pids}.tmp {pids}; wait'

    def abort_once_started() -> None:
        wait_until(pids.is_file, what="the shell's start")
        abort.set()

    threading.Thread(target=abort_once_started, daemon=True).start()
    with pytest.raises(JobAborted):
        supervise(
            ctx,
            ["/bin/sh", "-c", script],
            cwd=None,
            env={"PATH": "/usr/bin:/bin"},
            timeout_s=30,
            stderr=subprocess.DEVNULL,
        )
    for pid in map(int, pids.read_text().split()):  # the sleep, and the shell that started it
        wait_until(lambda pid=pid: not alive(pid), timeout_s=10, what=f"process {pid} being killed")


def test_stale_job_folders_are_removed_and_held_ones_kept(sqlite_url: str, tmp_path: Path) -> None:
    from tests.server.conftest import make_settings

    from evalward._server.evaluate import Handlers
    from evalward._server.github_access import GitHubAccess

    queue = make_queue(sqlite_url)
    held = queue.enqueue(JobSpec("evaluate", "held", {})).job_id
    gone = queue.enqueue(JobSpec("evaluate", "gone", {})).job_id
    assert queue.claim(lease_s=60) is not None  # `held` runs, attempt 1
    settings = make_settings(sqlite_url, work_dir=str(tmp_path / "work"))
    for name in (f"job-{held}-1-aaaa", f"job-{held}-0-bbbb", f"job-{gone}-1-cccc", f"job-{gone}-dddddddd", "notes"):
        (tmp_path / "work" / name).mkdir(parents=True)
    store = open_store(sqlite_url)
    handlers = Handlers(settings, store, queue, GitHubAccess(settings))
    removed = handlers.remove_stale_folders()
    assert sorted(removed) == sorted([f"job-{held}-0-bbbb", f"job-{gone}-1-cccc", f"job-{gone}-dddddddd"])
    assert sorted(p.name for p in (tmp_path / "work").iterdir()) == sorted([f"job-{held}-1-aaaa", "notes"])
