"""The history database: every run, case result and score, written as each case completes.

SQLite by default (`.evalward/history.db`), PostgreSQL for teams (`--db postgresql+psycopg://…` or
`EVALWARD_DB`); the schema is migrated with alembic on first use. Every name below is loaded on first use:
`store.gitinfo` (git lookups, which `--no-history` runs need too) must not cost an import of sqlalchemy.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalward.model.verdict import RecordedVerdict
    from evalward.store.baseline import search_baseline, select_baseline
    from evalward.store.baseline_choice import BaselineChoice, BaselineSearch, Refusal
    from evalward.store.comparability import comparability_key, instrument_differences
    from evalward.store.engine import DEFAULT_DB_URL, resolve_db_url
    from evalward.store.gitinfo import git_first_parent_ancestors, git_merge_base
    from evalward.store.migrate import HEAD_REVISION, current_revision, upgrade_database
    from evalward.store.opening import open_store
    from evalward.store.repository import Store
    from evalward.store.rows import HistoryPoint, RunRow, ScoreRow

_HOME = {
    "BaselineChoice": "baseline_choice",
    "BaselineSearch": "baseline_choice",
    "Refusal": "baseline_choice",
    "search_baseline": "baseline",
    "select_baseline": "baseline",
    "comparability_key": "comparability",
    "instrument_differences": "comparability",
    "DEFAULT_DB_URL": "engine",
    "resolve_db_url": "engine",
    "git_first_parent_ancestors": "gitinfo",
    "git_merge_base": "gitinfo",
    "HEAD_REVISION": "migrate",
    "current_revision": "migrate",
    "upgrade_database": "migrate",
    "HistoryPoint": "rows",
    "RecordedVerdict": "evalward.model.verdict",
    "RunRow": "rows",
    "ScoreRow": "rows",
    "Store": "repository",
    "open_store": "opening",
}

__all__ = [
    "DEFAULT_DB_URL",
    "HEAD_REVISION",
    "BaselineChoice",
    "BaselineSearch",
    "HistoryPoint",
    "RecordedVerdict",
    "Refusal",
    "RunRow",
    "ScoreRow",
    "Store",
    "comparability_key",
    "current_revision",
    "git_first_parent_ancestors",
    "git_merge_base",
    "instrument_differences",
    "open_store",
    "resolve_db_url",
    "search_baseline",
    "select_baseline",
    "upgrade_database",
]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(home if "." in home else f"{__name__}.{home}"), name)
