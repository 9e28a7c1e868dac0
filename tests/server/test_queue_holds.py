"""Holding a claimed job, releasing it with approval facts, and recording delivery GUIDs (SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from evalward.store import open_store
from evalward.store.engine import write_transaction
from evalward.store.job_queue import JobQueue, JobSpec
from evalward.store.schema import webhook_deliveries_table

SHA = "c" * 40


@pytest.fixture
def queue(db_url: str) -> Iterator[JobQueue]:
    store = open_store(db_url)
    yield JobQueue(store.engine, max_attempts=2)
    store.close()


def test_a_held_job_waits_uncounted_and_a_release_merges_the_approval(queue: JobQueue) -> None:
    job_id = queue.enqueue(
        JobSpec("evaluate", "e", {"verify_write_access": "dev", "pr_number": 1}, repo="o/r", head_sha=SHA)
    ).job_id
    claimed = queue.claim(lease_s=30)
    assert claimed is not None and claimed.attempt == 1
    assert queue.hold(claimed, "the pull request author is `dev`, whose permission on o/r is `read`")
    view = queue.get(job_id)
    assert view is not None and (view.status, view.attempts, view.lease_until) == ("held", 0, None)
    assert "`read`" in str(view.last_error)
    assert queue.claim(lease_s=30) is None  # held jobs are never handed out
    assert not queue.hold(claimed, "again")  # fenced: the claim is over

    assert queue.release_held("o/r", SHA, updates={"approval": "rerequest", "verify_write_access": None}) == [job_id]
    again = queue.claim(lease_s=30)
    assert again is not None and again.attempt == 1
    assert again.payload == {"pr_number": 1, "approval": "rerequest", "verify_write_access": None}


def test_a_trusted_enqueue_over_a_held_job_takes_its_payload(queue: JobQueue) -> None:
    held = queue.enqueue(JobSpec("evaluate", "e", {"verify_write_access": "", "a": 1}, status="held"))
    labeled = queue.enqueue(JobSpec("evaluate", "e", {"verify_write_access": "maintainer", "approval": "label"}))
    assert (labeled.job_id, labeled.released, labeled.status) == (held.job_id, True, "queued")
    claimed = queue.claim(lease_s=30)
    assert claimed is not None
    assert claimed.payload == {"verify_write_access": "maintainer", "approval": "label", "a": 1}


def test_delivery_guids_are_recorded_once_and_pruned_after_a_while(queue: JobQueue) -> None:
    assert queue.record_delivery("g-1", event="pull_request", action="opened", outcome="enqueued") is True
    assert queue.record_delivery("g-1", event="pull_request", action="opened", outcome="duplicate") is False
    assert queue.record_delivery("g-2", event="ping", action=None, outcome="ping") is True
    assert queue.recorded_deliveries(["g-1", "g-2", "g-3"]) == {"g-1", "g-2"}
    assert queue.recorded_deliveries([f"x-{i}" for i in range(1200)]) == set()  # chunked IN lists
    with write_transaction(queue.engine) as conn:
        conn.execute(
            webhook_deliveries_table.update()
            .where(webhook_deliveries_table.c.guid == "g-1")
            .values(received_at=datetime.now(UTC) - timedelta(days=7))
        )
    assert queue.prune_deliveries(timedelta(days=6)) == 1
    assert queue.recorded_deliveries(["g-1", "g-2"]) == {"g-2"}
