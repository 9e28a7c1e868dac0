"""End to end on real sockets: a local bare git repository with the dice agent and its eval set, the App
served by uvicorn with one worker, the fake GitHub server. A push to main makes the baseline; a PR that
breaks the agent is cloned, run, gated and reported: one failing check run and exactly one comment, even
when GitHub redelivers the webhook."""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.fakes.github_server import FakeGitHub
from tests.github.contract import check_requests
from tests.server.chaos import sandbox_setting
from tests.server.conftest import delivery_headers, example, make_settings
from tests.server.live import LiveServer
from tests.server.runs import dice_project

from evalward._server.app import create_app
from evalward._server.runtime import build_pool
from evalward.store import Store, open_store
from evalward.store.job_queue import JobQueue

REPO = "acme/dice"
INSTALLATION = 4242


def git(cwd: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e",
           "HOME": str(cwd), "PATH": "/usr/bin:/bin"}  # fmt: skip
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


def make_bare_repo(root: Path) -> tuple[str, str]:
    """origin at root/git/acme/dice.git: main (the dice agent) and feature (the broken agent); their SHAs."""
    work = root / "work"
    dice_project(work)
    # five repetitions: a case that passed 5/5 and fails 0/5 is evidence on its own (p = 1/252)
    (work / "evalward.toml").write_text(
        'paths = ["evals"]\nagent = "agent.py:root_agent"\nbase_branch = "main"\nrepeat = 5\n'
    )
    git(work, "init", "-q", "-b", "main")
    git(work, "add", ".")
    git(work, "commit", "-q", "-m", "dice agent")
    main_sha = git(work, "rev-parse", "HEAD")
    git(work, "checkout", "-q", "-b", "feature")
    dice_project(work, broken=True)
    git(work, "commit", "-q", "-am", "always roll a d20")
    feature_sha = git(work, "rev-parse", "HEAD")
    bare = root / "git" / "acme" / "dice.git"
    bare.parent.mkdir(parents=True)
    git(root, "clone", "-q", "--bare", str(work), str(bare))
    return main_sha, feature_sha


@pytest.fixture
def app_key() -> tuple[str, str]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return private.decode(), public.decode()


def push_payload(sha: str) -> dict[str, Any]:
    payload = example("push.event.2")
    payload.update({"ref": "refs/heads/main", "after": sha, "installation": {"id": INSTALLATION}})
    payload["repository"].update({"full_name": REPO, "default_branch": "main"})
    return payload


def pr_payload(head: str, base: str) -> dict[str, Any]:
    payload = example("pull_request.opened.2")
    payload["installation"] = {"id": INSTALLATION}
    payload["repository"]["full_name"] = REPO
    pr = payload["pull_request"]
    pr["head"].update({"sha": head, "ref": "feature"})
    pr["head"]["repo"]["full_name"] = REPO
    pr["base"].update({"sha": base, "ref": "main"})
    pr["base"]["repo"]["full_name"] = REPO
    return payload


def daemon_settings(tmp_path: Path, db: str, github: FakeGitHub, private: str) -> Any:
    """One worker serving everything, cloning from the bare repositories under `tmp_path/git`; the evals run in
    bubblewrap wherever it works."""
    return make_settings(
        db,
        role="all",
        workers=1,
        github_app_id=github.app_id,
        github_private_key=private,
        github_api_url=github.url,
        clone_url_template=f"file://{tmp_path}/git/{{repo}}.git",
        allow_file_clone_urls=True,
        work_dir=str(tmp_path / "jobs"),
        poll_s=0.1,
        heartbeat_s=1.0,
        job_timeout_s=120,
        sandbox=sandbox_setting(),
    )


def wait_done(queue: JobQueue, job_id: int, timeout_s: float = 120) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        job = queue.get(job_id)
        if job is not None and job.status in ("done", "failed", "cancelled"):
            return job
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} did not finish: {queue.get(job_id)}")


@contextlib.contextmanager
def running_daemon(
    tmp_path: Path, app_key: tuple[str, str]
) -> Iterator[tuple[FakeGitHub, Store, Callable[[str, dict[str, Any], str], Any]]]:
    """The daemon (web and one worker) on a socket with the fake GitHub, and `deliver(event, payload, delivery)`:
    the signed webhook sent, its job waited for and returned."""
    private, public = app_key
    db = f"sqlite:///{tmp_path / 'server.db'}"
    with FakeGitHub(app_public_key=public) as github, open_store(db) as store:
        settings = daemon_settings(tmp_path, db, github, private)
        app = create_app(settings, store, pool_factory=lambda state: build_pool(settings, store, metrics=state.metrics))
        queue = JobQueue(store.engine)
        with LiveServer(app) as server, httpx.Client(base_url=server.url, timeout=30) as http:

            def deliver(event: str, payload: dict[str, Any], delivery: str) -> Any:
                body = json.dumps(payload).encode()
                headers = delivery_headers(event, body, delivery=delivery)
                response = http.post("/webhooks/github", content=body, headers=headers)
                assert response.status_code == 202, response.text
                return wait_done(queue, response.json()["jobs"][0]["id"])

            yield github, store, deliver


@pytest.mark.slow
def test_a_pr_webhook_is_cloned_run_gated_and_reported_once(tmp_path: Path, app_key: tuple[str, str]) -> None:
    private, public = app_key
    main_sha, feature_sha = make_bare_repo(tmp_path)
    db = f"sqlite:///{tmp_path / 'server.db'}"
    with FakeGitHub(app_public_key=public) as github, open_store(db) as store:
        github.permissions[(REPO, "Codertocat")] = "maintain"  # the PR author: maintain counts as write
        settings = daemon_settings(tmp_path, db, github, private)
        app = create_app(settings, store, pool_factory=lambda state: build_pool(settings, store, metrics=state.metrics))
        queue = JobQueue(store.engine)
        with LiveServer(app) as server, httpx.Client(base_url=server.url, timeout=30) as http:

            def deliver(event: str, payload: dict[str, Any], delivery: str) -> dict[str, Any]:
                body = json.dumps(payload).encode()
                response = http.post(
                    "/webhooks/github", content=body, headers=delivery_headers(event, body, delivery=delivery)
                )
                assert response.status_code == 202, response.text
                answer: dict[str, Any] = response.json()
                return answer

            baseline = deliver("push", push_payload(main_sha), "d-push")
            base_job = wait_done(queue, baseline["jobs"][0]["id"])
            assert base_job.status == "done", base_job.last_error
            assert base_job.conclusion == "success"

            opened = deliver("pull_request", pr_payload(feature_sha, main_sha), "d-pr")
            pr_job = wait_done(queue, opened["jobs"][0]["id"])
            assert pr_job.status == "done", pr_job.last_error
            # GitHub redelivers the same delivery: no second job, so no second comment.
            again = deliver("pull_request", pr_payload(feature_sha, main_sha), "d-pr")
            assert again["duplicate"] is True and again["jobs"][0]["id"] == pr_job.id

            runs = http.get("/api/v1/jobs", headers={"Authorization": "Bearer none"})
            assert runs.status_code == 401

        checks = sorted(github.check_runs.values(), key=lambda c: int(c["id"]))
        assert [(c["head_sha"], c["name"], c["conclusion"]) for c in checks] == [
            (main_sha, "evalward", "success"),
            (feature_sha, "evalward", "failure"),
        ]
        # Each job's check run was created in_progress when the worker started, then completed by id.
        creates = github.requests_to("POST", "/check-runs")
        assert [(r.body["status"], "started_at" in r.body) for r in creates] == [("in_progress", True)] * 2
        completions = [r for r in github.requests_to("PATCH", "/check-runs/") if r.body.get("status") == "completed"]
        assert sorted(r.path.rsplit("/", 1)[1] for r in completions) == sorted(str(c["id"]) for c in checks)
        assert github.requests_to("GET", "/collaborators/Codertocat/permission")
        assert check_requests(github.requests) == []
        comments = github.comments_on(REPO, 2)
        assert len(comments) == 1
        # The Action's marker scheme (github.publish): the suite's marker, then the verdict the comment shows.
        assert comments[0]["body"].startswith("<!-- evalward:evalward/default -->\n<!-- evalward-verdict: fail -->\n")
        assert comments[0]["user"]["login"] == "evalward-test[bot]"
        stored = store.load_run(str(pr_job.run_id))
        assert (stored.context.commit, stored.context.pr_number, stored.passed) == (feature_sha, 2, False)
        # The verdict posted to the PR is kept with the run, so the dashboard shows that one.
        [recorded] = store.recorded_verdicts(stored.run_id)
        assert recorded.source == "serve" and recorded.verdict.outcome == checks[-1]["conclusion"].replace(
            "failure", "fail"
        ).replace("success", "pass")
        # No token in any request path or the job rows.
        tokens = list(github.installation_tokens)
        assert tokens and not any(
            t in json.dumps([j.model_dump(mode="json") for j in queue.list_jobs()]) for t in tokens
        )


@pytest.mark.slow
def test_a_push_to_main_is_gated_against_the_commit_before_it(tmp_path: Path, app_key: tuple[str, str]) -> None:
    """A regression merged to main is a finding at its first bad commit: the second push (the broken agent,
    fast-forwarded onto main) is gated against the run of the commit before it, its verdict recorded and its
    check run failed; the first push, with nothing stored before it, is judged by its thresholds alone."""
    main_sha, broken_sha = make_bare_repo(tmp_path)
    with running_daemon(tmp_path, app_key) as (github, store, deliver):
        first = deliver("push", {**push_payload(main_sha), "before": "0" * 40}, "d-push-1")
        second = deliver("push", {**push_payload(broken_sha), "before": main_sha}, "d-push-2")
        assert (first.status, first.conclusion) == ("done", "success"), first.last_error
        assert (second.status, second.conclusion) == ("done", "failure"), second.last_error
        assert store.recorded_verdicts(str(first.run_id)) == []  # nothing stored before it
        [recorded] = store.recorded_verdicts(str(second.run_id))
        assert recorded.source == "serve" and recorded.verdict.outcome == "fail"
        assert recorded.verdict.baseline is not None and recorded.verdict.baseline.run_id == first.run_id
        checks = sorted(github.check_runs.values(), key=lambda c: int(c["id"]))
        assert [c["conclusion"] for c in checks] == ["success", "failure"]
        assert github.comments == {}  # a push has no pull request to comment on


def test_a_first_pr_webhook_gets_its_baseline_from_the_base_side(tmp_path: Path, app_key: tuple[str, str]) -> None:
    # No push ever reached the daemon: the PR's merge-base has no stored run, so the job runs the base side
    # (the merge-base's agent on the PR's eval files, in the same sandbox) and the gate compares with it.
    private, public = app_key
    main_sha, feature_sha = make_bare_repo(tmp_path)
    db = f"sqlite:///{tmp_path / 'server.db'}"
    with FakeGitHub(app_public_key=public) as github, open_store(db) as store:
        github.permissions[(REPO, "Codertocat")] = "write"
        settings = daemon_settings(tmp_path, db, github, private)
        app = create_app(settings, store, pool_factory=lambda state: build_pool(settings, store, metrics=state.metrics))
        queue = JobQueue(store.engine)
        with LiveServer(app) as server, httpx.Client(base_url=server.url, timeout=30) as http:
            body = json.dumps(pr_payload(feature_sha, main_sha)).encode()
            response = http.post(
                "/webhooks/github", content=body, headers=delivery_headers("pull_request", body, delivery="d-first")
            )
            assert response.status_code == 202, response.text
            job = wait_done(queue, response.json()["jobs"][0]["id"])
            assert job.status == "done", job.last_error

        [check] = github.check_runs.values()
        assert (check["head_sha"], check["conclusion"]) == (feature_sha, "failure")
        stored = store.load_run(str(job.run_id))
        [recorded] = store.recorded_verdicts(stored.run_id)
        baseline = recorded.verdict.baseline
        assert baseline is not None and baseline.commit == main_sha
        base_run = store.load_run(baseline.run_id)
        assert base_run.context.base_side_for == feature_sha and base_run.context.branch == "main"
        assert recorded.verdict.newly_broken is not None and recorded.verdict.newly_broken.significant


def merge_group_payload(head: str, base: str) -> dict[str, Any]:
    """A merge queue's `checks_requested` (GitHub's documented shape): the queue built `head` on `base`."""
    return {
        "action": "checks_requested",
        "merge_group": {
            "head_sha": head,
            "head_ref": f"refs/heads/gh-readonly-queue/main/pr-2-{base}",
            "base_sha": base,
            "base_ref": "refs/heads/main",
            "head_commit": {"id": head, "tree_id": head, "message": "Merge queue", "timestamp": "2026-01-01T00:00:00Z"},
        },
        "repository": {"full_name": REPO, "name": "dice", "owner": {"login": "acme"}},
        "installation": {"id": INSTALLATION},
        "sender": {"login": "Codertocat"},
    }


@pytest.mark.slow
def test_a_merge_queue_commit_is_gated_against_the_queue_base(tmp_path: Path, app_key: tuple[str, str]) -> None:
    """The daemon gates a merge queue as the Action does (docs/github.md §4): the queue's commit against the stored
    run at the queue's base, the check run on the commit the queue waits for, no comment (no PR conversation)."""
    main_sha, feature_sha = make_bare_repo(tmp_path)
    with running_daemon(tmp_path, app_key) as (github, store, deliver):
        jobs = []
        for event, payload, delivery in (
            ("push", push_payload(main_sha), "d-push"),
            ("merge_group", merge_group_payload(feature_sha, main_sha), "d-queue"),
        ):
            job = deliver(event, payload, delivery)
            assert job.status == "done", job.last_error
            jobs.append(job)

        checks = sorted(github.check_runs.values(), key=lambda c: int(c["id"]))
        assert [(c["head_sha"], c["conclusion"]) for c in checks] == [(main_sha, "success"), (feature_sha, "failure")]
        assert github.comments == {}
        # queued merges need write access on GitHub's side: nobody's permission was asked for
        assert not github.requests_to("GET", "/collaborators/")
        stored = store.load_run(str(jobs[1].run_id))
        assert (stored.context.commit, stored.context.branch) == (
            feature_sha,
            f"gh-readonly-queue/main/pr-2-{main_sha}",
        )
        [recorded] = store.recorded_verdicts(stored.run_id)
        assert recorded.verdict.outcome == "fail"
        assert recorded.verdict.baseline is not None and recorded.verdict.baseline.commit == main_sha
        assert check_requests(github.requests) == []
