"""Rows as an older schema held them, for the migration tests: the database brought to that revision and a row
inserted with plain SQL (the current table definitions may name columns the old schema lacks)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from evalward.store import upgrade_database
from evalward.store.engine import create_db_engine


def queued_job_at(db_url: str, revision: str, *, payload: dict[str, Any], repo: str, sha: str, key: str) -> None:
    """Migrate `db_url` to `revision` and queue one `evaluate` job in it, created 2025-01-01."""
    from sqlalchemy import text

    assert upgrade_database(db_url, revision) == revision
    engine = create_db_engine(db_url)
    try:
        with engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO jobs (kind, payload, status, attempts, repo, head_sha, dedupe_key, created_at,"
                    " updated_at) VALUES ('evaluate', :payload, 'queued', 0, :repo, :sha, :key, :now, :now)"
                ),
                {"payload": json.dumps(payload), "repo": repo, "sha": sha, "key": key,
                 "now": datetime(2025, 1, 1, tzinfo=UTC)},
            )  # fmt: skip
    finally:
        engine.dispose()
