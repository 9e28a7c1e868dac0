"""The judge cache: a reply per sha256 of (model, full prompt messages, parameters), so a re-run of the same
eval on unchanged outputs makes no judge calls (docs/metrics.md §5).

`cache_key` hashes the canonical JSON of `{model, messages, parameters}` where parameters hold the request
parameters (temperature, …), the requested response format (schema name and schema) and the sample index —
so the s samples of one question are s entries, and a different schema, model or prompt is a miss.
The base URL is not in the key: the same model name at another endpoint is taken to be the same model.

Storage: whatever implements `JudgeReplyStore`; the run gives the `judge_cache` table (migration 0003) of the
history database when it uses one, otherwise the same table in a SQLite file (`.evalward/judge_cache.db`),
both `store.judge_replies.JudgeReplies`. Only replies that parsed are stored (a reply the judge got wrong is
asked again next time). Writes ignore a key that is already there, so concurrent runs and shards cannot
conflict.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Protocol

from evalward.model import canonical_hash
from evalward.model.judge_reply import CachedReply


def cache_key(model: str, messages: Sequence[dict[str, Any]], parameters: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of (model, messages, parameters); see the module docstring."""
    return canonical_hash({"model": model, "messages": list(messages), "parameters": parameters})


class JudgeReplyStore(Protocol):
    """Where replies are kept between runs (`store.judge_replies.JudgeReplies` implements it): blocking calls,
    made from a worker thread."""

    def get(self, key: str) -> CachedReply | None: ...

    def put(self, key: str, model: str, reply: CachedReply) -> None:
        """Keep `reply` under `key` unless the key is there already."""

    def close(self) -> None: ...


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


class StoredJudgeCache:
    """Replies kept by a `JudgeReplyStore`, asked from a worker thread so the run's event loop never waits on
    it."""

    def __init__(self, replies: JudgeReplyStore) -> None:
        self._replies = replies

    async def get(self, key: str) -> CachedReply | None:
        return await asyncio.to_thread(self._replies.get, key)

    async def put(self, key: str, model: str, reply: CachedReply) -> None:
        await asyncio.to_thread(self._replies.put, key, model, reply)

    def close(self) -> None:
        self._replies.close()
