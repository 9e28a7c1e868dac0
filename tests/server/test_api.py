"""The JSON API in-process: tokens (hashed, per repository), append-only uploads, reads, compare,
case history, jobs, the OpenAPI document and JSON errors."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from tests.server.conftest import make_settings
from tests.server.runs import dice_run, t

from evalward._server.app import create_app
from evalward._server.tokens import hash_token
from evalward.run_json import render_json
from evalward.store import Store, open_store
from evalward.store.job_queue import JobQueue, JobSpec

UPLOAD = "ewt_upload-token-for-acme-dice"
READ = "ewt_read-token"


@pytest.fixture
def api_store(sqlite_url: str) -> AsyncIterator[Store]:  # type: ignore[misc]
    store = open_store(sqlite_url)
    yield store
    store.close()


@pytest.fixture
async def api(sqlite_url: str, api_store: Store) -> AsyncIterator[httpx.AsyncClient]:
    settings = make_settings(
        sqlite_url,
        read_token_hashes=[hash_token(READ)],
        upload_token_hashes={"acme/dice": [hash_token(UPLOAD)]},
    )
    app = create_app(settings, api_store)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as http:
        yield http


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_upload_needs_the_repositorys_token_and_is_append_only(api: httpx.AsyncClient, tmp_path: Path) -> None:
    with open_store(f"sqlite:///{tmp_path / 'action.db'}") as action_store:
        run = dice_run(action_store, tmp_path, run_id="up-1", commit="a" * 40)
    body = render_json(run)
    assert (await api.post("/api/v1/runs", content=body)).status_code == 401
    assert (await api.post("/api/v1/runs", content=body, headers=auth(READ))).status_code == 403
    created = await api.post("/api/v1/runs", content=body, headers=auth(UPLOAD))
    assert created.status_code == 201
    assert created.json() == {"run_id": "up-1", "url": "/api/v1/runs/up-1"}
    again = await api.post("/api/v1/runs", content=body, headers=auth(UPLOAD))
    assert again.status_code == 409
    assert again.json()["error"]["message"] == "run 'up-1' is already stored; runs are append-only"
    other_repo = render_json(
        run.model_copy(update={"run_id": "up-2", "context": run.context.model_copy(update={"repository": "evil/x"})})
    )
    assert (await api.post("/api/v1/runs", content=other_repo, headers=auth(UPLOAD))).status_code == 403
    bad = await api.post("/api/v1/runs", content=b'{"run_id": 5}', headers=auth(UPLOAD))
    assert bad.status_code == 422 and "schema_version" in bad.json()["error"]["message"]


async def test_reads_need_the_read_token(api: httpx.AsyncClient) -> None:
    for path in (
        "/api/v1/jobs",
        "/api/v1/repos/acme/dice/runs",
        "/api/v1/runs/x",
        "/api/v1/repos/acme/dice/cases/c/history",
    ):
        response = await api.get(path)
        assert response.status_code == 401, path
        assert response.json()["error"]["message"].startswith("a read token is required")
    assert (await api.get("/api/v1/jobs", headers=auth("ewt_wrong"))).status_code == 401
    assert (await api.get("/api/v1/jobs", headers=auth(READ))).status_code == 200


async def test_runs_run_compare_and_case_history(api: httpx.AsyncClient, api_store: Store, tmp_path: Path) -> None:
    dice_run(api_store, tmp_path, run_id="base-1", commit="1" * 40, started=t(0))
    dice_run(api_store, tmp_path, run_id="base-2", commit="2" * 40, started=t(10))
    dice_run(
        api_store, tmp_path, run_id="pr-1", commit="3" * 40, branch="feature", pr_number=4, broken=True, started=t(20)
    )

    runs = (await api.get("/api/v1/repos/acme/dice/runs", headers=auth(READ))).json()["runs"]
    assert [r["run_id"] for r in runs] == ["pr-1", "base-2", "base-1"]
    only_main = (await api.get("/api/v1/repos/acme/dice/runs?branch=main&limit=1", headers=auth(READ))).json()
    assert [r["run_id"] for r in only_main["runs"]] == ["base-2"]
    assert (await api.get("/api/v1/repos/acme/dice/runs?limit=0", headers=auth(READ))).status_code == 400

    run = (await api.get("/api/v1/runs/pr-1", headers=auth(READ))).json()
    assert run["run_id"] == "pr-1" and run["context"]["pr_number"] == 4
    missing = await api.get("/api/v1/runs/nope", headers=auth(READ))
    assert missing.status_code == 404 and missing.json()["error"]["message"] == "run 'nope' is not stored"

    compared = (
        await api.get("/api/v1/runs/pr-1/compare?baseline=base-2&allow_mismatch=true", headers=auth(READ))
    ).json()
    assert compared["baseline_run_id"] == "base-2"
    assert compared["verdict"]["current_run_id"] == "pr-1"
    assert (await api.get("/api/v1/runs/pr-1/compare?baseline=nope", headers=auth(READ))).status_code == 404

    case_id = "roll_17_sided_dice_twice"
    history = (
        await api.get(
            f"/api/v1/repos/acme/dice/cases/{case_id}/history?metric=tool_trajectory_avg_score", headers=auth(READ)
        )
    ).json()
    # Hand calculation: the right tool call in both base runs (1.0 each), two 20-sided rolls instead of
    # two 17-sided ones in the PR run: no expected call matched (0.0).
    assert [(p["run_id"], p["score"]) for p in history["points"]] == [("base-1", 1.0), ("base-2", 1.0), ("pr-1", 0.0)]


async def test_jobs_listing_and_filters(api: httpx.AsyncClient, api_store: Store) -> None:
    queue = JobQueue(api_store.engine)
    queue.enqueue(
        JobSpec("evaluate", "e1", {"pr_number": 3, "event": "pull_request"}, repo="acme/dice", head_sha="1" * 40)
    )
    queue.enqueue(JobSpec("installation", "i1", {"event": "installation"}, status="done"))
    jobs = (await api.get("/api/v1/jobs", headers=auth(READ))).json()["jobs"]
    assert [(j["kind"], j["status"], j["pr_number"]) for j in jobs] == [
        ("installation", "done", None),
        ("evaluate", "queued", 3),
    ]
    queued = (await api.get("/api/v1/jobs?status=queued", headers=auth(READ))).json()["jobs"]
    assert [j["dedupe_key"] for j in queued] == ["e1"]


async def test_openapi_document_lists_every_route(api: httpx.AsyncClient) -> None:
    document = (await api.get("/openapi.json")).json()
    assert document["openapi"] == "3.1.0"
    assert sorted(document["paths"]) == [
        "/api/v1/jobs",
        "/api/v1/repos/{owner}/{repo}/cases/{case_id}/history",
        "/api/v1/repos/{owner}/{repo}/runs",
        "/api/v1/runs",
        "/api/v1/runs/{run_id}",
        "/api/v1/runs/{run_id}/baseline",
        "/api/v1/runs/{run_id}/compare",
        "/api/v1/runs/{run_id}/verdicts",
    ]


async def test_public_read_needs_no_token(sqlite_url: str, api_store: Store) -> None:
    app = create_app(make_settings(sqlite_url, public_read=True), api_store)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as http:
        assert (await http.get("/api/v1/jobs")).status_code == 200
