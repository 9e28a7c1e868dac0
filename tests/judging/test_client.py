"""`JudgeClient` against the fake server through the real `openai` client: formats, retries, usage, probe.

Retries are the `openai` client's: these tests let it really wait (the fake asks for waits of tens of
milliseconds) and measure the gaps between the requests the fake received.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest
from tests.fakes.openai_server import FakeOpenAI, Reply

from evalward.judging.judge_client import JudgeCallError, JudgeClient
from evalward.judging.judge_config import ModelPrice

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"reasoning": {"type": "string"}, "is_correct": {"type": "boolean"}},
    "required": ["reasoning", "is_correct"],
    "additionalProperties": False,
}
MESSAGES = [{"role": "system", "content": "Grade. Reply in JSON."}, {"role": "user", "content": "QUESTION: q"}]


def make_client(fake: FakeOpenAI, **kwargs: Any) -> JudgeClient:
    return JudgeClient(base_url=fake.base_url, api_key="sk-test-secret", api_key_env="OPENAI_API_KEY", **kwargs)


def gaps(fake: FakeOpenAI) -> list[float]:
    """Seconds between consecutive chat-completion requests the fake received."""
    times = [r.arrived for r in fake.completions()]
    return [later - earlier for earlier, later in itertools.pairwise(times)]


async def ask(client: JudgeClient) -> str:
    completion = await client.complete(model="judge-model", messages=MESSAGES, schema_name="grade", schema=SCHEMA)
    return completion.text


async def test_structured_output_is_requested_with_the_schema(fake_openai: FakeOpenAI) -> None:
    fake_openai.reply(Reply.json({"reasoning": "ok", "is_correct": True}))
    client = make_client(fake_openai)
    assert await ask(client) == '{"reasoning": "ok", "is_correct": true}'
    body = fake_openai.completions()[0].body
    assert body is not None
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "grade", "schema": SCHEMA, "strict": True},
    }
    assert fake_openai.completions()[0].authorized
    await client.aclose()


async def test_servers_without_json_schema_fall_back_to_plain_json(fake_openai: FakeOpenAI) -> None:
    fake_openai.reject_json_schema = True
    fake_openai.reply(
        Reply.json({"reasoning": "a", "is_correct": True}), Reply.json({"reasoning": "b", "is_correct": False})
    )
    client = make_client(fake_openai)
    await ask(client)
    await ask(client)
    formats = [(r.status, (r.body or {}).get("response_format")) for r in fake_openai.completions()]
    # The first request is refused (400), the retry uses json_object, and the client remembers it.
    assert formats == [
        (400, {"type": "json_schema", "json_schema": {"name": "grade", "schema": SCHEMA, "strict": True}}),
        (200, {"type": "json_object"}),
        (200, {"type": "json_object"}),
    ]
    assert client.mode == "json_object"
    await client.aclose()


async def test_429_is_retried_after_the_servers_retry_after(fake_openai: FakeOpenAI) -> None:
    fake_openai.fail_next(429, 2, retry_after="1.1")
    fake_openai.reply(Reply.json({"reasoning": "ok", "is_correct": True}))
    client = make_client(fake_openai)
    await ask(client)
    assert [r.status for r in fake_openai.completions()] == [429, 429, 200]
    # The client waited what the server asked (1.1 s), longer than its own backoff would (at most 0.5 s, then 1 s).
    assert all(gap >= 1.1 for gap in gaps(fake_openai)), gaps(fake_openai)
    assert (client.usage.requests, client.usage.retries, client.usage.completions) == (3, 2, 1)
    assert "3 requests, 2 retries" in client.usage.describe()
    await client.aclose()


async def test_retry_after_ms_is_preferred_and_408_409_are_retried(fake_openai: FakeOpenAI) -> None:
    fake_openai.fail_next(408, retry_after_ms="40", retry_after="30")
    fake_openai.fail_next(409, retry_after_ms="40")
    fake_openai.reply(Reply.json({"reasoning": "ok", "is_correct": True}))
    client = make_client(fake_openai)
    await ask(client)
    assert [r.status for r in fake_openai.completions()] == [408, 409, 200]
    # 40 ms from retry-after-ms, not the 30 s of retry-after (generous bound for a loaded machine).
    assert all(0.04 <= gap < 10.0 for gap in gaps(fake_openai)), gaps(fake_openai)
    assert client.usage.retries == 2
    await client.aclose()


async def test_x_should_retry_false_is_obeyed(fake_openai: FakeOpenAI) -> None:
    fake_openai.fail_next(503, should_retry=False)
    client = make_client(fake_openai)
    with pytest.raises(JudgeCallError, match=r"answered HTTP 503") as caught:
        await ask(client)
    assert "retries" not in str(caught.value)
    assert len(fake_openai.completions()) == 1
    assert (client.usage.requests, client.usage.retries) == (1, 0)
    await client.aclose()


async def test_500_is_retried_max_retries_times_then_given_up(fake_openai: FakeOpenAI) -> None:
    fake_openai.fail_next(500, 3, retry_after_ms="20")
    client = make_client(fake_openai, max_retries=2)
    with pytest.raises(JudgeCallError, match=r"answered HTTP 500 .* \(after 2 retries\)"):
        await ask(client)
    assert len(fake_openai.completions()) == 3
    assert (client.usage.requests, client.usage.retries) == (3, 2)
    await client.aclose()


async def test_concurrent_retries_are_counted_per_request(fake_openai: FakeOpenAI) -> None:
    fake_openai.fail_next(429, 3, retry_after_ms="30")
    fake_openai.responder = lambda _request: Reply.json({"reasoning": "ok", "is_correct": True})
    client = make_client(fake_openai, concurrency=4)
    await asyncio.gather(*(ask(client) for _ in range(5)))
    assert (client.usage.requests, client.usage.retries, client.usage.completions) == (8, 3, 5)
    await client.aclose()


async def test_401_is_not_retried_and_the_key_is_not_in_the_message(fake_openai: FakeOpenAI) -> None:
    fake_openai.reply(Reply.error(401, "Incorrect API key provided"))
    client = make_client(fake_openai)
    with pytest.raises(JudgeCallError) as caught:
        await ask(client)
    assert caught.value.status == 401
    assert "sk-test-secret" not in str(caught.value)
    await client.aclose()


async def test_usage_and_cost_from_the_price_table(fake_openai: FakeOpenAI) -> None:
    fake_openai.reply(
        Reply.json({"reasoning": "", "is_correct": True}, prompt_tokens=1000, completion_tokens=200),
        Reply.json({"reasoning": "", "is_correct": True}, prompt_tokens=500, completion_tokens=100),
    )
    prices = {"judge-model": ModelPrice(input_per_million=0.15, output_per_million=0.60)}
    client = make_client(fake_openai, prices=prices)
    await ask(client)
    await ask(client)
    usage = client.usage
    assert (usage.input_tokens, usage.output_tokens) == (1500, 300)
    # hand calculation: 1500 * 0.15/1e6 + 300 * 0.60/1e6 = 0.000225 + 0.00018 = 0.000405
    assert usage.cost_usd == pytest.approx(0.000405)
    assert usage.describe() == "judge: 2 replies (0 cached), 2 requests, 1,500 in / 300 out tokens, $0.0004"
    await client.aclose()


async def test_probe_lists_models_and_reports_unreachable_servers(fake_openai: FakeOpenAI) -> None:
    client = make_client(fake_openai)
    assert await client.probe("judge-model", 5.0) == ["judge-model", "agent-model"]
    await client.aclose()
    dead = JudgeClient(base_url="http://127.0.0.1:9/v1", api_key=None, api_key_env="OPENAI_API_KEY")
    with pytest.raises(JudgeCallError, match=r"cannot reach http://127\.0\.0\.1:9/v1"):
        await dead.probe("judge-model", 2.0)
    await dead.aclose()
