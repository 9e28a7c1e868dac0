"""Signed malicious webhooks against the running daemon (uvicorn, one worker, the fake GitHub), over HTTP.

The signature proves a delivery came from whoever holds the secret — GitHub, or someone replaying what
GitHub once sent. Neither makes its content safe: every test here signs its body with the real secret.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.server.conftest import delivery_headers, example
from tests.server.daemon import INSTALLATION, REPO, Daemon, pr_event, start_daemon

from evalward._server.settings import ServerSettings
from evalward.identifiers import InvalidIdentifier

INJECTED_SHA = "--upload-pack=touch PWNED;git-upload-pack"


def post(daemon: Daemon, event: str, body: bytes, **header_overrides: str) -> httpx.Response:
    headers = {**delivery_headers(event, body), **header_overrides}
    return daemon.http.post("/webhooks/github", content=body, headers=headers)


def rerun_body(sha: str, *, check_run_id: int = 4) -> bytes:
    payload = copy.deepcopy(example("check_run.rerequested.1"))
    payload["check_run"].update({"name": "evalward", "head_sha": sha, "id": check_run_id})
    payload["repository"]["full_name"] = REPO
    payload["installation"] = {"id": INSTALLATION}
    return json.dumps(payload).encode()


@pytest.fixture
def quiet_daemon(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> Any:
    """The daemon for tests in which no job may reach the worker (so it never mints a token)."""
    from evalward._server.tokens import hash_token

    with start_daemon(tmp_path, caplog, expect_tokens=False, metrics_token_hashes=[hash_token(METRICS)]) as running:
        yield running


# -- identifiers: an option posing as a SHA never becomes a job --------------------------------------------


def injected_events() -> list[tuple[str, dict[str, Any]]]:
    pull = pr_event(3, INJECTED_SHA, "mallory")
    push = copy.deepcopy(example("push.event.2"))
    push.update({"ref": "refs/heads/main", "after": INJECTED_SHA})
    rerun = json.loads(rerun_body("a" * 40))
    rerun["check_run"]["head_sha"] = INJECTED_SHA
    suite = copy.deepcopy(example("check_suite.rerequested.1"))
    suite["check_suite"]["head_sha"] = INJECTED_SHA
    branch = pr_event(3, "a" * 40, "mallory")
    branch["pull_request"]["head"]["ref"] = "--output=/tmp/x"
    installation = copy.deepcopy(example("installation.created.1"))
    installation["repositories"] = [{"full_name": "../../etc/passwd"}]
    login = pr_event(3, "a" * 40, "../../admin")
    return [
        ("pull_request", pull),
        ("push", push),
        ("check_run", rerun),
        ("check_suite", suite),
        ("pull_request", branch),
        ("installation", installation),
        ("pull_request", login),
    ]


def test_identifiers_that_are_options_or_paths_are_400_and_never_queued(
    quiet_daemon: Daemon, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for event, payload in injected_events():
        response = post(quiet_daemon, event, json.dumps(payload).encode())
        assert response.status_code == 400, (event, response.text)
        assert "expected" in response.json()["error"]["message"]
    assert quiet_daemon.queue.list_jobs() == []
    assert not any(path.name == "PWNED" for path in tmp_path.rglob("*"))


def test_the_worker_checks_the_sha_again_right_before_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A job row that holds an option (written to the database by anything but the webhook) reaches no git."""
    from evalward._server.workspace import checkout

    monkeypatch.chdir(tmp_path)
    origin = tmp_path / "origin.git"
    settings = ServerSettings.model_validate(
        {"clone_url_template": f"file://{origin}", "allow_file_clone_urls": True, "work_dir": str(tmp_path)}
    )
    with pytest.raises(InvalidIdentifier, match="head_sha"):
        checkout(settings, REPO, INJECTED_SHA, None, tmp_path)
    with pytest.raises(InvalidIdentifier, match="repo"):
        checkout(settings, "--upload-pack=x/y", "a" * 40, None, tmp_path)
    assert not (tmp_path / "PWNED").exists() and not (tmp_path / "checkout").exists()


@pytest.mark.parametrize(
    "template",
    [
        "ext::sh -c touch% PWNED",
        "file:///srv/{repo}.git",  # local clones only when allowed
        "http://github.com/{repo}.git",
        "https://evil.example/{repo}.git",
        "ssh://git@github.com/{repo}.git",
        "--upload-pack=touch PWNED",
    ],
)
def test_clone_url_templates_other_than_https_to_github_are_refused(template: str) -> None:
    with pytest.raises(ValueError, match="clone URL"):
        ServerSettings.model_validate({"clone_url_template": template})


def test_clone_urls_on_the_configured_api_host_and_allowed_file_urls_are_accepted() -> None:
    ghes = {"github_api_url": "https://ghe.example/api/v3", "clone_url_template": "https://ghe.example/{repo}.git"}
    assert ServerSettings.model_validate(ghes).clone_url_template == "https://ghe.example/{repo}.git"
    local = {"clone_url_template": "file:///srv/{repo}.git", "allow_file_clone_urls": True}
    assert ServerSettings.model_validate(local).allow_file_clone_urls


def test_git_only_speaks_https_unless_file_clones_are_allowed() -> None:
    from evalward._server.workspace import git_env

    assert git_env(None)["GIT_ALLOW_PROTOCOL"] == "https"
    assert git_env(None, allow_file=True)["GIT_ALLOW_PROTOCOL"] == "https:file"


def test_the_base_side_refuses_a_merge_base_that_is_not_exactly_a_sha(tmp_path: Path) -> None:
    from evalward._gating.base_side import BaseSideUnavailable, base_checkout

    for bad in (INJECTED_SHA, "a" * 40 + "\n", "-" + "a" * 39):
        with pytest.raises(BaseSideUnavailable, match="not a full commit SHA"), base_checkout(tmp_path, bad):
            pass


# -- replays ----------------------------------------------------------------------------------------


def test_replaying_one_signed_rerun_under_new_delivery_ids_makes_at_most_one_job(quiet_daemon: Daemon) -> None:
    quiet_daemon.github.permissions[(REPO, "maintainer")] = "maintain"
    body = rerun_body("c" * 40)
    answers = [post(quiet_daemon, "check_run", body) for _ in range(5)]  # each with a fresh X-GitHub-Delivery
    assert [a.status_code for a in answers] == [202] * 5
    reruns = [j for j in quiet_daemon.queue.list_jobs() if j.head_sha == "c" * 40]
    assert len(reruns) == 1
    assert [a.json()["duplicate"] for a in answers] == [False, True, True, True, True]

    # A genuinely new re-run is a new body (GitHub names the check run that was re-requested): it runs.
    again = post(quiet_daemon, "check_run", rerun_body("c" * 40, check_run_id=5))
    assert again.status_code == 202 and again.json()["duplicate"] is False
    assert len([j for j in quiet_daemon.queue.list_jobs() if j.head_sha == "c" * 40]) == 2
    # Both jobs run (and fail at the clone, which points nowhere): the worker minted a token.
    for job in quiet_daemon.queue.list_jobs():
        quiet_daemon.wait(job.id, ("failed", "done"))


# -- /metrics ---------------------------------------------------------------------------------------------


METRICS = "ewt_metrics-token"


def series(daemon: Daemon) -> set[str]:
    response = daemon.http.get("/metrics", headers={"Authorization": f"Bearer {METRICS}"})
    assert response.status_code == 200, response.text
    text = response.text
    return {line.rsplit(" ", 1)[0] for line in text.splitlines() if line.startswith("evalward_webhook_deliveries")}


def test_made_up_event_names_add_at_most_two_metric_series(quiet_daemon: Daemon) -> None:
    before = series(quiet_daemon)
    body = b"{}"
    for index in range(200):
        unsigned = {**delivery_headers("x", body, secret=None), "X-GitHub-Event": f"made_up_{index}"}
        assert quiet_daemon.http.post("/webhooks/github", content=body, headers=unsigned).status_code == 401
        assert post(quiet_daemon, "x", body, **{"X-GitHub-Event": f"signed_{index}"}).status_code == 202
    added = series(quiet_daemon) - before
    assert len(added) <= 2, added
    assert added == {
        'evalward_webhook_deliveries_total{event="unverified",outcome="bad_signature"}',
        'evalward_webhook_deliveries_total{event="other",outcome="ignored"}',
    }


# -- shapes the database or the parser cannot take ------------------------------------------------------


def test_a_body_nested_ten_thousand_deep_is_400(quiet_daemon: Daemon) -> None:
    for body in (b"[" * 10_000 + b"]" * 10_000, b'{"a":' * 10_000 + b"1" + b"}" * 10_000):
        response = post(quiet_daemon, "pull_request", body)
        assert response.status_code == 400, response.text
        assert "nested more than 100 levels" in response.json()["error"]["message"]
    # 101 levels is already too deep; GitHub's payloads nest about 6.
    shallow_enough = json.dumps({"action": "x", "n": json.loads("[" * 98 + "]" * 98)}).encode()
    assert post(quiet_daemon, "pull_request", shallow_enough).status_code == 400  # no pull_request: a payload error
    assert "nested" not in post(quiet_daemon, "pull_request", shallow_enough).text
    too_deep = json.dumps({"action": "x", "n": json.loads("[" * 100 + "]" * 100)}).encode()
    assert "nested more than 100" in post(quiet_daemon, "pull_request", too_deep).text


def test_over_long_headers_and_actions_are_400_not_503(quiet_daemon: Daemon) -> None:
    body = json.dumps(pr_event(4, "d" * 40, "dev")).encode()
    long = "a" * 65
    assert post(quiet_daemon, "pull_request", body, **{"X-GitHub-Event": long}).status_code == 400
    assert post(quiet_daemon, "pull_request", body, **{"X-GitHub-Delivery": long}).status_code == 400
    assert post(quiet_daemon, "pull_request", body, **{"X-GitHub-Delivery": "a b"}).status_code == 400
    long_action = json.dumps({**pr_event(4, "d" * 40, "dev"), "action": long}).encode()
    response = post(quiet_daemon, "pull_request", long_action)
    assert response.status_code == 400 and "$.action" in response.json()["error"]["message"]
    assert quiet_daemon.queue.list_jobs() == []


def test_nul_characters_in_a_signed_body_are_400(quiet_daemon: Daemon) -> None:
    payload = pr_event(4, "d" * 40, "dev")
    payload["pull_request"]["author_association"] = "OWN\u0000ER"
    response = post(quiet_daemon, "pull_request", json.dumps(payload).encode())
    assert response.status_code == 400
    assert "$.pull_request.author_association" in response.json()["error"]["message"]
    assert quiet_daemon.queue.list_jobs() == []


# -- approval per head SHA ----------------------------------------------------------------------------


def test_a_push_after_approval_by_an_author_without_write_access_is_held_and_the_label_removed(
    daemon: Daemon,
) -> None:
    github = daemon.github
    github.permissions[(REPO, "maintainer")] = "maintain"
    approved, pushed = "e" * 40, "f" * 40
    held = daemon.deliver("pull_request", pr_event(11, approved, "mallory", fork=True))
    daemon.wait(held["jobs"][1]["id"], ("done",))
    labeled = daemon.deliver("pull_request", pr_event(11, approved, "mallory", fork=True, action="labeled",
                                                       sender="maintainer"))  # fmt: skip
    assert daemon.wait(labeled["jobs"][0]["id"], ("failed",)).attempts == 1  # approved: it ran (clone fails)
    github.labels[(REPO, 11)] = ["evalward:run", "bug"]

    push = pr_event(11, pushed, "mallory", fork=True, action="synchronize")
    push["pull_request"]["labels"] = [{"name": "evalward:run"}, {"name": "bug"}]
    answer = daemon.deliver("pull_request", push)
    evaluate_id, notice_id = (job["id"] for job in answer["jobs"])
    assert [job["status"] for job in answer["jobs"]] == ["held", "queued"]
    daemon.wait(notice_id, ("done",))

    # The daemon took the label off (the name percent-encoded on the wire) and the check run says why.
    assert github.labels[(REPO, 11)] == ["bug"]
    [removal] = github.requests_to("DELETE", "/labels/")
    assert removal.path == f"/repos/{REPO}/issues/11/labels/evalward:run"
    [check] = daemon.checks_on(pushed)
    assert (check["conclusion"], check["output"]["title"]) == ("neutral", "Waiting for a maintainer")
    summary = check["output"]["summary"]
    assert "new commits since a maintainer approved it" in summary
    assert "was removed: it approved an earlier commit" in summary
    assert "adding the label `evalward:run`" in summary
    # No job ran at the new head: nothing started in progress there.
    assert daemon.queue.get(evaluate_id).status == "held"  # type: ignore[union-attr]
    started = [r for r in github.requests_to("POST", "/check-runs") if r.body.get("status") == "in_progress"]
    assert [r.body["head_sha"] for r in started] == [approved]

    # Labelling again approves the new head.
    relabel = pr_event(11, pushed, "mallory", fork=True, action="labeled", sender="maintainer")
    assert daemon.deliver("pull_request", relabel)["jobs"][0] == {"id": evaluate_id, "created": False,
                                                                 "status": "queued"}  # fmt: skip
    assert daemon.wait(evaluate_id, ("failed",)).attempts == 1


def test_a_push_to_a_labelled_pr_by_a_reader_of_the_repository_is_held_and_the_label_removed(
    daemon: Daemon,
) -> None:
    daemon.github.permissions[(REPO, "reader")] = "read"
    daemon.github.labels[(REPO, 12)] = ["evalward:run"]
    push = pr_event(12, "9" * 40, "reader", action="synchronize")
    push["pull_request"]["labels"] = [{"name": "evalward:run"}]
    job_id = daemon.deliver("pull_request", push)["jobs"][0]["id"]
    job = daemon.wait(job_id, ("held",))
    assert job.attempts == 0 and "approved an earlier commit" in str(job.last_error)
    assert daemon.github.labels[(REPO, 12)] == []
    [check] = daemon.checks_on("9" * 40)
    assert "was removed" in check["output"]["summary"]


def test_remove_issue_label_percent_encodes_the_name_and_answers_false_when_it_is_gone() -> None:
    from tests.fakes.github_server import FakeGitHub

    from evalward.github.client import GitHubClient

    with FakeGitHub() as github, GitHubClient(token="ghs_actions", api_url=github.url) as client:
        github.labels[(REPO, 1)] = ["needs/review", "evalward:run"]
        assert client.remove_issue_label(REPO, 1, "needs/review") is True
        assert client.remove_issue_label(REPO, 1, "needs/review") is False
        assert github.labels[(REPO, 1)] == ["evalward:run"]

    sent: list[bytes] = []

    def capture(request: httpx.Request) -> httpx.Response:
        sent.append(request.url.raw_path)
        return httpx.Response(200, json=[])

    with GitHubClient(token="t", api_url="https://api.github.com", transport=httpx.MockTransport(capture)) as client:
        client.remove_issue_label(REPO, 1, "needs/review")
        client.remove_issue_label(REPO, 1, "evalward:run")
    # One path segment each: a '/' in a label cannot reach another endpoint.
    assert sent == [
        f"/repos/{REPO}/issues/1/labels/needs%2Freview".encode(),
        f"/repos/{REPO}/issues/1/labels/evalward%3Arun".encode(),
    ]
