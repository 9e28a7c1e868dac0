"""Alembic environment: always online, on the connection `evalward.store.migrate` hands over.

The caller owns the transaction (and, on PostgreSQL, an advisory lock), so concurrent first use of an
empty database migrates exactly once; nothing here opens its own connection or reads alembic.ini.
"""

from __future__ import annotations

from alembic import context

from evalward.store.schema import metadata


def run_migrations_online() -> None:
    connection = context.config.attributes.get("connection")
    if connection is None:
        raise RuntimeError("evalward migrations run only through evalward.store.migrate (no connection given)")
    context.configure(
        connection=connection,
        target_metadata=metadata,
        # SQLite supports transactional DDL; with the caller's transaction the whole upgrade is atomic.
        transactional_ddl=True,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    raise RuntimeError("offline (--sql) migrations are not supported")
run_migrations_online()
