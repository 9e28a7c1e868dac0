"""The durable job queue on SQLite and the live PostgreSQL: idempotent enqueue, claims, leases, fencing,
per-repository limits; and on PostgreSQL, several worker processes (one killed with SIGKILL mid-job)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from evalward.store import open_store
from evalward.store.engine import write_transaction
from evalward.store.job_queue import JobQueue, JobSpec
from evalward.store.schema import jobs_table

REPO_ROOT = Path(__file__).resolve().parents[2]


def spec(key: str, repo: str = "o/r", status: str = "queued", **payload: object) -> JobSpec:
    return JobSpec(kind="probe", dedupe_key=key, payload=dict(payload), repo=repo, head_sha="a" * 40, status=status)  # type: ignore[arg-type]


@pytest.fixture
def queue(db_url: str):  # type: ignore[no-untyped-def]
    store = open_store(db_url)
    yield JobQueue(store.engine, max_attempts=2)
    store.close()


def expire_leases(queue: JobQueue) -> None:
    """Move every running job's lease into the past (what a dead worker's lease looks like after lease_s)."""
    with write_transaction(queue.engine) as conn:
        conn.execute(
            jobs_table.update()
            .where(jobs_table.c.status == "running")
            .values(lease_until=datetime.now(UTC) - timedelta(seconds=1))
        )


def test_enqueue_is_idempotent_by_key_and_a_trusted_send_releases_a_held_job(queue: JobQueue) -> None:
    first = queue.enqueue(spec("k1", status="held"))
    again = queue.enqueue(spec("k1", status="held"))
    released = queue.enqueue(spec("k1"))
    assert (first.created, again.created, released.created) == (True, False, False)
    assert first.job_id == again.job_id == released.job_id
    assert (again.status, released.status, released.released) == ("held", "queued", True)
    assert len(queue.list_jobs()) == 1


def test_claim_runs_oldest_first_and_never_hands_out_a_held_or_claimed_job(queue: JobQueue) -> None:
    a = queue.enqueue(spec("a", repo="o/1")).job_id
    queue.enqueue(spec("h", repo="o/2", status="held"))
    b = queue.enqueue(spec("b", repo="o/3")).job_id
    first = queue.claim(lease_s=60)
    second = queue.claim(lease_s=60)
    assert (first and first.id, second and second.id) == (a, b)
    assert queue.claim(lease_s=60) is None


def test_at_most_n_running_jobs_per_repository(queue: JobQueue) -> None:
    a1 = queue.enqueue(spec("a1", repo="o/a")).job_id
    queue.enqueue(spec("a2", repo="o/a"))
    b1 = queue.enqueue(spec("b1", repo="o/b")).job_id
    # With N = 1: a1 runs, a2 must wait, so the next claim skips to b1.
    claimed = [queue.claim(lease_s=60, max_per_repo=1) for _ in range(3)]
    assert [c.id if c else None for c in claimed] == [a1, b1, None]
    assert claimed[0] is not None and queue.complete(claimed[0], result={"ok": 1})
    nxt = queue.claim(lease_s=60, max_per_repo=1)
    assert nxt is not None and nxt.dedupe_key == "a2"


def test_an_expired_lease_is_reclaimed_and_the_old_holder_is_fenced_off(queue: JobQueue) -> None:
    queue.enqueue(spec("k"))
    dead = queue.claim(lease_s=60)
    assert dead is not None and dead.attempt == 1
    assert queue.claim(lease_s=60) is None  # the lease is live
    expire_leases(queue)
    retry = queue.claim(lease_s=60)
    assert retry is not None and (retry.id, retry.attempt) == (dead.id, 2)
    # The first worker wakes up: its heartbeat and its result are refused, the new holder's accepted.
    assert not queue.heartbeat(dead, lease_s=60)
    assert not queue.complete(dead, result={"who": "dead"})
    assert queue.heartbeat(retry, lease_s=60)
    assert queue.complete(retry, result={"who": "retry"})
    view = queue.get(retry.id)
    assert view is not None and (view.status, view.attempts) == ("done", 2)


def test_a_job_whose_lease_expires_max_attempts_times_fails(queue: JobQueue) -> None:
    queue.enqueue(spec("k"))
    for _ in range(2):  # max_attempts = 2
        assert queue.claim(lease_s=60) is not None
        expire_leases(queue)
    assert queue.claim(lease_s=60) is None
    view = queue.list_jobs()[0]
    assert view.status == "failed"
    assert view.last_error == "its worker stopped heartbeating 2 times (lease expired)"


def test_fail_retries_while_attempts_remain_and_release_does_not_count(queue: JobQueue) -> None:
    queue.enqueue(spec("k"))
    job = queue.claim(lease_s=60)
    assert job is not None and queue.release(job)
    job = queue.claim(lease_s=60)
    assert job is not None and job.attempt == 1  # the released claim was not counted
    assert queue.fail(job, "clone failed", retry=True)
    job = queue.claim(lease_s=60)
    assert job is not None and job.attempt == 2
    assert queue.fail(job, "clone failed again", retry=True)  # attempts exhausted: failed for good
    view = queue.get(job.id)
    assert view is not None and (view.status, view.last_error) == ("failed", "clone failed again")


def test_cancel_stops_a_running_job_at_its_next_heartbeat(queue: JobQueue) -> None:
    old = JobSpec("evaluate", "e1", {"pr_number": 7}, repo="o/r", head_sha="1" * 40)
    new = JobSpec("evaluate", "e2", {"pr_number": 7}, repo="o/r", head_sha="2" * 40)
    other_pr = JobSpec("evaluate", "e3", {"pr_number": 8}, repo="o/r", head_sha="3" * 40)
    old_id = queue.enqueue(old).job_id
    running = queue.claim(lease_s=60)
    assert running is not None and running.id == old_id
    queue.enqueue(new)
    queue.enqueue(other_pr)
    assert queue.cancel_pr_jobs("o/r", 7, keep_head_sha="2" * 40, reason="superseded") == [old_id]
    assert not queue.heartbeat(running, lease_s=60)
    assert {j.dedupe_key: j.status for j in queue.list_jobs()} == {"e1": "cancelled", "e2": "queued", "e3": "queued"}


def test_context_for_finds_the_pr_facts_of_a_head(queue: JobQueue) -> None:
    queue.enqueue(JobSpec("evaluate", "e1", {"pr_number": 7, "base_ref": "main"}, repo="o/r", head_sha="1" * 40))
    assert queue.context_for("o/r", "1" * 40) == {"pr_number": 7, "base_ref": "main"}
    assert queue.context_for("o/r", "2" * 40) is None


# -- several processes on PostgreSQL ---------------------------------------------------------------------------


def start_workers(
    db_url: str, logs: Path, count: int, *, lease_s: float, heartbeat_s: float
) -> list[subprocess.Popen[bytes]]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return [
        subprocess.Popen(
            [sys.executable, "-m", "tests.server.queue_worker", db_url, str(logs), str(lease_s), str(heartbeat_s)],
            cwd=REPO_ROOT,
            env=env,
        )
        for _ in range(count)
    ]


def wait_for(condition, timeout_s: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def lines(path: Path) -> list[list[str]]:
    return [line.split() for line in path.read_text().splitlines()] if path.exists() else []


def stop_all(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.postgres
def test_three_worker_processes_run_200_jobs_exactly_once(pg_url: str, tmp_path: Path) -> None:
    store = open_store(pg_url)
    queue = JobQueue(store.engine)
    ids = {queue.enqueue(spec(f"job-{i}", repo=f"o/r{i % 7}", sleep_s=0.005)).job_id for i in range(200)}
    procs = start_workers(pg_url, tmp_path, 3, lease_s=30, heartbeat_s=5)
    try:
        wait_for(
            lambda: len(lines(tmp_path / "done.log")) >= 200 and not queue.list_jobs(status="running"), 120, "200 jobs"
        )
    finally:
        stop_all(procs)
    done = Counter(int(parts[1]) for parts in lines(tmp_path / "done.log"))
    started = Counter(int(parts[1]) for parts in lines(tmp_path / "start.log"))
    assert set(done) == ids and set(done.values()) == {1}
    assert set(started.values()) == {1}
    assert {j.status for j in queue.list_jobs(limit=500)} == {"done"}
    # Every process took part (200 jobs, 3 claimers polling every 50 ms).
    assert len({parts[2] for parts in lines(tmp_path / "done.log")}) == 3
    store.close()


@pytest.mark.postgres
def test_a_job_of_a_worker_killed_mid_job_is_retried_and_completes(pg_url: str, tmp_path: Path) -> None:
    store = open_store(pg_url)
    queue = JobQueue(store.engine)
    ids = {queue.enqueue(spec(f"job-{i}", repo=f"o/r{i}", sleep_s=1.0)).job_id for i in range(6)}
    procs = start_workers(pg_url, tmp_path, 3, lease_s=2.0, heartbeat_s=0.3)
    try:
        wait_for(lambda: len(lines(tmp_path / "start.log")) >= 1, 60, "a job to start")
        _, victim_job, victim_pid = lines(tmp_path / "start.log")[0]
        victim = next(p for p in procs if p.pid == int(victim_pid))
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        wait_for(lambda: {int(p[1]) for p in lines(tmp_path / "done.log")} == ids, 90, "every job to complete")
    finally:
        stop_all(procs)
    done = Counter(int(parts[1]) for parts in lines(tmp_path / "done.log"))
    assert set(done.values()) == {1}
    starts = [parts for parts in lines(tmp_path / "start.log") if parts[1] == victim_job]
    # Started by the killed worker, then once more by a survivor after the lease expired.
    assert [p[2] == victim_pid for p in starts] == [True, False]
    view = queue.get(int(victim_job))
    assert view is not None and (view.status, view.attempts) == ("done", 2)
    store.close()
