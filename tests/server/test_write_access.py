"""Write access from GitHub's permission API, and the job's in-progress check run, through the running daemon.

The App is served by uvicorn with one worker; webhooks arrive over HTTP, the worker talks to the fake
GitHub over HTTP. The clone URL points nowhere, so a job that is allowed to run gets as far as its
in-progress check run and the clone — which fails, and (with `max_attempts=1`) completes that same check
run as a failure. A job that is not allowed never gets there.
"""

from __future__ import annotations

import copy
import threading
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.github_server import FakeGitHub
from tests.github.contract import check_requests
from tests.server.conftest import example, make_settings
from tests.server.daemon import INSTALLATION, KEYS, REPO, Daemon, pr_event

from evalward.store import open_store
from evalward.store.job_queue import JobQueue


@pytest.mark.parametrize(("role", "shown"), [("triage", "read"), ("read", "read"), (None, "none")])
def test_an_author_without_write_access_is_held_and_the_check_run_says_why(
    daemon: Daemon, role: str | None, shown: str
) -> None:
    if role is not None:
        daemon.github.permissions[(REPO, "outsider")] = role
    # OWNER is what the payload claims; GitHub's permission API is what counts.
    event = pr_event(5, "5" * 40, "outsider")
    event["pull_request"]["author_association"] = "OWNER"
    job_id = daemon.deliver("pull_request", event)["jobs"][0]["id"]

    job = daemon.wait(job_id, ("held",))
    assert job.attempts == 0 and "`outsider`" in str(job.last_error) and f"is `{shown}`" in str(job.last_error)
    [check] = daemon.checks_on("5" * 40)
    assert (check["status"], check["conclusion"], check["output"]["title"]) == (
        "completed",
        "neutral",
        "Waiting for a maintainer",
    )
    assert f"whose permission on {REPO} is `{shown}`" in check["output"]["summary"]
    assert "evalward:run" in check["output"]["summary"]
    # Nothing ran: no in-progress check run was started.
    assert not [r for r in daemon.github.requests_to("POST", "/check-runs") if r.body.get("status") == "in_progress"]


def test_write_access_runs_the_job_in_one_check_run_and_the_answer_is_cached(daemon: Daemon) -> None:
    daemon.github.permissions[(REPO, "dev")] = "write"
    first = daemon.deliver("pull_request", pr_event(6, "6" * 40, "dev"))["jobs"][0]["id"]
    second = daemon.deliver("pull_request", pr_event(7, "7" * 40, "dev"))["jobs"][0]["id"]

    for job_id, sha in ((first, "6" * 40), (second, "7" * 40)):
        job = daemon.wait(job_id, ("failed",))
        assert "git clone failed" in str(job.last_error)
        # Started in_progress by the worker, then completed — the same check run.
        [check] = daemon.checks_on(sha)
        assert (check["status"], check["conclusion"]) == ("completed", "failure")
        assert check["started_at"] and check["external_id"] == f"evalward:default:job{job_id}"
        assert "Giving up after 1 attempts" in check["output"]["summary"]
        [create] = [r for r in daemon.github.requests_to("POST", "/check-runs") if r.body["head_sha"] == sha]
        assert (create.body["status"], create.body["output"]["title"]) == ("in_progress", "Running the evals")
    # One permission look-up for both PRs of the same author (cached per repository and user).
    assert len(daemon.github.requests_to("GET", "/collaborators/dev/permission")) == 1


def test_a_permission_error_is_retried_then_holds_the_job_until_a_maintainer_labels_it(daemon: Daemon) -> None:
    daemon.github.permissions[(REPO, "dev")] = "write"
    daemon.github.permissions[(REPO, "maintainer")] = "maintain"
    daemon.github.inject("502", 4, path_contains="/collaborators/dev/permission")
    job_id = daemon.deliver("pull_request", pr_event(8, "8" * 40, "dev"))["jobs"][0]["id"]

    job = daemon.wait(job_id, ("held",))
    # 1 + 3 retries, backed off 1, 2, 4 s (recorded, not slept); never run on error.
    assert len(daemon.github.requests_to("GET", "/collaborators/dev/permission")) == 4
    assert daemon.waits[:3] == [1.0, 2.0, 4.0]
    assert "GitHub did not say whether `dev` has write access" in str(job.last_error)
    [check] = daemon.checks_on("8" * 40)
    assert check["conclusion"] == "neutral" and "did not say" in check["output"]["summary"]

    labeled = daemon.deliver("pull_request", pr_event(8, "8" * 40, "dev", action="labeled", sender="maintainer"))
    assert labeled["jobs"][0] == {"id": job_id, "created": False, "status": "queued"}
    job = daemon.wait(job_id, ("failed",))  # approved: it ran (and the clone failed)
    assert len(daemon.github.requests_to("GET", "/collaborators/maintainer/permission")) == 1
    assert [c["conclusion"] for c in daemon.checks_on("8" * 40)] == ["neutral", "failure"]


def test_one_failed_look_up_is_retried_and_the_job_runs(daemon: Daemon) -> None:
    daemon.github.permissions[(REPO, "dev")] = "admin"
    daemon.github.inject("disconnect", 1, path_contains="/collaborators/dev/permission")
    job_id = daemon.deliver("pull_request", pr_event(9, "9" * 40, "dev"))["jobs"][0]["id"]
    assert "git clone failed" in str(daemon.wait(job_id, ("failed",)).last_error)
    assert len(daemon.github.requests_to("GET", "/collaborators/dev/permission")) == 2


def test_a_label_from_someone_without_write_access_releases_nothing_but_a_rerun_does(daemon: Daemon) -> None:
    daemon.github.permissions[(REPO, "helper")] = "triage"  # may add labels, may not approve code
    sha = "a" * 40
    held = daemon.deliver("pull_request", pr_event(10, sha, "mallory", fork=True))
    job_id = held["jobs"][0]["id"]
    assert [j["status"] for j in held["jobs"]] == ["held", "queued"]  # a fork: held without asking GitHub
    daemon.wait(held["jobs"][1]["id"], ("done",))  # the notice check run

    daemon.deliver("pull_request", pr_event(10, sha, "mallory", fork=True, action="labeled", sender="helper"))
    job = daemon.wait(job_id, ("held",), attempts=0)
    assert "the label was added by `helper`, whose permission" in str(job.last_error)
    assert [c["conclusion"] for c in daemon.checks_on(sha)] == ["neutral", "neutral"]

    rerun = copy.deepcopy(example("check_run.rerequested.1"))
    rerun["check_run"].update({"name": "evalward", "head_sha": sha})
    rerun["repository"]["full_name"] = REPO
    rerun["installation"] = {"id": INSTALLATION}
    assert daemon.deliver("check_run", rerun)["released"] == [job_id]
    assert "git clone failed" in str(daemon.wait(job_id, ("failed",)).last_error)
    assert not daemon.github.requests_to("GET", "/collaborators/mallory/permission")
    assert [c["conclusion"] for c in daemon.checks_on(sha)] == ["neutral", "neutral", "failure"]


def test_permission_answers_are_cached_briefly_per_repository_and_user(tmp_path: Path) -> None:
    from evalward._server.github_access import GitHubAccess

    now = [1000.0]
    with FakeGitHub() as github:
        github.permissions[(REPO, "dev")] = "read"
        settings = make_settings(f"sqlite:///{tmp_path / 's.db'}", github_api_url=github.url, permission_cache_s=60)
        access = GitHubAccess(settings, clock=lambda: now[0])
        assert access.permission(REPO, "dev", "ghs_actions") == "read"
        github.permissions[(REPO, "dev")] = "write"  # promoted meanwhile
        now[0] += 59
        assert access.permission(REPO, "Dev", "ghs_actions") == "read"  # logins are case-insensitive
        assert access.permission("acme/other", "dev", "ghs_actions") == "none"  # another repository: asked
        now[0] += 2
        assert access.permission(REPO, "dev", "ghs_actions") == "write"
        assert len(github.requests_to("GET", f"/repos/{REPO}/collaborators/dev/permission")) == 2
        assert check_requests(github.requests) == []


def _handlers(tmp_path: Path, github: FakeGitHub, store: Any, **overrides: Any) -> Any:
    from evalward._server.evaluate import Handlers
    from evalward._server.github_access import GitHubAccess

    values: dict[str, Any] = {
        "github_app_id": github.app_id, "github_private_key": KEYS[0], "github_api_url": github.url,
        "work_dir": str(tmp_path / "jobs"), "clone_url_template": f"file://{tmp_path}/nowhere/{{repo}}.git", "allow_file_clone_urls": True,
    }  # fmt: skip
    values.update(overrides)
    settings = make_settings(str(store.url), **values)
    return Handlers(settings, store, JobQueue(store.engine), GitHubAccess(settings))


def _claim(queue: JobQueue, sha: str, number: int) -> Any:
    from evalward.store.job_queue import JobSpec

    payload = {
        "repo": REPO,
        "head_sha": sha,
        "pr_number": number,
        "installation_id": INSTALLATION,
        "mode": "pull_request",
    }
    queue.enqueue(JobSpec("evaluate", f"evaluate:{REPO}:{sha}:default", payload, repo=REPO, head_sha=sha))
    job = queue.claim(lease_s=30)
    assert job is not None
    return job


def test_a_job_superseded_while_running_completes_its_check_run_as_cancelled(tmp_path: Path) -> None:
    from evalward._server.worker import JobAborted, JobContext

    with FakeGitHub(app_public_key=KEYS[1]) as github, open_store(f"sqlite:///{tmp_path / 's.db'}") as store:
        handlers = _handlers(tmp_path, github, store)
        job = _claim(handlers.queue, "b" * 40, 11)
        abort = threading.Event()
        ctx = JobContext(job, abort, "w", threading.Event())
        # A newer head arrives after the check run started: the heartbeat would then set `abort`.
        original = handlers._start_check

        def start_then_supersede(*args: Any) -> Any:
            started = original(*args)
            handlers.queue.cancel_pr_jobs(REPO, 11, keep_head_sha="c" * 40, reason="superseded by cccccccccccc")
            abort.set()
            return started

        handlers._start_check = start_then_supersede
        with pytest.raises(JobAborted):
            handlers.evaluate(ctx)
        [check] = github.check_runs.values()
        assert (check["status"], check["conclusion"]) == ("completed", "cancelled")
        assert "superseded by cccccccccccc" in check["output"]["summary"]
        assert check_requests(github.requests) == []


def test_an_unexpected_error_completes_the_check_run_as_a_failure(tmp_path: Path) -> None:
    from evalward._server.worker import JobContext

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    with FakeGitHub(app_public_key=KEYS[1]) as github, open_store(f"sqlite:///{tmp_path / 's.db'}") as store:
        handlers = _handlers(tmp_path, github, store, work_dir=str(blocker))
        job = _claim(handlers.queue, "d" * 40, 12)
        with pytest.raises(OSError):
            handlers.evaluate(JobContext(job, threading.Event(), "w", threading.Event()))
        [check] = github.check_runs.values()
        assert (check["status"], check["conclusion"]) == ("completed", "failure")
        assert "internal error (FileExistsError)" in check["output"]["summary"]
