"""Schema migrations, run programmatically (no alembic.ini): `evalward db upgrade` and first use.

Concurrent first use is safe: the upgrade runs inside one write transaction that first takes a lock —
the sidecar file lock plus `BEGIN IMMEDIATE` on SQLite, `pg_advisory_xact_lock` on PostgreSQL —
and re-reads the current revision under it. Eight processes opening an empty database at once therefore
migrate it exactly once; the other seven wait, see the head revision and do nothing. Both backends run
DDL transactionally, so a killed upgrade leaves the previous revision intact.

An empty database is brought to head without alembic: `schema.metadata` is what the migrations build (a test
compares the two databases table by table, index by index), so it is created directly and stamped with the
head revision. alembic's import alone costs ~0.1 s, which every first run in a fresh CI checkout would pay.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from evalward.errors import InfrastructureError
from evalward.store.engine import (
    create_db_engine,
    read_transaction,
    resolve_db_url,
    sqlite_setup_lock,
    write_transaction,
)
from evalward.store.schema import metadata

if TYPE_CHECKING:
    from alembic.config import Config
    from sqlalchemy import Connection, Engine

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
HEAD_REVISION = "0007"
"""The newest revision this evalward knows (kept in step with `migrations/versions/`; a test checks)."""

_PG_LOCK_KEY = 0x65_76_61_6C_77_61_72_64  # "evalward" in ASCII: the advisory lock serialising upgrades


def alembic_config(connection: Connection | None = None) -> Config:
    """An alembic Config pointing at the packaged migrations, carrying `connection` for env.py."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    return config


def known_revisions() -> list[str]:
    """Every revision in the packaged migrations, oldest first."""
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(alembic_config())
    return [s.revision for s in reversed(list(script.walk_revisions()))]


def _revision_of(connection: Connection) -> str | None:
    """The revision alembic recorded (its `alembic_version` table), read without importing alembic: a
    database already at head is the common case, and alembic's import costs ~0.1 s of every run's start-up."""
    from sqlalchemy import inspect, text

    if not inspect(connection).has_table("alembic_version"):
        return None
    found = list(connection.execute(text("SELECT version_num FROM alembic_version")).scalars())
    if len(found) > 1:
        raise InfrastructureError(
            f"the history database records several schema revisions ({', '.join(sorted(found))}); "
            "evalward's migrations are linear — the database was changed by hand"
        )
    return found[0] if found else None


def engine_revision(engine: Engine) -> str | None:
    """The revision the database behind `engine` is at; None for an empty database."""
    with read_transaction(engine) as connection:
        return _revision_of(connection)


def upgrade_engine(engine: Engine, revision: str = "head") -> str | None:
    """Migrate the database behind `engine` to `revision` (default: head) and return the revision it is at.

    Raises InfrastructureError when the database is at a revision this evalward does not know (it was
    migrated by a newer release).
    """
    target = HEAD_REVISION if revision == "head" else revision
    with sqlite_setup_lock(engine):
        return _upgrade_locked(engine, target)


def _upgrade_locked(engine: Engine, target: str) -> str | None:
    found = engine_revision(engine)
    _check_known(engine, found)
    if found == target:
        return found
    with write_transaction(engine) as connection:
        if connection.dialect.name == "postgresql":
            from sqlalchemy import text

            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_LOCK_KEY})
        # Re-read under the lock: another process may have migrated meanwhile.
        found = _revision_of(connection)
        _check_known(engine, found)
        if found is None and target == HEAD_REVISION and _is_empty(connection):
            create_at_head(connection)
        elif found != target:
            from alembic import command

            command.upgrade(alembic_config(connection), target)
    return engine_revision(engine)


def _is_empty(connection: Connection) -> bool:
    from sqlalchemy import inspect

    return not inspect(connection).get_table_names()


def create_at_head(connection: Connection) -> None:
    """Create every table of `schema.metadata` and record `HEAD_REVISION` in alembic's `alembic_version` table
    (its own layout: one VARCHAR(32) primary key), exactly as running every migration would leave an empty
    database; later migrations then upgrade it like any other."""
    from sqlalchemy import Column, MetaData, PrimaryKeyConstraint, String, Table

    metadata.create_all(connection)
    version = Table(
        "alembic_version",
        MetaData(),
        Column("version_num", String(32), nullable=False),
        PrimaryKeyConstraint("version_num", name="alembic_version_pkc"),
    )
    version.create(connection)
    connection.execute(version.insert().values(version_num=HEAD_REVISION))


def _check_known(engine: Engine, found: str | None) -> None:
    if found is not None and found != HEAD_REVISION and found not in known_revisions():
        raise InfrastructureError(
            f"the history database {engine.url.render_as_string(hide_password=True)} is at schema revision "
            f"{found!r}, which this evalward does not know (newest known: {HEAD_REVISION!r}); it was migrated by "
            "a newer evalward — upgrade evalward or use another database (--db)"
        )


def upgrade_database(url: str | None = None, revision: str = "head") -> str | None:
    """`evalward db upgrade`: migrate the database at `url` (resolved like `open_store`) to `revision`."""
    engine = create_db_engine(resolve_db_url(url))
    try:
        return upgrade_engine(engine, revision)
    finally:
        engine.dispose()


def current_revision(url: str | None = None) -> str | None:
    """The schema revision of the database at `url`; None when it has never been migrated."""
    engine = create_db_engine(resolve_db_url(url))
    try:
        return engine_revision(engine)
    finally:
        engine.dispose()
