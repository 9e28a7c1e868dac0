"""Issue #31 rows 1 and 9: every check run the daemon opens is completed, and a stopped job leaves nothing
running and nothing on disk — through the daemon on real sockets and real worker processes.

- cancelled by a newer push while its `git clone` runs: git is killed at once, the check run says
  "superseded by <sha>", the next job runs;
- its worker killed with `kill -9` on the job's last attempt: git dies with the worker, the job fails when
  its lease expires, the next worker completes the check run ("the worker stopped; re-run …") and removes
  the checkout the killed worker left;
- a completion GitHub refused is retried by the sweeper; a shutdown completes the run "Interrupted".
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.fakes.github_server import FakeGitHub
from tests.github.contract import check_requests
from tests.server.chaos import GitShim, alive, sandbox_setting, start_worker, wait_until
from tests.server.conftest import delivery_headers, make_settings
from tests.server.daemon import INSTALLATION, KEYS, REPO, pr_event, start_daemon
from tests.server.live import LiveServer
from tests.store.old_schema import queued_job_at

from evalward._server.app import create_app
from evalward.store import open_store
from evalward.store.job_queue import JobQueue

A, B = "a" * 40, "b" * 40


def completed(daemon_github: FakeGitHub, sha: str) -> dict[str, Any] | None:
    runs = [c for c in daemon_github.check_runs.values() if c["head_sha"] == sha]
    return runs[0] if len(runs) == 1 and runs[0]["status"] == "completed" else None


def test_a_job_superseded_during_its_clone_kills_git_and_completes_its_check_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    shim = GitShim.install(tmp_path)
    monkeypatch.setenv("PATH", shim.path)
    # Attempts left (the production default of 3): before #31 the failed git step of the cancelled job was
    # "retried" into a cancelled row, and its check run stayed in_progress for ever.
    with start_daemon(tmp_path, caplog, max_attempts=3) as daemon:
        daemon.github.permissions[(REPO, "dev")] = "write"
        first = daemon.deliver("pull_request", pr_event(8, A, "dev"))["jobs"][0]["id"]
        git_pid = shim.wait_blocked()
        folder = next((tmp_path / "jobs").iterdir())
        assert folder.name.startswith(f"job-{first}-1-") and (folder / "checkout" / "pack").is_file()
        shim.release()

        second = daemon.deliver("pull_request", pr_event(8, B, "dev", action="synchronize"))["jobs"][0]["id"]
        assert daemon.wait(first, ("cancelled",)).last_error == f"superseded by {B[:12]}"
        # The clone sleeps 60 s unless killed: seeing it gone within the deadline means it was killed.
        wait_until(lambda: not alive(git_pid), timeout_s=10, what="the superseded job's git being killed")
        check = wait_until(lambda: completed(daemon.github, A), what="the check run's completion")
        assert (check["conclusion"], check["output"]["title"]) == ("cancelled", "Cancelled")
        assert check["output"]["summary"] == f"This run was cancelled: superseded by {B[:12]}."

        # The newer head ran next (its real clone fails three times: the URL points nowhere) and completed its
        # own run.
        assert "git clone failed" in str(daemon.wait(second, ("failed",)).last_error)
        assert completed(daemon.github, B) is not None
        wait_until(lambda: not any((tmp_path / "jobs").iterdir()), what="the job folders' removal")
    assert all(c["status"] == "completed" for c in daemon.github.check_runs.values())


def test_a_completion_github_refuses_is_retried_by_the_sweeper(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    shim = GitShim.install(tmp_path)
    monkeypatch.setenv("PATH", shim.path)
    with start_daemon(tmp_path, caplog, sweep_s=0.1) as daemon:
        daemon.github.permissions[(REPO, "dev")] = "write"
        first = daemon.deliver("pull_request", pr_event(9, A, "dev"))["jobs"][0]["id"]
        shim.wait_blocked()
        check_id = next(iter(daemon.github.check_runs))
        # GitHub answers 502 to the next 8 completions: the worker's own (4 tries) and the sweep right after
        # the job (4 tries) fail; a later sweep completes it.
        daemon.github.inject("502", 8, path_contains=f"/check-runs/{check_id}", method="PATCH")
        daemon.deliver("pull_request", pr_event(9, A, "dev", action="closed"))
        daemon.wait(first, ("cancelled",))
        check = wait_until(lambda: completed(daemon.github, A), what="the sweeper's completion")
        assert (check["conclusion"], check["output"]["summary"]) == (
            "cancelled",
            "This run was cancelled: pull request closed.",
        )
        patches = daemon.github.requests_to("PATCH", f"/check-runs/{check_id}")
        assert [r.status for r in patches] == [502] * 8 + [200]
        assert "could not complete the check run of job" in caplog.text


def test_a_shutdown_completes_the_check_run_and_queues_the_job_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    shim = GitShim.install(tmp_path)
    monkeypatch.setenv("PATH", shim.path)
    with start_daemon(tmp_path, caplog, shutdown_grace_s=0) as daemon:
        daemon.github.permissions[(REPO, "dev")] = "write"
        job_id = daemon.deliver("pull_request", pr_event(10, A, "dev"))["jobs"][0]["id"]
        git_pid = shim.wait_blocked()
    # The daemon stopped (SIGTERM's path: the app's lifespan stops the pool, grace 0).
    assert not alive(git_pid)
    [check] = daemon.github.check_runs.values()
    assert (check["status"], check["conclusion"], check["output"]["title"]) == ("completed", "cancelled", "Interrupted")
    assert "daemon stopped before the evals finished" in check["output"]["summary"]
    job = daemon.queue.get(job_id)
    assert job is not None and (job.status, job.attempts) == ("queued", 0)
    assert not any((tmp_path / "jobs").iterdir())


def test_a_worker_killed_on_the_last_attempt_leaves_no_open_check_run_and_no_checkout(tmp_path: Path) -> None:
    """Real processes: the web role serves webhooks here; `evalward serve --role worker` runs the job in
    another process, which is killed with SIGKILL while its clone runs; a second worker process finishes up."""
    private, public = KEYS
    shim = GitShim.install(tmp_path)
    db = f"sqlite:///{tmp_path / 'server.db'}"
    work = tmp_path / "jobs"
    with FakeGitHub(app_public_key=public) as github, open_store(db) as store:
        github.permissions[(REPO, "dev")] = "write"
        env = {
            **os.environ,
            "PATH": shim.path,
            "EVALWARD_DB": db,
            "EVALWARD_GITHUB_APP_ID": github.app_id,
            "EVALWARD_GITHUB_PRIVATE_KEY": private,
            "EVALWARD_GITHUB_API_URL": github.url,
            "EVALWARD_CLONE_URL_TEMPLATE": f"file://{tmp_path}/nowhere/{{repo}}.git",
            "EVALWARD_ALLOW_FILE_CLONE_URLS": "true",
            "EVALWARD_WORK_DIR": str(work),
            "EVALWARD_MAX_ATTEMPTS": "1",
            "EVALWARD_LEASE_S": "0.6",
            "EVALWARD_HEARTBEAT_S": "0.1",
            "EVALWARD_POLL_S": "0.05",
            "EVALWARD_SWEEP_S": "0.1",
            "EVALWARD_LOG_FORMAT": "text",
            "EVALWARD_SANDBOX": sandbox_setting(),
        }
        web = make_settings(
            db, github_app_id=github.app_id, github_private_key=private, github_api_url=github.url,
            redeliver_on_start=False,
        )  # fmt: skip
        queue = JobQueue(store.engine, max_attempts=1)
        with LiveServer(create_app(web, store)) as server, httpx.Client(base_url=server.url, timeout=30) as http:
            body = json.dumps(pr_event(11, A, "dev")).encode()
            answer = http.post("/webhooks/github", content=body, headers=delivery_headers("pull_request", body))
            job_id = answer.json()["jobs"][0]["id"]

            first = start_worker(env, tmp_path / "worker-1.log")
            second: subprocess.Popen[bytes] | None = None
            try:
                git_pid = shim.wait_blocked()
                [folder] = work.iterdir()
                # The next worker starts while the first holds the job (it cannot take it: the lease is live).
                second = start_worker(env, tmp_path / "worker-2.log")
                first.send_signal(signal.SIGKILL)
                first.wait(timeout=10)
                # The launcher's parent-death signal: the clone dies with the worker that started it.
                wait_until(lambda: not alive(git_pid), timeout_s=10, what="the killed worker's git dying")
                assert (folder / "checkout" / "pack").is_file()  # kill -9 removed nothing
                [open_run] = github.check_runs.values()
                assert open_run["status"] == "in_progress"

                job = wait_until(lambda: _final(queue, job_id), what="the job's end")
                assert job.status == "failed" and str(job.last_error).startswith("its worker stopped heartbeating")
                check = wait_until(lambda: completed(github, A), what="the check run's completion")
                wait_until(lambda: not folder.exists(), what="the stale checkout's removal")
            finally:
                for worker in (first, second):
                    if worker is not None and worker.poll() is None:
                        worker.send_signal(signal.SIGTERM)
                        worker.wait(timeout=20)
        assert second is not None and second.returncode == 0, (tmp_path / "worker-2.log").read_text()
        assert (check["conclusion"], check["output"]["title"]) == ("failure", "The worker stopped")
        assert check["output"]["summary"] == (
            "The worker running these evals stopped (attempt 1 of 1, its lease expired); re-run with the label "
            "`evalward:run` or re-request this check."
        )
        assert check_requests(github.requests) == []
        assert list(github.installation_tokens)
        logs = (tmp_path / "worker-1.log").read_text() + (tmp_path / "worker-2.log").read_text()
        assert not any(token in logs for token in github.installation_tokens) and "PRIVATE KEY" not in logs


def _final(queue: JobQueue, job_id: int) -> Any:
    job = queue.get(job_id)
    return job if job is not None and job.status in ("done", "failed", "cancelled") else None


def test_migration_0006_keeps_the_jobs_and_adds_their_check_runs(db_url: str) -> None:
    from evalward.store import HEAD_REVISION, upgrade_database

    queued_job_at(db_url, "0005", payload={"installation_id": INSTALLATION}, repo=REPO, sha=A, key="k")
    assert upgrade_database(db_url) == HEAD_REVISION
    with open_store(db_url) as store:
        queue = JobQueue(store.engine, max_attempts=1)
        job = queue.claim(lease_s=30)
        assert job is not None and job.payload == {"installation_id": INSTALLATION}
        queue.record_check_run(job, None)
        queue.record_check_run(job, 77)
        queue.cancel_pr_jobs(REPO, 0, keep_head_sha=None, reason="x")  # no pr_number: not this job's PR
        assert queue.open_check_runs() == []  # still running: not the sweeper's
        queue.fail(job, "boom", retry=False)
        [row] = queue.open_check_runs()
        assert (row.job_id, row.check_run_id, row.state, row.status) == (job.id, 77, "open", "failed")
        assert queue.claim_check_run_close(job.id) and not queue.claim_check_run_close(job.id)
        queue.reopen_check_run(job.id)
        assert [r.job_id for r in queue.open_check_runs()] == [job.id]
        queue.check_run_closed(job.id)
        assert queue.open_check_runs() == []
