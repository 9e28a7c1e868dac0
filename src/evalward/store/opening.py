"""Opening the history database: the URL resolved, the schema migrated on first use, a busy SQLite file
waited for rather than reported at once."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalward.errors import InfrastructureError
from evalward.store.engine import create_db_engine, resolve_db_url
from evalward.store.migrate import HEAD_REVISION, engine_revision, upgrade_engine

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from evalward.store.repository import Store


def open_store(url: str | None = None, *, upgrade: bool = True) -> Store:
    """`Store(open_engine(url, upgrade=upgrade))`."""
    # start-up: the repository's models (pydantic) stay out of the history writer process, which opens here too.
    from evalward.store.repository import Store

    return Store(open_engine(url, upgrade=upgrade))


def open_engine(url: str | None = None, *, upgrade: bool = True) -> Engine:
    """Open the history database at `url` (> $EVALWARD_DB > `.evalward/history.db`), migrating it to the
    newest schema on first use. With `upgrade=False` an out-of-date database raises InfrastructureError
    telling the user to run `evalward db upgrade`; an unreachable database raises InfrastructureError too.

    A SQLite "database is locked" while opening (another process holds the file's lock longer than the busy
    timeout lets SQLite wait, or SQLite declined to wait) is retried with backoff for OPEN_RETRY_SECONDS
    before it becomes an error: a busy database is not a broken one."""
    import time

    from sqlalchemy.exc import OperationalError

    resolved = resolve_db_url(url)
    deadline = time.monotonic() + OPEN_RETRY_SECONDS
    delay = 0.05
    while True:
        try:
            return _open_once(resolved, upgrade)
        except OperationalError as exc:
            message = str(exc.orig or exc)
            if _is_lock_contention(message) and time.monotonic() + delay < deadline:
                time.sleep(delay)
                delay = min(delay * 2, 2.0)
                continue
            where = _redacted(resolved)
            raise InfrastructureError(
                f"cannot open the history database {where}: {message}; check --db / EVALWARD_DB"
            ) from exc


OPEN_RETRY_SECONDS = 60.0
"""How long `open_store` keeps retrying a SQLite database that reports itself locked or busy."""


def _is_lock_contention(message: str) -> bool:
    lowered = message.lower()
    return "database is locked" in lowered or "database is busy" in lowered


def _redacted(url: str) -> str:
    # start-up: `redact` imports pydantic, which the history writer process (`writer_child`) never loads.
    from evalward.redact import mask_url

    return mask_url(url)


def _open_once(url: str, upgrade: bool) -> Engine:
    engine = create_db_engine(url)
    try:
        if upgrade:
            upgrade_engine(engine)
        else:
            found = engine_revision(engine)
            if found != HEAD_REVISION:
                raise InfrastructureError(
                    f"the history database is at schema revision {found!r}, expected {HEAD_REVISION!r}; "
                    "run `evalward db upgrade`"
                )
    except BaseException:
        engine.dispose()
        raise
    return engine
