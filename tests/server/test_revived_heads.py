"""A PR whose current head's job was cancelled runs that head again: closed and reopened at the same head, or
force-pushed back to an earlier head (H, K, H). The head's job is keyed by the head, so the new delivery finds the
cancelled row; before the fix nothing ran and the PR showed no evalward check for its head (in the second case the
new push had also cancelled K's job: no head was evaluated). Now a delivery newer than the row and than everything
else known of the PR revives it (`store/job_supersede.py`); a late or repeated delivery of an older event does not.

Through the daemon on a socket (no worker where jobs must stay as the webhooks left them, then one worker on the
same database to show the revived job is claimed and opens a fresh check run), on SQLite and PostgreSQL; then the
queue alone for the fencing token and the attempt budget of a revived job.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from tests.server.conftest import delivery_headers
from tests.server.daemon import REPO, Daemon, start_daemon
from tests.server.test_out_of_order_deliveries import event, queue_only, status_of

from evalward.store import open_store
from evalward.store.job_queue import JobQueue, JobSpec

H, K = "1" * 40, "2" * 40
T1, T2, T3, T4, T5 = (f"2025-03-01T10:00:0{s}Z" for s in (1, 3, 5, 7, 9))
BETWEEN = "2025-03-01T10:00:02Z"
"""After T1, before T2."""


def columns(daemon: Daemon, job_id: int) -> dict[str, Any]:
    from sqlalchemy import select

    from evalward.store.schema import jobs_table

    assert daemon.store is not None
    j = jobs_table.c
    with daemon.store.engine.connect() as conn:
        row = conn.execute(
            select(j.status, j.attempts, j.lease_until, j.last_error, j.check_run_state, j.check_run_id,
                   j.pr_updated_at, j.payload).where(j.id == job_id)
        ).one()  # fmt: skip
    return dict(row._mapping)


def test_closed_then_reopened_at_the_same_head_runs_the_head_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, db_url: str
) -> None:
    with queue_only(tmp_path, caplog, db_url) as daemon:
        h = daemon.deliver("pull_request", event(31, H, T1, action="opened"))["jobs"][0]["id"]
        assert daemon.deliver("pull_request", event(31, H, T3, action="closed"))["cancelled"] == [h]
        assert status_of(daemon, h) == ("cancelled", "pull request closed")
        # As if a worker had run an attempt whose check run the sweeper then completed as cancelled.
        with daemon.store.engine.begin() as conn:  # type: ignore[union-attr]
            from sqlalchemy import update

            from evalward.store.schema import jobs_table

            conn.execute(
                update(jobs_table).where(jobs_table.c.id == h).values(attempts=1, check_run_state="closed",
                                                                       check_run_id=99)
            )  # fmt: skip
        # The `opened` delivered again after the close: older than the close, it revives nothing.
        late = daemon.deliver("pull_request", event(31, H, T1, action="opened"))
        assert late["duplicate"] is True and status_of(daemon, h) == ("cancelled", "pull request closed")

        reopened = daemon.deliver("pull_request", event(31, H, T4, action="reopened"))
        assert reopened["duplicate"] is False and reopened["cancelled"] == []
        assert reopened["jobs"] == [{"id": h, "created": False, "status": "queued"}]
        assert "runs again" in reopened["note"]
        row = columns(daemon, h)
        assert (row["status"], row["lease_until"], row["last_error"]) == ("queued", None, None)
        assert (row["check_run_state"], row["check_run_id"]) == (None, None)
        assert row["attempts"] == 1 and row["payload"]["attempt_base"] == 1  # the fencing token keeps counting
        assert row["payload"]["action"] == "reopened" and row["pr_updated_at"] == datetime.fromisoformat(T4)
        assert daemon.queue.open_check_runs(job_id=h) == []  # nothing for the sweeper
    # A worker on the same database claims it and opens a fresh check run on the head (then fails at the clone,
    # which points nowhere, and completes that run: its budget is a full one despite the earlier attempt).
    with start_daemon(tmp_path, caplog, db=db_url) as daemon:
        daemon.github.permissions[(REPO, "dev")] = "write"
        job = daemon.wait(h, ("done", "failed"))
        assert job.attempts == 2 and job.last_error is not None and "superseded" not in job.last_error
        [check] = daemon.checks_on(H)
        assert check["status"] == "completed" and check["id"] != 99
        assert daemon.queue.open_check_runs(job_id=h) == []


def test_a_fork_reopened_at_the_same_head_is_held_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, db_url: str
) -> None:
    with queue_only(tmp_path, caplog, db_url) as daemon:
        h = daemon.deliver("pull_request", event(32, H, T1, action="opened", fork=True))["jobs"][0]["id"]
        daemon.deliver("pull_request", event(32, H, T3, action="closed", fork=True))
        reopened = daemon.deliver("pull_request", event(32, H, T4, action="reopened", fork=True))
        assert reopened["jobs"][0] == {"id": h, "created": False, "status": "held"}
        assert status_of(daemon, h) == ("held", None)


def test_a_force_push_back_to_an_earlier_head_runs_it_and_supersedes_the_other(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, db_url: str
) -> None:
    with queue_only(tmp_path, caplog, db_url) as daemon:
        h = daemon.deliver("pull_request", event(33, H, T1, action="opened"))["jobs"][0]["id"]
        k_answer = daemon.deliver("pull_request", event(33, K, T2))
        k = k_answer["jobs"][0]["id"]
        assert k_answer["cancelled"] == [h] and status_of(daemon, h) == ("cancelled", f"superseded by {K[:12]}")

        back = daemon.deliver("pull_request", event(33, H, T3))
        assert back["jobs"] == [{"id": h, "created": False, "status": "queued"}] and back["cancelled"] == [k]
        assert status_of(daemon, h) == ("queued", None)
        assert status_of(daemon, k) == ("cancelled", f"superseded by {H[:12]}")
        # K's push delivered again: not newer than K's row, K stays cancelled and H open.
        again = daemon.deliver("pull_request", event(33, K, T2))
        assert again["duplicate"] is True and again["cancelled"] == []
        assert (status_of(daemon, h)[0], status_of(daemon, k)[0]) == ("queued", "cancelled")
        # And K pushed again later (H, K, H, K): K runs, H is superseded again.
        forth = daemon.deliver("pull_request", event(33, K, T4))
        assert forth["jobs"][0]["status"] == "queued" and forth["cancelled"] == [h]


def test_a_late_delivery_of_the_earlier_head_revives_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, db_url: str
) -> None:
    with queue_only(tmp_path, caplog, db_url) as daemon:
        first = event(34, H, T1, action="opened")
        h = daemon.deliver("pull_request", first)["jobs"][0]["id"]
        k = daemon.deliver("pull_request", event(34, K, T2))["jobs"][0]["id"]
        # The original delivery again (GitHub's redelivery: same body), then an event at H older than K's push
        # (ready_for_review between the pushes) delivered late: neither is the PR's newest.
        for late in (first, event(34, H, BETWEEN, action="ready_for_review")):
            answer = daemon.deliver("pull_request", late)
            assert answer["duplicate"] is True and answer["cancelled"] == []
            assert answer["jobs"] == [{"id": h, "created": False, "status": "cancelled"}]
            assert status_of(daemon, h) == ("cancelled", f"superseded by {K[:12]}")
            assert status_of(daemon, k) == ("queued", None)


def test_the_same_reopen_delivered_twice_changes_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, db_url: str
) -> None:
    def send(daemon: Daemon, payload: dict[str, Any], delivery: str) -> dict[str, Any]:
        body = json.dumps(payload).encode()
        response = daemon.http.post(
            "/webhooks/github", content=body, headers=delivery_headers("pull_request", body, delivery=delivery)
        )
        assert response.status_code == 202, response.text
        answer: dict[str, Any] = response.json()
        return answer

    with queue_only(tmp_path, caplog, db_url) as daemon:
        h = daemon.deliver("pull_request", event(35, H, T1, action="opened"))["jobs"][0]["id"]
        daemon.deliver("pull_request", event(35, H, T3, action="closed"))
        reopen = event(35, H, T4, action="reopened")
        assert send(daemon, reopen, "d-reopen")["jobs"][0]["status"] == "queued"
        before = columns(daemon, h)
        again = send(daemon, reopen, "d-reopen")
        assert again["duplicate"] is True and again["cancelled"] == []
        assert columns(daemon, h) == before
        # Pushed over (K at T5), then the reopen delivered once more: it is older than K, H stays cancelled.
        k = daemon.deliver("pull_request", event(35, K, T5))["jobs"][0]["id"]
        assert send(daemon, reopen, "d-reopen")["cancelled"] == []
        assert status_of(daemon, h) == ("cancelled", f"superseded by {K[:12]}")
        assert status_of(daemon, k) == ("queued", None)


def spec(head: str, updated_at: str) -> JobSpec:
    payload = {"repo": REPO, "pr_number": 7, "head_sha": head, "pr_updated_at": updated_at}
    return JobSpec(kind="evaluate", dedupe_key=f"evaluate:{REPO}:{head}:default", payload=payload, repo=REPO,
                   head_sha=head, pr_number=7, pr_updated_at=datetime.fromisoformat(updated_at))  # fmt: skip


def test_the_cancelled_attempt_s_worker_cannot_pass_as_the_revived_job_s(db_url: str) -> None:
    """The claim number is the fencing token: the worker of the attempt that was cancelled (running until its next
    heartbeat) must not match the revived job's claim. The new life still gets a full budget of attempts."""
    with open_store(db_url) as store:
        queue = JobQueue(store.engine, max_attempts=2)
        queue.enqueue(spec(H, T1), supersede=(7, f"superseded by {H[:12]}"))
        old = queue.claim(lease_s=60)
        assert old is not None and old.attempt == 1
        queue.enqueue(spec(K, T2), supersede=(7, f"superseded by {K[:12]}"))
        k = queue.claim(lease_s=60)
        assert k is not None and k.head_sha == K
        revived = queue.enqueue(spec(H, T3), supersede=(7, f"superseded by {H[:12]}"))
        assert (revived.revived, revived.status, revived.cancelled) == (True, "queued", [k.id])
        assert not queue.heartbeat(k, lease_s=60)  # K's worker learns it was cancelled
        new = queue.claim(lease_s=60)
        assert new is not None and (new.id, new.attempt) == (old.id, 2)
        assert not queue.heartbeat(old, lease_s=60) and queue.heartbeat(new, lease_s=60)
        assert not queue.complete(old)
        # Attempt 2 of a job limited to 2, but the first was the earlier life's: a retryable failure retries.
        assert queue.fail(new, "flaky", retry=True)
        third = queue.claim(lease_s=60)
        assert third is not None and third.attempt == 3
        assert queue.fail(third, "flaky", retry=True)
        view = queue.get(old.id)
        assert view is not None and view.status == "failed"
