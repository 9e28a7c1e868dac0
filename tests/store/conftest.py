"""Database fixtures: every store test runs on SQLite (a temp file) and on the live PostgreSQL.

PostgreSQL comes from EVALWARD_TEST_POSTGRES_URL. Without it the PostgreSQL variants are skipped — except
when CI=true, where a missing or unreachable server fails them (a CI that silently skips the PostgreSQL
tests would ship untested code). Each test session creates its own database and drops it at the end;
each test gets a fresh schema in it (via the connection's search_path), so tests never see each
other's rows and never touch the server's other databases.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.fakes.postgres import fresh_schema, throwaway_database


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[str]:
    """A freshly created PostgreSQL database for this test session (URL without schema options)."""
    yield from throwaway_database("store")


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database URL on each backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'history' / 'history.db'}"
    database: str = request.getfixturevalue("postgres_database")
    return fresh_schema(database)


@pytest.fixture
def store(db_url: str) -> Iterator[object]:
    from evalward.store import open_store

    opened = open_store(db_url)
    yield opened
    opened.close()


@pytest.fixture
def pg_url(postgres_database: str) -> str:
    """A fresh schema on the live PostgreSQL (the PostgreSQL-only tests)."""
    return fresh_schema(postgres_database)
