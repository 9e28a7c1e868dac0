"""The judge cache: a reply per sha256 of (model, full prompt messages, parameters), so a re-run of the same
eval on unchanged outputs makes no judge calls (docs/metrics.md §5).

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
from typing import TYPE_CHECKING, Any, Protocol

from evalward.model import canonical_hash
from evalward.store.judge_replies import CachedReply

if TYPE_CHECKING:
    from evalward.store.judge_replies import JudgeReplies


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
    """Replies kept in the `judge_cache` table of a database (`evalward.store.judge_replies`): the history
    database's engine, or a file of its own (`open`)."""

    def __init__(self, replies: JudgeReplies) -> None:
        self._replies = replies

    @classmethod
    def open(cls, url: str) -> SqlJudgeCache:
        """A cache in its own database at `url` (the table is created when missing)."""
        from evalward.store.judge_replies import JudgeReplies

        return cls(JudgeReplies.open(url))

    async def get(self, key: str) -> CachedReply | None:
        return await asyncio.to_thread(self._replies.get, key)

    async def put(self, key: str, model: str, reply: CachedReply) -> None:
        await asyncio.to_thread(self._replies.put, key, model, reply)

    def close(self) -> None:
        self._replies.close()
