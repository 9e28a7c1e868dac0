"""The webhook endpoint, /healthz and /metrics in-process (httpx.ASGITransport): every real example
payload signed, signed wrongly, unsigned, replayed, truncated and oversized → the right status, no 500,
one job per delivery."""

from __future__ import annotations

import json

import httpx
import pytest
from tests.server.conftest import WEBHOOKS, delivery_headers, example, make_settings

from evalward._server.app import create_app
from evalward._server.settings import ServerSettings
from evalward.store import Store
from evalward.store.job_queue import JobQueue

EXAMPLES = sorted(p.stem for p in WEBHOOKS.glob("*.json"))
EVENT_OF = {name: name.split(".")[0] for name in EXAMPLES}


def body_of(name: str) -> bytes:
    return (WEBHOOKS / f"{name}.json").read_bytes()


@pytest.mark.parametrize("name", EXAMPLES)
async def test_every_example_signed_correctly_is_acknowledged(client: httpx.AsyncClient, name: str) -> None:
    body = body_of(name)
    response = await client.post("/webhooks/github", content=body, headers=delivery_headers(EVENT_OF[name], body))
    assert response.status_code in (200, 202), response.text
    assert response.json()["note"]


@pytest.mark.parametrize("name", EXAMPLES)
async def test_every_example_signed_wrongly_or_unsigned_is_401(client: httpx.AsyncClient, name: str) -> None:
    body = body_of(name)
    wrong = await client.post(
        "/webhooks/github", content=body, headers=delivery_headers(EVENT_OF[name], body, secret="not-the-secret")
    )
    unsigned = await client.post(
        "/webhooks/github", content=body, headers=delivery_headers(EVENT_OF[name], body, secret=None)
    )
    assert (wrong.status_code, unsigned.status_code) == (401, 401)
    assert wrong.json()["error"]["message"] == "missing or invalid X-Hub-Signature-256"


async def test_a_replayed_delivery_creates_no_second_job(client: httpx.AsyncClient, store: Store) -> None:
    body = body_of("pull_request.opened.2")
    headers = delivery_headers("pull_request", body, delivery="72d3162e-cc78-11e3-81ab-4c9367dc0958")
    first = await client.post("/webhooks/github", content=body, headers=headers)
    again = await client.post("/webhooks/github", content=body, headers=headers)
    # A second delivery id for the same head (a double send by GitHub) is also one job.
    other = await client.post("/webhooks/github", content=body, headers=delivery_headers("pull_request", body))
    assert first.status_code == again.status_code == other.status_code == 202
    assert first.json()["duplicate"] is False
    assert again.json()["duplicate"] is True and other.json()["duplicate"] is True
    assert first.json()["jobs"][0]["id"] == again.json()["jobs"][0]["id"] == other.json()["jobs"][0]["id"]
    assert len(JobQueue(store.engine).list_jobs()) == 1


async def test_truncated_bodies_are_401_when_signed_whole_and_400_when_signed_truncated(
    client: httpx.AsyncClient,
) -> None:
    body = body_of("pull_request.opened.2")
    cut = body[: len(body) // 2]
    signed_whole = delivery_headers("pull_request", body)
    assert (await client.post("/webhooks/github", content=cut, headers=signed_whole)).status_code == 401
    response = await client.post("/webhooks/github", content=cut, headers=delivery_headers("pull_request", cut))
    assert response.status_code == 400
    assert response.json()["error"]["message"].startswith("the body is not valid JSON")


async def test_bodies_that_are_not_objects_or_lack_needed_fields_are_400(client: httpx.AsyncClient) -> None:
    for body in (b"[1, 2]", b'"text"', b"\xff\xfe"):
        response = await client.post("/webhooks/github", content=body, headers=delivery_headers("pull_request", body))
        assert response.status_code == 400, body
    payload = example("pull_request.opened.2")
    del payload["pull_request"]["head"]["sha"]
    body = json.dumps(payload).encode()
    response = await client.post("/webhooks/github", content=body, headers=delivery_headers("pull_request", body))
    assert response.status_code == 400
    assert "pull_request.head.sha" in response.json()["error"]["message"]


async def test_missing_event_or_delivery_headers_are_400(client: httpx.AsyncClient) -> None:
    body = body_of("ping.event.1")
    headers = delivery_headers("ping", body)
    del headers["X-GitHub-Delivery"]
    assert (await client.post("/webhooks/github", content=body, headers=headers)).status_code == 400


async def test_oversized_payloads_are_413_before_verification(sqlite_url: str) -> None:
    from evalward.store import open_store

    settings = make_settings(sqlite_url, max_webhook_bytes=1000)
    with open_store(sqlite_url) as store:
        app = create_app(settings, store)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as http:
            body = body_of("pull_request.opened.2")  # ~24 kB
            response = await http.post("/webhooks/github", content=body, headers=delivery_headers("pull_request", body))
            assert response.status_code == 413
            small = b'{"zen": "ok"}'
            assert (
                await http.post("/webhooks/github", content=small, headers=delivery_headers("ping", small))
            ).status_code == 200


async def test_form_encoded_deliveries_are_accepted(client: httpx.AsyncClient) -> None:
    from urllib.parse import urlencode

    body = urlencode({"payload": body_of("installation.created.1").decode()}).encode()
    headers = delivery_headers("installation", body)
    headers["Content-Type"] = "application/x-www-form-urlencoded"
    response = await client.post("/webhooks/github", content=body, headers=headers)
    assert response.status_code == 202
    assert response.json()["jobs"][0]["status"] == "done"


async def test_a_new_head_cancels_the_superseded_job_and_closing_cancels_the_rest(
    client: httpx.AsyncClient, store: Store
) -> None:
    queue = JobQueue(store.engine)
    opened = example("pull_request.opened.2")
    body = json.dumps(opened).encode()
    first = (await client.post("/webhooks/github", content=body, headers=delivery_headers("pull_request", body))).json()
    pushed = example("pull_request.synchronize.1")
    pushed["pull_request"]["head"]["sha"] = "b" * 40
    body = json.dumps(pushed).encode()
    second = (
        await client.post("/webhooks/github", content=body, headers=delivery_headers("pull_request", body))
    ).json()
    assert second["cancelled"] == [first["jobs"][0]["id"]]
    statuses = {j.id: j.status for j in queue.list_jobs()}
    assert statuses == {first["jobs"][0]["id"]: "cancelled", second["jobs"][0]["id"]: "queued"}
    # A late redelivery of the old "opened" must not cancel the newer job.
    body = json.dumps(opened).encode()
    late = (await client.post("/webhooks/github", content=body, headers=delivery_headers("pull_request", body))).json()
    assert late["duplicate"] is True and late["cancelled"] == []
    body = body_of("pull_request.closed.1")
    closed = (
        await client.post("/webhooks/github", content=body, headers=delivery_headers("pull_request", body))
    ).json()
    assert closed["cancelled"] == [second["jobs"][0]["id"]]


async def test_rerequest_releases_a_held_fork_job_instead_of_adding_one(
    client: httpx.AsyncClient, store: Store
) -> None:
    queue = JobQueue(store.engine)
    fork = example("pull_request.opened.2")
    fork["pull_request"]["head"]["repo"]["full_name"] = "mallory/Hello-World"
    body = json.dumps(fork).encode()
    held = (await client.post("/webhooks/github", content=body, headers=delivery_headers("pull_request", body))).json()
    assert [j["status"] for j in held["jobs"]] == ["held", "queued"]
    suite = example("check_suite.rerequested.1")
    suite["check_suite"]["head_sha"] = fork["pull_request"]["head"]["sha"]
    body = json.dumps(suite).encode()
    rerun = (await client.post("/webhooks/github", content=body, headers=delivery_headers("check_suite", body))).json()
    assert rerun["released"] == [held["jobs"][0]["id"]] and rerun["jobs"] == []
    assert {j.kind: j.status for j in queue.list_jobs()} == {"evaluate": "queued", "notice": "queued"}


async def test_without_a_configured_secret_every_delivery_is_refused(sqlite_url: str) -> None:
    from evalward.store import open_store

    with open_store(sqlite_url) as store:
        app = create_app(make_settings(sqlite_url, webhook_secrets=[]), store)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as http:
            body = body_of("ping.event.1")
            response = await http.post("/webhooks/github", content=body, headers=delivery_headers("ping", body))
            assert response.status_code == 503


async def test_healthz_and_metrics(client: httpx.AsyncClient, settings: ServerSettings) -> None:
    from evalward._server.tokens import hash_token

    health = await client.get("/healthz")
    assert health.status_code == 200 and health.json()["status"] == "ok"
    body = body_of("installation.created.1")
    await client.post("/webhooks/github", content=body, headers=delivery_headers("installation", body))
    await client.post("/webhooks/github", content=body, headers=delivery_headers("installation", body, secret="x"))
    assert (await client.get("/metrics")).status_code == 401  # closed unless a token is configured and sent
    settings.metrics_token_hashes = [hash_token("ewt_metrics")]
    metrics = await client.get("/metrics", headers={"Authorization": "Bearer ewt_metrics"})
    assert metrics.headers["content-type"].startswith("text/plain; version=0.0.4")
    text = metrics.text
    assert 'evalward_webhook_deliveries_total{event="installation",outcome="enqueued"} 1' in text
    # An unsigned request's event header is not trusted, so it is not a label value.
    assert 'evalward_webhook_deliveries_total{event="unverified",outcome="bad_signature"} 1' in text
    assert 'evalward_jobs{kind="installation",status="done"} 1' in text
    assert "evalward_webhook_ack_seconds_count 2" in text


async def test_unknown_routes_are_json_404(client: httpx.AsyncClient) -> None:
    response = await client.get("/api/v1/nothing")
    assert response.status_code == 404
    assert response.json() == {"error": {"status": 404, "message": "Not Found"}}
