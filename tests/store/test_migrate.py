"""Migrations: from an empty database, from revision 0001, and against the models in schema.py."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from evalward.errors import InfrastructureError
from evalward.store import HEAD_REVISION, current_revision, open_store, upgrade_database
from evalward.store.engine import create_db_engine
from evalward.store.migrate import known_revisions
from evalward.store.schema import metadata


def _tables(url: str) -> set[str]:
    from sqlalchemy import inspect

    engine = create_db_engine(url)
    try:
        return set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_head_revision_is_the_newest_packaged_revision() -> None:
    assert known_revisions() == ["0001", "0002", "0003", "0004", "0005", "0006", "0007"]
    assert known_revisions()[-1] == HEAD_REVISION


def test_upgrade_from_empty_to_head_creates_every_table(db_url: str) -> None:
    assert current_revision(db_url) is None

    assert upgrade_database(db_url) == HEAD_REVISION

    assert current_revision(db_url) == HEAD_REVISION
    assert _tables(db_url) >= {"runs", "run_plan", "case_results", "metric_scores", "jobs", "alembic_version"}
    # Upgrading again is a no-op.
    assert upgrade_database(db_url) == HEAD_REVISION


def test_migrated_schema_matches_the_models(db_url: str) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    upgrade_database(db_url)
    engine = create_db_engine(db_url)
    try:
        with engine.connect() as conn:
            differences = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), metadata)
    finally:
        engine.dispose()
    assert differences == []


def test_upgrade_from_0001_keeps_existing_rows(db_url: str) -> None:
    from sqlalchemy import text

    assert upgrade_database(db_url, "0001") == "0001"
    assert "jobs" not in _tables(db_url)
    engine = create_db_engine(db_url)
    try:
        with engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO runs (run_id, status, fingerprint, comparability_key, evalward_version, repetitions,"
                    " planned_count, created_at, run_json) VALUES ('old-run', 'complete', 'fp', 'key', '0.1.0', 1, 0,"
                    " :created, :run_json)"
                ),
                {"created": datetime(2025, 1, 1, tzinfo=UTC), "run_json": '{"run_id": "old-run", "passed": true}'},
            )
    finally:
        engine.dispose()

    with open_store(db_url) as store:  # first use migrates 0001 -> head
        assert current_revision(db_url) == HEAD_REVISION
        assert [r.run_id for r in store.list_runs()] == ["old-run"]
        assert store.load_run("old-run").passed is True
    assert "jobs" in _tables(db_url)


def test_open_store_without_upgrade_refuses_an_old_schema(db_url: str) -> None:
    upgrade_database(db_url, "0001")
    with pytest.raises(InfrastructureError, match="run `evalward db upgrade`"):
        open_store(db_url, upgrade=False)


def test_a_database_from_a_newer_evalward_is_reported(db_url: str) -> None:
    from sqlalchemy import text

    upgrade_database(db_url)
    engine = create_db_engine(db_url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '0099'"))
    engine.dispose()
    with pytest.raises(InfrastructureError, match="revision '0099', which this evalward does not know"):
        open_store(db_url)


@pytest.mark.parametrize("migrated_first", [True, False], ids=["at-head", "empty"])
def test_opening_a_database_does_not_import_alembic(db_url: str, migrated_first: bool) -> None:
    """alembic costs ~0.1 s of start-up: a database already at head is read without it, and an empty one is
    created at head without it (only an older schema needs alembic's migrations)."""
    import subprocess
    import sys

    if migrated_first:
        upgrade_database(db_url)
    probe = (
        "import sys\n"
        "from evalward.store import open_store\n"
        f"store = open_store({db_url!r})\n"
        "store.close()\n"
        "print('alembic' in sys.modules)\n"
    )
    completed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert completed.stdout.strip() == "False", completed.stderr[-2000:]
    assert current_revision(db_url) == HEAD_REVISION


def _structure(url: str) -> dict[str, object]:
    """Every table's columns (type, nullability), primary key, foreign keys, indexes and unique constraints,
    with their names: what a later migration's ALTERs depend on."""
    from sqlalchemy import inspect

    engine = create_db_engine(url)
    try:
        inspector = inspect(engine)
        found: dict[str, object] = {}
        for table in sorted(inspector.get_table_names()):
            found[table] = {
                "columns": [(c["name"], str(c["type"]), c["nullable"]) for c in inspector.get_columns(table)],
                "primary_key": inspector.get_pk_constraint(table),
                "foreign_keys": sorted(
                    (fk["name"] or "", fk["referred_table"], tuple(fk["constrained_columns"]), str(fk["options"]))
                    for fk in inspector.get_foreign_keys(table)
                ),
                "indexes": sorted(
                    (i["name"] or "", tuple(str(c) for c in i["column_names"]), bool(i["unique"]))
                    for i in inspector.get_indexes(table)
                ),
                "unique": sorted(
                    (u["name"] or "", tuple(u["column_names"])) for u in inspector.get_unique_constraints(table)
                ),
            }
        return found
    finally:
        engine.dispose()


def test_an_empty_database_created_at_head_equals_one_built_by_every_migration(
    db_url: str, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> None:
    """The fast path for an empty database (create the tables, stamp head) must leave exactly what alembic's
    migrations leave, or a later migration would meet a different schema."""
    from alembic import command

    from evalward.store.migrate import alembic_config

    if db_url.startswith("sqlite"):
        migrated_url = f"sqlite:///{tmp_path_factory.mktemp('migrated') / 'history.db'}"
    else:
        from tests.fakes.postgres import fresh_schema

        migrated_url = fresh_schema(request.getfixturevalue("postgres_database"))
    engine = create_db_engine(migrated_url)
    try:
        with engine.begin() as connection:
            command.upgrade(alembic_config(connection), "head")
    finally:
        engine.dispose()

    assert upgrade_database(db_url) == HEAD_REVISION  # empty: created at head without alembic
    assert current_revision(db_url) == current_revision(migrated_url) == HEAD_REVISION
    assert _structure(db_url) == _structure(migrated_url)
