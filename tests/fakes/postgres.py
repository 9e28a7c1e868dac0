"""The live PostgreSQL for tests: one throw-away database per session, one fresh schema per test.

The server comes from EVALWARD_TEST_POSTGRES_URL. Without it PostgreSQL tests are skipped — except when
CI=true, where a missing or unreachable server fails them (a CI that silently skips them would ship
untested code). Schemas are selected through the connection's search_path, so tests never see each
other's rows and never touch the server's other databases.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from urllib.parse import quote

import pytest

PG_ENV = "EVALWARD_TEST_POSTGRES_URL"


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def driver_url(url: str) -> str:
    """`postgres://` and `postgresql://` → the psycopg 3 driver URL sqlalchemy needs."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def throwaway_database(purpose: str) -> Iterator[str]:
    """Create a uniquely named database, yield its URL, drop it afterwards (skip/fail rules above)."""
    raw = os.environ.get(PG_ENV)
    if not raw:
        if in_ci():
            pytest.fail(f"CI=true but {PG_ENV} is not set: the PostgreSQL tests must run in CI")
        pytest.skip(f"{PG_ENV} not set")
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    admin_url = make_url(driver_url(raw))
    name = f"evalward_{purpose}_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    try:
        admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    except Exception as exc:
        message = f"PostgreSQL at {admin_url.render_as_string(hide_password=True)} is unreachable: {exc}"
        if in_ci():
            pytest.fail(message)
        pytest.skip(message)
    try:
        yield admin_url.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def fresh_schema(database_url: str) -> str:
    """A new empty schema in `database_url`, returned as a URL whose connections use it."""
    from sqlalchemy import create_engine, text

    schema = f"t_{uuid.uuid4().hex[:12]}"
    engine = create_engine(database_url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    engine.dispose()
    separator = "&" if "?" in database_url else "?"
    return f"{database_url}{separator}options={quote(f'-csearch_path={schema}')}"
