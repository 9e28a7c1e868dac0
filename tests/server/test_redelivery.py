"""Start-up redelivery through the running daemon: the fake GitHub delivers webhooks over HTTP and keeps the
App's delivery log; a delivery made while the daemon was down is resent when it starts, once, and a resent
delivery (same GUID) never makes a second job."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.fakes.github_server import FakeGitHub
from tests.github.contract import check_requests
from tests.server.conftest import SECRET, delivery_headers, make_settings
from tests.server.live import LiveServer
from tests.server.test_write_access import INSTALLATION, KEYS, REPO, pr_event

from evalward._server.app import create_app
from evalward._server.redeliver import start_redelivery
from evalward._server.settings import ServerSettings, load_settings
from evalward.store import Store, open_store
from evalward.store.job_queue import JobQueue


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def settings_for(db: str, github: FakeGitHub, **overrides: Any) -> ServerSettings:
    values: dict[str, Any] = {
        "role": "web",
        "github_app_id": github.app_id,
        "github_private_key": KEYS[0],
        "github_api_url": github.url,
        "redeliver_delay_s": 0,
    }
    values.update(overrides)
    return make_settings(db, **values)


def run_startup(settings: ServerSettings, store: Store, github: FakeGitHub) -> None:
    """Start the daemon, let its start-up redelivery pass finish, and stop it."""
    app = create_app(settings, store)
    server = LiveServer(app)
    github.hook_url = f"{server.url}/webhooks/github"
    with server:
        thread = app.state.server.redelivery
        assert thread is not None
        thread.join(30)
        assert not thread.is_alive()
        # GitHub resends after answering 202: wait for every requested resend to arrive before stopping.
        assert github.wait_for_deliveries(
            lambda log: sum(d["redelivery"] for d in log) >= len(github.redelivery_requests)
        )


def evaluate_jobs(queue: JobQueue) -> list[Any]:
    return [j for j in queue.list_jobs() if j.kind == "evaluate"]


def test_a_delivery_missed_while_down_is_resent_at_start_up_once(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'server.db'}"
    with FakeGitHub(app_public_key=KEYS[1]) as github, open_store(db) as store:
        queue = JobQueue(store.engine)
        github.hook_secret = SECRET
        github.hook_url = f"http://127.0.0.1:{closed_port()}/webhooks/github"  # the daemon is down
        missed = github.send_webhook("pull_request", pr_event(3, "3" * 40, "dev"))
        assert missed["status_code"] == 0
        # Received and recorded, but GitHub logged a failure (the answer came too late): not to be resent.
        with LiveServer(create_app(settings_for(db, github, redeliver_on_start=False), store)) as up:
            body = json.dumps(pr_event(4, "4" * 40, "dev")).encode()
            slow = httpx.post(f"{up.url}/webhooks/github", content=body,
                              headers=delivery_headers("pull_request", body, delivery="slow-guid"))  # fmt: skip
            assert slow.status_code == 202
        github.log_delivery("pull_request", pr_event(4, "4" * 40, "dev"), guid="slow-guid", status_code=0,
                            status="timed out")  # fmt: skip
        assert len(evaluate_jobs(queue)) == 1

        run_startup(settings_for(db, github), store, github)

        # Only the missed delivery was asked for again; it arrived with its GUID and made its job.
        assert github.redelivery_requests == [missed["id"]]
        [resent] = [d for d in github.hook_deliveries if d["redelivery"]]
        assert (resent["guid"], resent["status_code"]) == (missed["guid"], 202)
        jobs = evaluate_jobs(queue)
        assert sorted(j.head_sha for j in jobs) == ["3" * 40, "4" * 40]
        assert queue.recorded_deliveries([missed["guid"], "slow-guid", "never"]) == {missed["guid"], "slow-guid"}

        # Redelivered again (by hand in GitHub's UI, say): same GUID, so no second job.
        with LiveServer(create_app(settings_for(db, github, redeliver_on_start=False), store)) as up:
            github.hook_url = f"{up.url}/webhooks/github"
            again = github.send_webhook("pull_request", {}, guid=missed["guid"], redelivery=True)
            assert again["status_code"] == 202
        assert len(evaluate_jobs(queue)) == 2

        # The next start finds nothing to resend: every failed GUID since succeeded or is recorded.
        listed = len(github.requests_to("GET", "/app/hook/deliveries"))
        run_startup(settings_for(db, github), store, github)
        assert len(github.requests_to("GET", "/app/hook/deliveries")) == listed + 1
        assert github.redelivery_requests == [missed["id"]]
        assert len(evaluate_jobs(queue)) == 2
        assert check_requests(github.requests) == []


def test_a_redelivered_pull_request_is_answered_as_a_duplicate(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'server.db'}"
    with FakeGitHub(app_public_key=KEYS[1]) as github, open_store(db) as store:
        github.hook_secret = SECRET
        with LiveServer(create_app(settings_for(db, github, redeliver_on_start=False), store)) as up:
            github.hook_url = f"{up.url}/webhooks/github"
            first = github.send_webhook("pull_request", pr_event(5, "5" * 40, "dev"))
            with httpx.Client(base_url=up.url) as http:
                # What GitHub does on a redelivery: the same body, signature and X-GitHub-Delivery.
                event, body = github._hook_bodies[first["guid"]]
                again = http.post("/webhooks/github", content=body,
                                  headers=delivery_headers(event, body, delivery=first["guid"]))  # fmt: skip
        assert again.status_code == 202 and again.json()["duplicate"] is True
        assert len(evaluate_jobs(JobQueue(store.engine))) == 1


def test_start_up_does_not_wait_for_github(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    db = f"sqlite:///{tmp_path / 'server.db'}"
    listing = threading.Event()
    release = threading.Event()

    def slow_github(request: httpx.Request) -> httpx.Response:
        listing.set()
        release.wait(30)
        return httpx.Response(404, json={"message": "Not Found"})

    with FakeGitHub(app_public_key=KEYS[1]) as github, open_store(db) as store:
        app = create_app(settings_for(db, github), store, transport_factory=lambda: httpx.MockTransport(slow_github))
        with LiveServer(app) as server:
            assert listing.wait(30)  # the redelivery pass is waiting on GitHub…
            assert httpx.get(f"{server.url}/healthz").status_code == 200  # …and the server already answers
            thread = app.state.server.redelivery
            assert thread is not None and thread.is_alive()
            release.set()
            thread.join(30)
        assert "redelivery at start-up failed: GitHubError" in caplog.text


def test_redelivery_is_off_by_flag_or_variable_and_for_workers_or_without_an_app(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'server.db'}"
    assert load_settings(environ={"EVALWARD_REDELIVER_ON_START": "false"}).redeliver_on_start is False
    assert load_settings(flags={"redeliver_on_start": False}, environ={}).redeliver_on_start is False
    assert load_settings(environ={}).redeliver_on_start is True
    with FakeGitHub(app_public_key=KEYS[1]) as github, open_store(db) as store:
        queue = JobQueue(store.engine)
        for settings in (
            settings_for(db, github, redeliver_on_start=False),
            settings_for(db, github, role="worker"),
            make_settings(db, redeliver_delay_s=0),  # no App configured
        ):
            assert start_redelivery(settings, queue) is None
        app = create_app(settings_for(db, github, redeliver_on_start=False), store)
        with LiveServer(app):
            assert app.state.server.redelivery is None
        assert github.requests == []


def test_the_installation_example_is_recorded_with_its_guid(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'server.db'}"
    with FakeGitHub(app_public_key=KEYS[1]) as github, open_store(db) as store:
        github.hook_secret = SECRET
        with LiveServer(create_app(settings_for(db, github, redeliver_on_start=False), store)) as up:
            github.hook_url = f"{up.url}/webhooks/github"
            payload = {"zen": "Keep it logically awesome.", "hook_id": 1, "installation": {"id": INSTALLATION},
                       "repository": {"full_name": REPO}}  # fmt: skip
            ping = github.send_webhook("ping", payload)
            star = github.send_webhook("star", {"action": "created", "repository": {"full_name": REPO}})
            assert (ping["status_code"], star["status_code"]) == (200, 202)
        # Ignored events count as received too: GitHub saw a 2xx, and so will a later start-up pass.
        assert JobQueue(store.engine).recorded_deliveries([ping["guid"], star["guid"]]) == {ping["guid"], star["guid"]}
