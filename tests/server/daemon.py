"""A running daemon for end-to-end tests: the App served by uvicorn with one worker, webhooks over HTTP,
the worker talking to the fake GitHub over HTTP. `start_daemon` runs one; the `daemon` fixture
(tests/server/conftest.py, re-exported by tests/security/conftest.py) wraps it.

The clone URL points nowhere, so a job that is allowed to run gets as far as its in-progress check run and
the clone — which fails, and (with `max_attempts=1`) completes that same check run as a failure. A job that
is not allowed never gets there.
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.fakes.github_server import FakeGitHub, app_keys
from tests.github.contract import check_requests
from tests.server.chaos import sandbox_setting
from tests.server.conftest import delivery_headers, example, make_settings
from tests.server.live import LiveServer

from evalward._server.app import create_app
from evalward._server.runtime import build_pool
from evalward.store import Store, open_store
from evalward.store.job_queue import JobQueue, JobView

REPO = "acme/agent"
INSTALLATION = 4242


KEYS = app_keys()


def pr_event(
    number: int, head_sha: str, author: str, *, fork: bool = False, action: str = "opened", sender: str | None = None
) -> dict[str, Any]:
    payload = copy.deepcopy(example("pull_request.opened.2"))
    payload.update({"action": action, "number": number, "installation": {"id": INSTALLATION}})
    payload["repository"]["full_name"] = REPO
    payload["sender"]["login"] = sender or author
    pr = payload["pull_request"]
    pr.update({"number": number, "labels": []})
    pr["user"]["login"] = author
    pr["head"].update({"sha": head_sha, "ref": f"feature-{number}"})
    pr["head"]["repo"]["full_name"] = "mallory/agent" if fork else REPO
    pr["base"]["repo"]["full_name"] = REPO
    if action == "labeled":
        payload["label"] = {"name": "evalward:run"}
    return payload


@dataclass
class Daemon:
    github: FakeGitHub
    queue: JobQueue
    http: httpx.Client
    waits: list[float] = field(default_factory=list)
    store: Store | None = None

    def deliver(self, event: str, payload: dict[str, Any]) -> dict[str, Any]:
        body = json.dumps(payload).encode()
        response = self.http.post("/webhooks/github", content=body, headers=delivery_headers(event, body))
        assert response.status_code == 202, response.text
        answer: dict[str, Any] = response.json()
        return answer

    def wait(self, job_id: int, statuses: tuple[str, ...], *, attempts: int | None = None) -> JobView:
        """Poll until the job reaches one of `statuses` (and, if given, its claim count); no time bound asserted."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            job = self.queue.get(job_id)
            if job is not None and job.status in statuses and (attempts is None or job.attempts == attempts):
                return job
            time.sleep(0.02)
        raise AssertionError(f"job {job_id} never reached {statuses}: {self.queue.get(job_id)}")

    def checks_on(self, sha: str) -> list[dict[str, Any]]:
        return sorted((c for c in self.github.check_runs.values() if c["head_sha"] == sha), key=lambda c: c["id"])


@contextlib.contextmanager
def start_daemon(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    *,
    expect_tokens: bool = True,
    db: str | None = None,
    key_file: Path | None = None,
    **overrides: Any,
) -> Iterator[Daemon]:
    """The daemon with one worker; on exit, checks that no token reached a log line and every request the
    fake GitHub received fits GitHub's REST description. `expect_tokens=False` for tests in which no job
    reaches the worker; `db` another database than a fresh SQLite file; `key_file` where the App's key is
    read from (`github_private_key_file`) instead of a setting; `overrides` change the settings. Jobs run in
    bubblewrap where it works here (`chaos.sandbox_setting`), else unsandboxed."""
    private, public = KEYS
    db = db or f"sqlite:///{tmp_path / 'server.db'}"
    caplog.set_level(logging.DEBUG, logger="evalward")
    key: dict[str, Any] = {"github_private_key": private}
    if key_file is not None:
        key_file.parent.mkdir(parents=True, exist_ok=True)
        key_file.write_text(private, encoding="utf-8")
        key_file.chmod(0o600)
        key = {"github_private_key_file": str(key_file)}
    with FakeGitHub(app_public_key=public) as github, open_store(db) as store:
        values: dict[str, Any] = {
            "role": "all", "workers": 1, "github_app_id": github.app_id, **key, "github_api_url": github.url,
            "clone_url_template": f"file://{tmp_path}/nowhere/{{repo}}.git", "allow_file_clone_urls": True,
            "work_dir": str(tmp_path / "jobs"), "poll_s": 0.02, "heartbeat_s": 0.5, "max_attempts": 1,
            "redeliver_on_start": False, "sandbox": sandbox_setting(),
        }  # fmt: skip
        settings = make_settings(db, **{**values, **overrides})
        waits: list[float] = []
        options = {"sleep": waits.append, "jitter": lambda: 1.0}
        app = create_app(
            settings, store, pool_factory=lambda state: build_pool(settings, store, github_options=options)
        )
        with LiveServer(app) as server, httpx.Client(base_url=server.url, timeout=30) as http:
            yield Daemon(github, JobQueue(store.engine), http, waits, store)
        # Tokens and the App's JWT never reach a log line.
        minted = list(github.installation_tokens)
        assert minted or not expect_tokens, "the worker never asked for an installation token"
        assert not any(token in caplog.text for token in minted)
        assert "eyJ" not in caplog.text and "PRIVATE KEY" not in caplog.text
        assert check_requests(github.requests) == []
