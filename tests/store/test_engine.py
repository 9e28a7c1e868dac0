"""Database URL resolution and the per-connection SQLite setup."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalward.store import DEFAULT_DB_URL, resolve_db_url
from evalward.store.engine import create_db_engine, sqlite_path


def test_resolve_prefers_the_argument_then_the_environment_then_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVALWARD_DB", raising=False)
    assert resolve_db_url(None) == DEFAULT_DB_URL == "sqlite:///.evalward/history.db"
    monkeypatch.setenv("EVALWARD_DB", "sqlite:///from-env.db")
    assert resolve_db_url(None) == "sqlite:///from-env.db"
    assert resolve_db_url("sqlite:///explicit.db") == "sqlite:///explicit.db"


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("postgres://u:p@db:5432/evals", "postgresql+psycopg://u:p@db:5432/evals"),
        ("postgresql://u@db/evals", "postgresql+psycopg://u@db/evals"),
        ("postgresql+psycopg://u@db/evals", "postgresql+psycopg://u@db/evals"),
    ],
)
def test_resolve_rewrites_plain_postgres_urls_to_psycopg(given: str, expected: str) -> None:
    assert resolve_db_url(given) == expected


def test_sqlite_connections_use_wal_a_long_busy_timeout_and_foreign_keys(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'nested' / 'dir' / 'history.db'}"
    assert sqlite_path(url) == tmp_path / "nested" / "dir" / "history.db"

    engine = create_db_engine(url)
    try:
        assert (tmp_path / "nested" / "dir").is_dir()  # created on demand
        with engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() >= 30_000
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    finally:
        engine.dispose()


def test_in_memory_sqlite_has_no_file() -> None:
    assert sqlite_path("sqlite://") is None
    assert sqlite_path("sqlite:///:memory:") is None
    assert sqlite_path("postgresql+psycopg://u@db/evals") is None


def test_an_unreachable_database_is_an_infrastructure_error_without_the_password() -> None:
    from evalward.errors import InfrastructureError
    from evalward.store import open_store

    with pytest.raises(
        InfrastructureError,
        match=r"cannot open the history database postgresql\+psycopg://u:\[redacted password\]@127.0.0.1:1/x",
    ) as raised:
        open_store("postgresql://u:secret@127.0.0.1:1/x")
    assert "secret" not in str(raised.value)


def test_first_use_of_a_sqlite_file_waits_for_the_setup_lock_held_by_another_process(tmp_path: Path) -> None:
    # Another process (a child holding flock on the sidecar) is setting the file up; opening waits for it
    # instead of racing it, and succeeds once the child lets go.
    import subprocess
    import sys
    import threading

    from evalward.store import open_store

    db = tmp_path / "history.db"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, sys\n"
            f"f = open({str(db) + '.lock'!r}, 'a+b'); fcntl.flock(f, fcntl.LOCK_EX)\n"
            "print('held', flush=True); sys.stdin.readline()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    modes: list[str] = []

    def open_and_read_journal_mode() -> None:
        with open_store(f"sqlite:///{db}") as store, store.engine.connect() as conn:
            modes.append(str(conn.exec_driver_sql("PRAGMA journal_mode").scalar()))

    opener = threading.Thread(target=open_and_read_journal_mode)
    opener.start()
    opener.join(timeout=0.5)
    assert opener.is_alive() and modes == []  # still waiting for the holder
    holder.communicate("release\n", timeout=10)
    opener.join(timeout=30)
    assert modes == ["wal"]


def test_open_store_retries_a_locked_database_then_reports_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sqlite3

    from sqlalchemy.exc import OperationalError

    from evalward.errors import InfrastructureError
    from evalward.store import opening

    real_open = opening._open_once
    attempts: list[int] = []

    def locked_twice(url: str, upgrade: bool) -> opening.Store:
        attempts.append(1)
        if len(attempts) <= 2:
            raise OperationalError("PRAGMA", {}, sqlite3.OperationalError("database is locked"))
        return real_open(url, upgrade)

    monkeypatch.setattr(opening, "_open_once", locked_twice)
    with opening.open_store(f"sqlite:///{tmp_path / 'h.db'}"):
        pass
    assert len(attempts) == 3

    def always_locked(url: str, upgrade: bool) -> opening.Store:
        raise OperationalError("PRAGMA", {}, sqlite3.OperationalError("database is locked"))

    monkeypatch.setattr(opening, "_open_once", always_locked)
    monkeypatch.setattr(opening, "OPEN_RETRY_SECONDS", 0.3)
    with pytest.raises(InfrastructureError, match=r"cannot open the history database .*h\.db: database is locked"):
        opening.open_store(f"sqlite:///{tmp_path / 'h.db'}")
