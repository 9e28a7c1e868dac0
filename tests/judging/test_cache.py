"""The judge cache: keys, and the judge_cache table in the history database."""

from __future__ import annotations

from pathlib import Path

from evalward.judging.cache import StoredJudgeCache, cache_key
from evalward.model.judge_reply import CachedReply
from evalward.store import open_store


def test_key_covers_model_messages_and_parameters() -> None:
    messages = [{"role": "user", "content": "q"}]
    base = cache_key("m", messages, {"sample": 0})
    assert base == cache_key("m", [{"content": "q", "role": "user"}], {"sample": 0})  # canonical JSON
    assert base != cache_key("m2", messages, {"sample": 0})
    assert base != cache_key("m", messages, {"sample": 1})
    assert base != cache_key("m", [{"role": "user", "content": "q2"}], {"sample": 0})


async def test_history_database_holds_the_cache(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path}/history.db")
    cache = StoredJudgeCache(store.judge_replies())
    assert await cache.get("k") is None
    await cache.put("k", "m", CachedReply('{"is_correct": true}', 10, 5))
    await cache.put("k", "m", CachedReply("ignored: the key exists", 1, 1))
    assert await cache.get("k") == CachedReply('{"is_correct": true}', 10, 5)
    cache.close()  # does not own the store's engine
    assert await StoredJudgeCache(store.judge_replies()).get("k") is not None
    store.close()
