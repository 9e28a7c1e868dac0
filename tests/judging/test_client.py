"""`JudgeClient` against the fake server through the real `openai` client: formats, retries, usage, probe."""

from __future__ import annotations

from typing import Any

import pytest
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.judging.conftest import RecordedSleep

from evalward.judging.client import JudgeCallError, JudgeClient, retry_after_seconds
from evalward.judging.config import ModelPrice

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"reasoning": {"type": "string"}, "is_correct": {"type": "boolean"}},
    "required": ["reasoning", "is_correct"],
    "additionalProperties": False,
}
MESSAGES = [{"role": "system", "content": "Grade. Reply in JSON."}, {"role": "user", "content": "QUESTION: q"}]


def make_client(fake: FakeOpenAI, sleep: RecordedSleep, **kwargs: Any) -> JudgeClient:
    return JudgeClient(
        base_url=fake.base_url, api_key="sk-test-secret", api_key_env="OPENAI_API_KEY", sleep=sleep, **kwargs
    )


async def ask(client: JudgeClient) -> str:
    completion = await client.complete(model="judge-model", messages=MESSAGES, schema_name="grade", schema=SCHEMA)
    return completion.text


async def test_structured_output_is_requested_with_the_schema(fake_openai: FakeOpenAI, sleep: RecordedSleep) -> None:
    fake_openai.reply(Reply.json({"reasoning": "ok", "is_correct": True}))
    client = make_client(fake_openai, sleep)
    assert await ask(client) == '{"reasoning": "ok", "is_correct": true}'
    body = fake_openai.completions()[0].body
    assert body is not None
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "grade", "schema": SCHEMA, "strict": True},
    }
    assert fake_openai.completions()[0].authorized
    await client.aclose()


async def test_servers_without_json_schema_fall_back_to_plain_json(
    fake_openai: FakeOpenAI, sleep: RecordedSleep
) -> None:
    fake_openai.reject_json_schema = True
    fake_openai.reply(
        Reply.json({"reasoning": "a", "is_correct": True}), Reply.json({"reasoning": "b", "is_correct": False})
    )
    client = make_client(fake_openai, sleep)
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
    assert sleep.delays == []
    await client.aclose()


async def test_429_is_retried_after_the_servers_retry_after(fake_openai: FakeOpenAI, sleep: RecordedSleep) -> None:
    fake_openai.fail_next(429, 2, retry_after="7")
    fake_openai.reply(Reply.json({"reasoning": "ok", "is_correct": True}))
    client = make_client(fake_openai, sleep, backoff_s=0.5)
    await ask(client)
    # backoff 0.5 * 2^0 = 0.5 and 0.5 * 2^1 = 1.0, both shorter than retry-after 7 -> 7 and 7
    assert sleep.delays == [7.0, 7.0]
    assert [r.status for r in fake_openai.completions()] == [429, 429, 200]
    assert (client.usage.requests, client.usage.retries, client.usage.completions) == (3, 2, 1)
    await client.aclose()


async def test_500_backs_off_exponentially_then_gives_up(fake_openai: FakeOpenAI, sleep: RecordedSleep) -> None:
    fake_openai.fail_next(500, 3)
    client = make_client(fake_openai, sleep, backoff_s=1.0, max_retries=2)
    with pytest.raises(JudgeCallError, match=r"answered HTTP 500 .* \(after 2 retries\)"):
        await ask(client)
    # backoff 1 * 2^0 = 1, 1 * 2^1 = 2; 1 + 2 retries = 3 requests
    assert sleep.delays == [1.0, 2.0]
    assert len(fake_openai.completions()) == 3
    await client.aclose()


async def test_401_is_not_retried_and_the_key_is_not_in_the_message(
    fake_openai: FakeOpenAI, sleep: RecordedSleep
) -> None:
    fake_openai.reply(Reply.error(401, "Incorrect API key provided"))
    client = make_client(fake_openai, sleep)
    with pytest.raises(JudgeCallError) as caught:
        await ask(client)
    assert caught.value.status == 401
    assert "sk-test-secret" not in str(caught.value)
    assert sleep.delays == []
    await client.aclose()


async def test_usage_and_cost_from_the_price_table(fake_openai: FakeOpenAI, sleep: RecordedSleep) -> None:
    fake_openai.reply(
        Reply.json({"reasoning": "", "is_correct": True}, prompt_tokens=1000, completion_tokens=200),
        Reply.json({"reasoning": "", "is_correct": True}, prompt_tokens=500, completion_tokens=100),
    )
    prices = {"judge-model": ModelPrice(input_per_million=0.15, output_per_million=0.60)}
    client = make_client(fake_openai, sleep, prices=prices)
    await ask(client)
    await ask(client)
    usage = client.usage
    assert (usage.input_tokens, usage.output_tokens) == (1500, 300)
    # hand calculation: 1500 * 0.15/1e6 + 300 * 0.60/1e6 = 0.000225 + 0.00018 = 0.000405
    assert usage.cost_usd == pytest.approx(0.000405)
    assert usage.describe() == "judge: 2 replies (0 cached), 2 requests, 1,500 in / 300 out tokens, $0.0004"
    await client.aclose()


async def test_probe_lists_models_and_reports_unreachable_servers(
    fake_openai: FakeOpenAI, sleep: RecordedSleep
) -> None:
    client = make_client(fake_openai, sleep)
    assert await client.probe("judge-model", 5.0) == ["judge-model", "agent-model"]
    await client.aclose()
    dead = JudgeClient(base_url="http://127.0.0.1:9/v1", api_key=None, api_key_env="OPENAI_API_KEY", sleep=sleep)
    with pytest.raises(JudgeCallError, match=r"cannot reach http://127\.0\.0\.1:9/v1"):
        await dead.probe("judge-model", 2.0)
    await dead.aclose()


def test_retry_after_accepts_seconds_and_http_dates() -> None:
    assert retry_after_seconds("3") == 3.0
    assert retry_after_seconds(None) is None
    # 2015-10-21 07:28:00 GMT is 1445412480; 10 s before it -> 10
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0
    assert retry_after_seconds("soon") is None
