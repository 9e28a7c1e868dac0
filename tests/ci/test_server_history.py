"""The Action's third history setup: no database of its own, the history lives in `evalward serve`.

A fresh CI runner (an empty local SQLite file each time) uploads its run to a real `evalward serve` app on a
socket, asks it for the baseline with the merge-base its checkout knows, and gates locally with the
repository's policy. A server that cannot be reached is retried and then reported as "no baseline", never
as a regression.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from evalward import remote_history
from evalward._server.app import create_app
from evalward._server.tokens import hash_token
from evalward.store import open_store
from server.conftest import make_settings
from server.live import LiveServer

from .conftest import PR_BASE, PR_NUMBER, REPO, Workspace, pull_request_payload, push_payload

UPLOAD = "ewt_upload-token-for-hello-world"
READ = "ewt_read"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    url = f"sqlite:///{tmp_path / 'server' / 'history.db'}"
    store = open_store(url)
    settings = make_settings(
        url, read_token_hashes=[hash_token(READ)], upload_token_hashes={REPO: [hash_token(UPLOAD)]}
    )
    with LiveServer(create_app(settings, store)) as live:
        yield live.url
    store.close()


def fresh_runner(workspace: Workspace, name: str) -> dict[str, str]:
    """Options for a job on a new runner: its own, empty, local history file."""
    return {"db_url": f"sqlite:///{workspace.root / name / 'history.db'}"}


def server_runs(server: str) -> list[dict[str, object]]:
    listed = httpx.get(f"{server}/api/v1/repos/{REPO}/runs", headers={"Authorization": f"Bearer {READ}"})
    assert listed.status_code == 200
    return list(listed.json()["runs"])


def test_pull_request_is_gated_against_the_servers_history(workspace: Workspace, server: str) -> None:
    settings = {"server_url": server}
    secrets = {"EVALWARD_SERVER_TOKEN": UPLOAD}

    # The push to the base branch runs on one runner and leaves its run on the server only.
    pushed, _ = workspace.run(
        workspace.env("push", push_payload(), **secrets), **settings, **fresh_runner(workspace, "a")
    )
    assert pushed.run is not None and pushed.run.context.commit == PR_BASE
    assert [r["run_id"] for r in server_runs(server)] == [pushed.run.run_id]

    # The pull request runs on another runner with an empty database, so only the server can know the baseline.
    workspace.agent("bad")
    result, log = workspace.run(
        workspace.env("pull_request", pull_request_payload(), **secrets), **settings, **fresh_runner(workspace, "b")
    )
    assert result.verdict is not None and result.verdict.outcome == "fail", log
    assert result.verdict.baseline is not None and result.verdict.baseline.run_id == pushed.run.run_id
    assert result.exit_code == 1
    assert result.run is not None
    assert {r["run_id"] for r in server_runs(server)} == {pushed.run.run_id, result.run.run_id}
    assert UPLOAD not in log
    # The verdict the PR got is kept on the server (and the dashboard shows it) and in the job's database.
    kept = httpx.get(f"{server}/api/v1/runs/{result.run.run_id}/verdicts", headers={"Authorization": f"Bearer {READ}"})
    [on_server] = kept.json()["verdicts"]
    assert (on_server["source"], on_server["verdict"]["outcome"]) == ("upload", "fail")
    assert on_server["verdict"]["baseline"]["run_id"] == pushed.run.run_id
    page = httpx.get(f"{server}/runs/{result.run.run_id}", headers={"Authorization": f"Bearer {READ}"})
    assert page.status_code == 200 and "As gated by upload on" in page.text
    # The comment links to that dashboard page.
    [comment] = workspace.fake.comments_on(REPO, PR_NUMBER)
    assert f"]({server}/runs/{result.run.run_id})" in comment["body"]
    # ... and to the pull request's page, which leads with that push's verdict and lists the push.
    pull = f"{server}/repos/{REPO}/pulls/{PR_NUMBER}"
    assert f"]({pull})" in comment["body"]
    pr_page = httpx.get(pull, headers={"Authorization": f"Bearer {READ}"})
    assert pr_page.status_code == 200
    assert '<div class="verdict verdict-fail" id=latest-verdict><span class="fail">FAIL</span>' in pr_page.text
    assert f'<a href="/runs/{result.run.run_id}">{result.run.run_id}</a>' in pr_page.text
    with open_store(f"sqlite:///{workspace.root / 'b' / 'history.db'}") as local:
        assert [v.source for v in local.recorded_verdicts(result.run.run_id)] == ["ci"]


def test_without_the_token_nothing_is_uploaded_and_the_gate_says_why(workspace: Workspace, server: str) -> None:
    result, log = workspace.run(workspace.env("pull_request", pull_request_payload()), server_url=server)

    # The server's history cannot be asked, so the baseline is made here: the base side, run on demand.
    assert result.verdict is not None and result.verdict.outcome == "pass"
    assert result.verdict.baseline is not None and result.verdict.baseline.on_demand_cases == 10
    assert "server-token" in log
    assert result.exit_code == 0
    assert server_runs(server) == []


def test_an_unreachable_server_is_retried_then_no_baseline_not_a_regression(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(remote_history, "RETRY_BACKOFF_S", 0.01)
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    env = workspace.env("pull_request", pull_request_payload(), EVALWARD_SERVER_TOKEN=UPLOAD)
    result, log = workspace.run(env, server_url=closed)

    # The outage is reported, never a regression; the baseline is made here instead (the base side on demand).
    assert result.verdict is not None and result.verdict.outcome == "pass"
    assert result.verdict.baseline is not None and result.verdict.baseline.on_demand_cases == 10
    assert result.exit_code == 0
    assert "did not answer after 4 attempts" in log


def test_the_baseline_endpoint_checks_tokens_and_input(workspace: Workspace, server: str) -> None:
    pushed, _ = workspace.run(workspace.env("push", push_payload(), EVALWARD_SERVER_TOKEN=UPLOAD), server_url=server)
    assert pushed.run is not None
    endpoint = f"{server}/api/v1/runs/{pushed.run.run_id}/baseline"
    assert httpx.post(endpoint, json={}).status_code == 401
    assert httpx.post(endpoint, json={}, headers={"Authorization": "Bearer wrong"}).status_code == 403
    bad = httpx.post(endpoint, json={"ancestors": "abc"}, headers={"Authorization": f"Bearer {UPLOAD}"})
    assert bad.status_code == 422 and "ancestors" in bad.json()["error"]["message"]
    missing = httpx.post(f"{server}/api/v1/runs/nope/baseline", json={}, headers={"Authorization": f"Bearer {READ}"})
    assert missing.status_code == 404
    ok = httpx.post(endpoint, json={"base_branch": "master"}, headers={"Authorization": f"Bearer {READ}"})
    assert ok.status_code == 200 and ok.json()["search"]["choice"] is None

    verdicts = f"{server}/api/v1/runs/{pushed.run.run_id}/verdicts"
    forged = {"outcome": "pass", "reason": "trust me", "current_run_id": "another-run"}
    assert httpx.post(verdicts, json=forged, headers={"Authorization": f"Bearer {UPLOAD}"}).status_code == 422
    own = {**forged, "current_run_id": pushed.run.run_id}
    assert httpx.post(verdicts, json=own).status_code == 401
    assert httpx.post(verdicts, json=own, headers={"Authorization": f"Bearer {READ}"}).status_code == 403
    assert httpx.post(verdicts, json=own, headers={"Authorization": f"Bearer {UPLOAD}"}).status_code == 201
