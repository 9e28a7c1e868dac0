"""The history database: every run, case result and score, written as each case completes.

SQLite by default (`.evalward/history.db`), PostgreSQL for teams (`--db postgresql+psycopg://…` or
`EVALWARD_DB`); the schema is migrated with alembic on first use. Importing this package imports
sqlalchemy, so the CLI imports it lazily.
"""

from evalward.store.baseline import (
    BaselineChoice,
    BaselineSearch,
    Refusal,
    search_baseline,
    select_baseline,
)
from evalward.store.comparability import comparability_key, instrument_differences
from evalward.store.engine import DEFAULT_DB_URL, resolve_db_url
from evalward.store.gitinfo import git_first_parent_ancestors, git_merge_base
from evalward.store.migrate import HEAD_REVISION, current_revision, upgrade_database
from evalward.store.repository import HistoryPoint, RecordedVerdict, RunRow, ScoreRow, Store, open_store

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
