"""The `judge_cache` table (migration 0003): a judge's reply per cache key, in the history database or in a
SQLite file of its own. `evalward.judging.cache` decides what a key is and when a reply is kept; this module
only reads and writes rows.

A write ignores a key that is already there (`ON CONFLICT DO NOTHING`), so concurrent runs and shards
writing the same reply cannot conflict: the first one stays.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from evalward.model.judge_reply import CachedReply
from evalward.store.engine import create_db_engine, read_transaction, write_transaction
from evalward.store.schema import judge_cache_table as table

if TYPE_CHECKING:
    from sqlalchemy import Engine


class JudgeReplies:
    """The `judge_cache` table behind an engine (the history database's, or one opened by `open`)."""

    def __init__(self, engine: Engine, *, owns_engine: bool = False) -> None:
        self.engine = engine
        self._owns_engine = owns_engine

    @classmethod
    def open(cls, url: str) -> JudgeReplies:
        """The table in its own database at `url` (created when missing)."""
        engine = create_db_engine(url)
        table.create(engine, checkfirst=True)
        return cls(engine, owns_engine=True)

    def get(self, key: str) -> CachedReply | None:
        from sqlalchemy import select

        with read_transaction(self.engine) as conn:
            row = conn.execute(
                select(table.c.reply, table.c.input_tokens, table.c.output_tokens).where(table.c.key == key)
            ).first()
        return None if row is None else CachedReply(row[0], row[1], row[2])

    def put(self, key: str, model: str, reply: CachedReply) -> None:
        """Store `reply` under `key` unless the key is there already."""
        values = {
            "key": key,
            "model": model,
            "reply": reply.text,
            "input_tokens": reply.input_tokens,
            "output_tokens": reply.output_tokens,
            "created_at": datetime.now(UTC),
        }
        with write_transaction(self.engine) as conn:
            if conn.dialect.name == "postgresql":
                from sqlalchemy.dialects.postgresql import insert as pg_insert

                conn.execute(pg_insert(table).values(**values).on_conflict_do_nothing(index_elements=["key"]))
            else:
                from sqlalchemy.dialects.sqlite import insert as sqlite_insert

                conn.execute(sqlite_insert(table).values(**values).on_conflict_do_nothing(index_elements=["key"]))

    def close(self) -> None:
        if self._owns_engine:
            self.engine.dispose()
