"""Which database to open and how every connection to it is set up.

SQLite (the default, one file per checkout) gets on every connection:
- `journal_mode=WAL` (set once, when the engine is created): readers never block the writer and the writer
  never blocks readers;
- `busy_timeout` of 60 s: a writer waits for the lock instead of failing with "database is locked";
- `foreign_keys=ON`: SQLite ignores foreign keys unless asked;
- explicit transactions: pysqlite's own implicit BEGIN is switched off and we emit `BEGIN` ourselves,
  `BEGIN IMMEDIATE` for writes. A deferred transaction that reads and then writes can fail at once with
  SQLITE_BUSY when another process committed in between (the busy timeout is not consulted in that case);
  taking the write lock up front makes concurrent writers queue instead.

First use of a SQLite file (switching it to WAL, migrating it) is serialised across processes by an OS lock
on a sidecar `<file>.lock`: eight shards opening an empty database at the same moment otherwise race on the
exclusive lock the WAL switch needs, and SQLite reports "database is locked" to some of them without ever
consulting the busy timeout.

PostgreSQL needs none of this; its connections use the default READ COMMITTED isolation.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalward.errors import InfrastructureError

if TYPE_CHECKING:
    from sqlalchemy import Connection, Engine

DEFAULT_DB_URL = "sqlite:///.evalward/history.db"
"""The history database when neither `--db` nor `EVALWARD_DB` is given: a file in the checkout."""

DB_ENV_VAR = "EVALWARD_DB"

SQLITE_BUSY_TIMEOUT_MS = 60_000
"""How long a SQLite writer waits for the lock before giving up (8 concurrent shards need seconds, not ms)."""

_WRITE_OPTION = "evalward_write"


def resolve_db_url(url: str | None) -> str:
    """The database URL to use: `url` > `$EVALWARD_DB` > DEFAULT_DB_URL.

    `postgres://` and `postgresql://` (what hosting providers hand out) are rewritten to
    `postgresql+psycopg://`, the driver evalward ships with.
    """
    chosen = url or os.environ.get(DB_ENV_VAR) or DEFAULT_DB_URL
    chosen = chosen.strip()
    for prefix in ("postgres://", "postgresql://"):
        if chosen.startswith(prefix):
            return "postgresql+psycopg://" + chosen[len(prefix) :]
    return chosen


def is_sqlite(url: str) -> bool:
    return url.startswith("sqlite")


def sqlite_path(url: str) -> Path | None:
    """The file behind a SQLite URL; None for in-memory databases and other backends."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return None
    database = parsed.database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(database)


class JSONText:
    """JSON already written (a run's row, a case's JSON): stored as it is, not dumped again.

    A holder rather than a `str` subclass: the driver needs an exact `str`, and `str()` of a subclass copies
    it (tens of megabytes for a large run's row)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JSONText) and other.text == self.text

    __hash__ = None  # type: ignore[assignment]


def dump_json(value: Any) -> str:
    """The engine's JSON serialiser: `JSONText`'s text as it is, anything else as `json.dumps` writes it."""
    if isinstance(value, JSONText):
        return value.text
    return json.dumps(value)


def create_db_engine(url: str) -> Engine:
    """An engine for `url` with the connection setup described in the module docstring.

    The SQLite file's directory is created when missing (`.evalward/` on first use).
    """
    from sqlalchemy import create_engine, event

    kwargs: dict[str, Any] = {"future": True, "json_serializer": dump_json}
    if is_sqlite(url):
        path = sqlite_path(url)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        # Each connection is used by one thread at a time (the pipeline writes from worker threads).
        kwargs["connect_args"] = {"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}
    else:
        kwargs["pool_pre_ping"] = True
    try:
        engine = create_engine(url, **kwargs)
    except ModuleNotFoundError as exc:  # SQLAlchemy imports the driver here
        if (exc.name or "").split(".")[0] != "psycopg":
            raise

        raise InfrastructureError(
            "PostgreSQL needs the postgres extra (the psycopg driver is not installed): "
            "pip install 'evalward[postgres]'"
        ) from exc

    if is_sqlite(url):

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_connection: Any, _record: Any) -> None:
            # Hand transaction control to SQLAlchemy's "begin" event below (see module docstring).
            dbapi_connection.isolation_level = None
            cursor = dbapi_connection.cursor()
            try:
                cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
                cursor.execute("PRAGMA foreign_keys = ON")
                cursor.execute("PRAGMA synchronous = NORMAL")
            finally:
                cursor.close()

        @event.listens_for(engine, "begin")
        def _on_begin(connection: Connection) -> None:
            write = connection.get_execution_options().get(_WRITE_OPTION, False)
            connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

        # WAL is a property of the file, kept across connections: switch once, under the first-use lock.
        # (A raw connection: it is in autocommit, and the journal mode cannot change inside a transaction.)
        with sqlite_setup_lock(engine):
            raw = engine.raw_connection()
            try:
                cursor = raw.cursor()
                cursor.execute("PRAGMA journal_mode = WAL")
                cursor.close()
            finally:
                raw.close()

    return engine


@contextmanager
def sqlite_setup_lock(engine: Engine) -> Iterator[None]:
    """Hold an exclusive OS lock on `<database file>.lock` (see the module docstring); a no-op for in-memory
    SQLite, for other backends and where `fcntl` does not exist."""
    path = sqlite_path(engine.url.render_as_string(hide_password=False))
    try:
        import fcntl
    except ImportError:  # Windows: concurrent first use falls back to SQLite's own locking and the retries
        path = None
    if path is None:
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.with_name(path.name + ".lock").open("a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


@contextmanager
def write_transaction(engine: Engine) -> Iterator[Connection]:
    """A connection inside one transaction that holds the write lock from its start (SQLite) and commits
    on success, rolls back on any exception."""
    with engine.connect() as connection:
        connection = connection.execution_options(**{_WRITE_OPTION: True})
        with connection.begin():
            yield connection


@contextmanager
def rehearsal_transaction(engine: Engine) -> Iterator[Connection]:
    """A write transaction that is always rolled back: statements executed in it store nothing, and SQLAlchemy
    keeps them compiled for their real use (it compiles a statement on its first use in a process)."""
    with engine.connect() as connection:
        connection = connection.execution_options(**{_WRITE_OPTION: True})
        transaction = connection.begin()
        try:
            yield connection
        finally:
            transaction.rollback()


@contextmanager
def read_transaction(engine: Engine) -> Iterator[Connection]:
    """A connection inside one read transaction (a consistent snapshot in WAL mode)."""
    with engine.connect() as connection, connection.begin():
        yield connection
