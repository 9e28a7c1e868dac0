"""Server fixtures: settings, a store on SQLite or the live PostgreSQL, the ASGI app, signed deliveries.

PostgreSQL comes from EVALWARD_TEST_POSTGRES_URL: skipped locally when unset, a failure when CI=true (the
queue's row locking must be proven on the real engine). Each session creates its own database, each test a
fresh schema in it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from tests.fakes.postgres import fresh_schema, throwaway_database

from evalward._server.app import create_app
from evalward._server.settings import ServerSettings
from evalward._server.webhooks import signature
from evalward.store import Store, open_store

if TYPE_CHECKING:
    from tests.server.daemon import Daemon

SECRET = "It's a Secret to Everybody"
WEBHOOKS = Path(__file__).resolve().parent.parent / "fakes" / "data" / "webhooks"


@pytest.fixture(scope="session")
def pg_database() -> Iterator[str]:
    yield from throwaway_database("server")


def fresh_pg_schema(database_url: str) -> str:
    return fresh_schema(database_url)


@pytest.fixture
def pg_url(pg_database: str) -> str:
    return fresh_pg_schema(pg_database)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'server.db'}"
    return fresh_pg_schema(request.getfixturevalue("pg_database"))


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'server.db'}"


def make_settings(db: str, **overrides: Any) -> ServerSettings:
    values: dict[str, Any] = {"db": db, "webhook_secrets": [SECRET], "role": "web", "workers": 0}
    values.update(overrides)
    return ServerSettings.model_validate(values)


@pytest.fixture
def settings(sqlite_url: str) -> ServerSettings:
    return make_settings(sqlite_url)


@pytest.fixture
def store(settings: ServerSettings) -> Iterator[Store]:
    opened = open_store(settings.db)
    yield opened
    opened.close()


@pytest.fixture
async def client(settings: ServerSettings, store: Store) -> AsyncIterator[httpx.AsyncClient]:
    """The app in-process (no socket, no lifespan: no workers)."""
    app = create_app(settings, store)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
        yield http


@pytest.fixture
def daemon(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> Iterator[Daemon]:
    """The daemon served by uvicorn with one worker and the fake GitHub (`tests/server/daemon.py`)."""
    from tests.server.daemon import start_daemon

    with start_daemon(tmp_path, caplog) as running:
        yield running


def example(name: str) -> dict[str, Any]:
    """A vendored `@octokit/webhooks-examples` payload, e.g. `pull_request.opened.1`."""
    data: dict[str, Any] = json.loads((WEBHOOKS / f"{name}.json").read_text(encoding="utf-8"))
    return data


def delivery_headers(
    event: str, body: bytes, *, delivery: str | None = None, secret: str | None = SECRET
) -> dict[str, str]:
    headers = {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
        "Content-Type": "application/json",
        "User-Agent": "GitHub-Hookshot/test",
    }
    if secret is not None:
        headers["X-Hub-Signature-256"] = signature(secret, body)
    return headers
