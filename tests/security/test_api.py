"""Hostile input to the daemon's JSON API over HTTP: each is answered 4xx with the reason, never 500.

The daemon runs as in production (uvicorn, one worker, the fake GitHub) with public reads and one upload
token, so every request below gets past authentication and reaches the input checks.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.server.daemon import REPO, Daemon, start_daemon

from evalward._server.tokens import hash_token

UPLOAD_TOKEN = "upload-token-for-tests"


@pytest.fixture
def api(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> Iterator[Daemon]:
    overrides = {"public_read": True, "upload_token_hashes": {REPO: [hash_token(UPLOAD_TOKEN)]}}
    with start_daemon(tmp_path, caplog, expect_tokens=False, **overrides) as running:
        yield running


def upload(http: httpx.Client, body: bytes | str, path: str = "/api/v1/runs") -> httpx.Response:
    return http.post(path, content=body, headers={"Authorization": f"Bearer {UPLOAD_TOKEN}"})


def assert_client_error(response: httpx.Response, status: int, fragment: str) -> None:
    assert response.status_code == status, response.text
    assert fragment in response.json()["error"]["message"]


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/runs/abc%00def",
        "/api/v1/runs/abc%00def/verdicts",
        "/api/v1/repos/acme/agent%00/runs",
        "/api/v1/repos/acme/agent/cases/c%00/history",
        "/api/v1/runs/a%0Ab",
    ],
)
def test_control_characters_in_the_path_are_400(api: Daemon, path: str) -> None:
    assert_client_error(api.http.get(path), 400, "control characters")


@pytest.mark.parametrize(
    "query",
    ["status=%00", "repo=acme%00", "limit=%00", "branch=main%00", "baseline=commit:%00", "%00=x"],
)
def test_control_characters_in_the_query_are_400(api: Daemon, query: str) -> None:
    path = "/api/v1/runs/r1/compare" if "baseline" in query else "/api/v1/jobs"
    assert_client_error(api.http.get(f"{path}?{query}"), 400, "control characters")


def test_over_long_paths_and_query_values_are_400(api: Daemon) -> None:
    assert_client_error(api.http.get("/api/v1/runs/" + "r" * 3000), 400, "longer than 2048")
    assert_client_error(api.http.get("/api/v1/jobs?repo=" + "a" * 2000), 400, "longer than 1024")


def test_bodies_that_are_not_json_or_nest_too_deep_or_hold_nul_are_400(api: Daemon, tmp_path: Path) -> None:
    from tests.server.runs import dice_run

    from evalward.run_json import render_json
    from evalward.store import open_store

    # The verdict and baseline bodies are read only for a stored run the token may see (authenticate, then read).
    with open_store(f"sqlite:///{tmp_path / 'action.db'}") as action_store:
        stored = dice_run(action_store, tmp_path, run_id="r1", repository=REPO, commit="a" * 40)
    assert upload(api.http, render_json(stored)).status_code == 201
    assert_client_error(upload(api.http, b"{not json"), 400, "not valid JSON")
    assert_client_error(upload(api.http, b"\xff\xfe"), 400, "not UTF-8")
    deep = "[" * 10_000 + "]" * 10_000
    assert_client_error(upload(api.http, deep), 400, "nested more than 100 levels")
    with_nul = json.dumps({"schema_version": 1, "run_id": "r\u0000", "context": {"repository": REPO}})
    assert_client_error(upload(api.http, with_nul), 400, "NUL characters")
    for path in ("/api/v1/runs/r1/baseline", "/api/v1/runs/r1/verdicts"):
        assert_client_error(upload(api.http, deep, path), 400, "nested more than 100 levels")
        assert_client_error(upload(api.http, '{"base_branch": "ma\\u0000in"}', path), 400, "NUL characters")


def test_unknown_ids_are_404_and_invalid_content_422(api: Daemon) -> None:
    assert api.http.get("/api/v1/runs/no-such-run").status_code == 404
    assert api.http.get("/api/v1/runs/no-such-run/compare?baseline=commit:--upload-pack").status_code == 404
    assert api.http.get("/api/v1/jobs?limit=0").status_code == 400
    assert upload(api.http, b'{"schema_version": 1}').status_code == 422


def test_a_bug_is_a_logged_500_whose_answer_names_no_detail(
    api: Daemon, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the server's own faults are 500: logged (through the redactor) with the traceback, answered
    with a generic message that leaks nothing of it."""
    from evalward.store.job_queue import JobQueue

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("secret detail ghp_" + "x" * 36)

    monkeypatch.setattr(JobQueue, "list_jobs", broken)
    with caplog.at_level(logging.ERROR, logger="evalward._server"):
        response = api.http.get("/api/v1/jobs")
    assert response.status_code == 500
    assert response.json()["error"]["message"] == "internal error; see the server log"
    assert "secret detail" not in response.text
    assert any("unhandled error on GET /api/v1/jobs" in r.getMessage() for r in caplog.records)


@pytest.mark.postgres
def test_a_value_postgresql_refuses_is_a_4xx_not_a_500(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, pg_url: str
) -> None:
    """A stored run's commit column holds 64 characters; the API does not know every column's width, so
    what the database refuses anyway is the request's fault (422), not a server error."""
    from tests.server.runs import dice_run

    from evalward.run_json import render_json
    from evalward.store import open_store

    with open_store(f"sqlite:///{tmp_path / 'action.db'}") as action_store:
        run = dice_run(action_store, tmp_path, run_id="long-1", repository=REPO, commit="a" * 40)
    too_long = run.model_copy(update={"context": run.context.model_copy(update={"commit": "a" * 65})})
    overrides = {"upload_token_hashes": {REPO: [hash_token(UPLOAD_TOKEN)]}}
    with start_daemon(tmp_path, caplog, expect_tokens=False, db=pg_url, **overrides) as daemon:
        response = upload(daemon.http, render_json(too_long))
        assert response.status_code in (400, 422), response.text
        assert upload(daemon.http, render_json(run)).status_code == 201
