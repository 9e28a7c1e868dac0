"""The judge cache: a reply per sha256 of (model, full prompt messages, parameters), so a re-run of the same
eval on unchanged outputs makes no judge calls (METRICS.md §5).

`cache_key` hashes the canonical JSON of `{model, messages, parameters}` where parameters hold the request
parameters (temperature, …), the requested response format (schema name and schema) and the sample index —
so the s samples of one question are s entries, and a different schema, model or prompt is a miss.
The base URL is not in the key: the same model name at another endpoint is taken to be the same model.

Storage: the `judge_cache` table (migration 0003) of the history database when the run uses one, otherwise
the same table in a SQLite file (`.evalward/judge_cache.db`). Only replies that parsed are stored (a reply
the judge got wrong is asked again next time). Writes ignore a key that is already there, so concurrent
runs and shards cannot conflict.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from evalward.model import canonical_hash

if TYPE_CHECKING:
    from sqlalchemy import Engine


@dataclass(frozen=True)
class CachedReply:
    text: str
    input_tokens: int | None
    output_tokens: int | None


def cache_key(model: str, messages: Sequence[dict[str, Any]], parameters: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of (model, messages, parameters); see the module docstring."""
    return canonical_hash({"model": model, "messages": list(messages), "parameters": parameters})


class JudgeCache(Protocol):
    async def get(self, key: str) -> CachedReply | None: ...

    async def put(self, key: str, model: str, reply: CachedReply) -> None: ...

    def close(self) -> None: ...


class MemoryJudgeCache:
    """A dict: for tests and `--no-judge-cache` runs that still want in-run reuse."""

    def __init__(self) -> None:
        self.entries: dict[str, CachedReply] = {}

    async def get(self, key: str) -> CachedReply | None:
        return self.entries.get(key)

    async def put(self, key: str, model: str, reply: CachedReply) -> None:
        self.entries.setdefault(key, reply)

    def close(self) -> None:
        pass


class SqlJudgeCache:
    """The `judge_cache` table behind an engine (history database or the fallback file)."""

    def __init__(self, engine: Engine, *, owns_engine: bool = False) -> None:
        self.engine = engine
        self._owns_engine = owns_engine

    @classmethod
    def open(cls, url: str) -> SqlJudgeCache:
        """A cache in its own database at `url` (the table is created when missing)."""
        from evalward.store.engine import create_db_engine
        from evalward.store.schema import judge_cache_table

        engine = create_db_engine(url)
        judge_cache_table.create(engine, checkfirst=True)
        return cls(engine, owns_engine=True)

    def _get(self, key: str) -> CachedReply | None:
        from sqlalchemy import select

        from evalward.store.engine import read_transaction
        from evalward.store.schema import judge_cache_table as table

        with read_transaction(self.engine) as conn:
            row = conn.execute(
                select(table.c.reply, table.c.input_tokens, table.c.output_tokens).where(table.c.key == key)
            ).first()
        return None if row is None else CachedReply(text=row[0], input_tokens=row[1], output_tokens=row[2])

    def _put(self, key: str, model: str, reply: CachedReply) -> None:
        from evalward.store.engine import write_transaction
        from evalward.store.schema import judge_cache_table as table

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

    async def get(self, key: str) -> CachedReply | None:
        return await asyncio.to_thread(self._get, key)

    async def put(self, key: str, model: str, reply: CachedReply) -> None:
        await asyncio.to_thread(self._put, key, model, reply)

    def close(self) -> None:
        if self._owns_engine:
            self.engine.dispose()
