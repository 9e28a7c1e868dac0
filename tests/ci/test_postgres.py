"""Team mode: `database-url` pointing at PostgreSQL — the push run stored there is the PR's baseline.

Uses the live server from EVALWARD_TEST_POSTGRES_URL (skipped without it, a failure without it when
CI=true, like the store tests), in a fresh schema of a database created for this test and dropped after.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from urllib.parse import quote

import pytest

from .conftest import PR_BASE, Workspace, outputs, pull_request_payload, push_payload


@pytest.fixture
def postgres_url() -> Iterator[str]:
    raw = os.environ.get("EVALWARD_TEST_POSTGRES_URL")
    if not raw:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("CI=true but EVALWARD_TEST_POSTGRES_URL is not set")
        pytest.skip("EVALWARD_TEST_POSTGRES_URL not set")
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    admin_url = make_url(raw.replace("postgresql://", "postgresql+psycopg://", 1))
    name = f"evalward_ci_{uuid.uuid4().hex[:10]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        url = admin_url.set(database=name).render_as_string(hide_password=False)
        yield f"{url}?options={quote('-csearch_path=public')}"
    finally:
        from evalward.store import engine as store_engine

        dispose = getattr(store_engine, "dispose_engines", None)
        if callable(dispose):
            dispose()
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.mark.postgres
def test_pull_request_is_gated_against_the_push_run_in_postgresql(workspace: Workspace, postgres_url: str) -> None:
    pushed, _ = workspace.run(workspace.env("push", push_payload()), db_url=postgres_url)
    assert pushed.exit_code == 0

    env = workspace.env("pull_request", pull_request_payload())
    result, _ = workspace.run(env, db_url=postgres_url)
    assert result.exit_code == 0 and outputs(env)["verdict"] == "pass"
    assert result.verdict is not None and result.verdict.baseline is not None
    assert pushed.run is not None and result.verdict.baseline.run_id == pushed.run.run_id
    assert result.verdict.baseline.chosen_by.startswith(f"merge-base {PR_BASE[:7]} on master")
