"""The `openai:MODEL` runner against the fake server through the real `openai` client: the tool loop,
mocked tools (fixed, table, Python callable), the step limit, failures and teacher-forced next actions."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.openai_server import FakeOpenAI, Reply, ToolCallReply

from evalward.errors import EvalFileError
from evalward.model import AgentRequest, Message, ToolCall
from evalward.runners.agent_contract import AgentFailure, AgentStartError
from evalward.runners.openai_agent import OpenAIAgent, OpenAIAgentOptions, load_tools, openai_messages

TOOLS: list[dict[str, Any]] = [
    {
        "name": "lookup_track",
        "description": "Look up tracks by artist.",
        "parameters": {"type": "object", "properties": {"artist": {"type": "string"}}, "required": ["artist"]},
        "results": [{"args": {"artist": "James Brown"}, "result": {"count": 20}}],
    },
    {"name": "store_hours", "description": "Opening hours.", "result": "9-17"},
    {"name": "refund", "description": "Refund an invoice.", "python": "mocks.py:refund"},
]


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def tools_file(tmp_path: Path) -> Path:
    (tmp_path / "mocks.py").write_text(
        "def refund(invoice_id):\n"
        "    if invoice_id == 0:\n"
        "        raise ValueError('no invoice 0')\n"
        "    return {'refunded': invoice_id * 1.0}\n"
    )
    (tmp_path / "prompt.txt").write_text("You are the music store's support agent.")
    path = tmp_path / "tools.json"
    path.write_text(json.dumps({"tools": TOOLS}))
    return path


def agent_for(fake: FakeOpenAI, tools_file: Path, **options: Any) -> OpenAIAgent:
    settings = OpenAIAgentOptions(
        base_url=fake.base_url,
        tools=str(tools_file),
        system_prompt=str(tools_file.parent / "prompt.txt"),
        **options,
    )
    return OpenAIAgent("openai:agent-model", options=settings)


def request(query: str = "How many James Brown songs?", **fields: Any) -> AgentRequest:
    return AgentRequest(case_id="c", turn=0, query=query, session_id="s", **fields)


async def test_tool_loop_with_a_table_mock(fake: FakeOpenAI, tools_file: Path) -> None:
    fake.reply(
        Reply.calls(ToolCallReply("lookup_track", {"artist": "James Brown"}, id="call_a")),
        Reply.text("We have 20 songs by James Brown."),
    )
    agent = agent_for(fake, tools_file)
    await agent.start()
    output = await agent.run_turn(request())
    await agent.aclose()

    assert output.response == "We have 20 songs by James Brown."
    assert output.tool_calls == [
        ToolCall(name="lookup_track", args={"artist": "James Brown"}, id="call_a", step=0, result={"count": 20})
    ]
    # hand calculation: 2 model requests x (10 in, 5 out) = 20 in, 10 out
    assert output.usage is not None
    assert (output.usage.input_tokens, output.usage.output_tokens, output.usage.model_requests) == (20, 10, 2)
    first, second = (r.body for r in fake.completions())
    assert first is not None and second is not None
    assert [t["function"]["name"] for t in first["tools"]] == ["lookup_track", "store_hours", "refund"]
    assert first["tool_choice"] == "auto"
    assert first["messages"] == [
        {"role": "system", "content": "You are the music store's support agent."},
        {"role": "user", "content": "How many James Brown songs?"},
    ]
    assert second["messages"][2]["tool_calls"][0]["function"] == {
        "name": "lookup_track",
        "arguments": '{"artist": "James Brown"}',
    }
    assert second["messages"][3] == {"role": "tool", "tool_call_id": "call_a", "content": '{"count": 20}'}


async def test_parallel_calls_share_a_step_and_mocks_of_each_kind(fake: FakeOpenAI, tools_file: Path) -> None:
    fake.reply(
        Reply.calls(
            ToolCallReply("store_hours", {}),
            ToolCallReply("refund", {"invoice_id": 237}),
            ToolCallReply("refund", {"invoice_id": 0}),
            ToolCallReply("lookup_track", {"artist": "Nobody"}),
        ),
        Reply.text("done"),
    )
    agent = agent_for(fake, tools_file)
    output = await agent.run_turn(request())
    await agent.aclose()
    got = [(c.name, c.step, c.status, c.result) for c in output.tool_calls]
    assert got == [
        ("store_hours", 0, "ok", "9-17"),
        ("refund", 0, "ok", {"refunded": 237.0}),
        ("refund", 0, "error", {"error": "ValueError: no invoice 0"}),
        ("lookup_track", 0, "error", {"error": "no mocked result for these arguments"}),
    ]


async def test_step_limit_is_an_agent_error(fake: FakeOpenAI, tools_file: Path) -> None:
    fake.responder = lambda body: Reply.calls(ToolCallReply("store_hours", {}))
    agent = agent_for(fake, tools_file, max_steps=3)
    with pytest.raises(AgentFailure) as caught:
        await agent.run_turn(request())
    await agent.aclose()
    assert caught.value.kind == "agent_error"
    assert "still calling tools after 3 steps" in caught.value.message
    assert len(fake.completions()) == 3


async def test_a_rate_limited_step_is_retried_as_that_step(fake: FakeOpenAI, tools_file: Path) -> None:
    answers = iter(
        [
            Reply.calls(ToolCallReply("store_hours", {})),
            Reply.error(429, "Rate limit reached", headers={"retry-after-ms": "60"}),
            Reply.text("We open at 9."),
        ]
    )
    fake.responder = lambda body: next(answers)
    agent = agent_for(fake, tools_file)
    output = await agent.run_turn(request())
    await agent.aclose()
    completions = fake.completions()
    assert [r.status for r in completions] == [200, 429, 200]
    # Step 1 was asked once; the retry of step 2 resent step 2's messages (with step 1's tool result), after
    # the 60 ms the server asked for.
    assert completions[1].body == completions[2].body
    assert [m["role"] for m in completions[2].body["messages"]][-2:] == ["assistant", "tool"]
    assert completions[2].arrived - completions[1].arrived >= 0.06
    assert output.response == "We open at 9."
    assert [c.name for c in output.tool_calls] == ["store_hours"]
    assert output.usage is not None
    assert (output.usage.model_requests, output.usage.model_retries) == (2, 1)


async def test_a_step_out_of_retries_fails_the_turn_for_good(fake: FakeOpenAI, tools_file: Path) -> None:
    fake.responder = lambda body: Reply.error(503, "overloaded", headers={"retry-after-ms": "10"})
    agent = agent_for(fake, tools_file, max_retries=2)
    with pytest.raises(AgentFailure) as caught:
        await agent.run_turn(request())
    await agent.aclose()
    # Retrying the whole turn would pay for every earlier step again: the executor is told not to.
    assert (caught.value.kind, caught.value.retryable) == ("agent_error", False)
    assert caught.value.message.endswith("(after 2 retries)")
    assert len(fake.completions()) == 3


async def test_next_action_only_returns_the_first_step_unexecuted(fake: FakeOpenAI, tools_file: Path) -> None:
    fake.reply(Reply.calls(ToolCallReply("refund", {"invoice_id": 237})))
    agent = agent_for(fake, tools_file)
    history = [
        Message(role="user", content="Refund invoice 237"),
        Message(role="assistant", tool_calls=[ToolCall(name="store_hours", args={})]),
        Message(role="tool", content="9-17"),
    ]
    output = await agent.run_turn(request("Refund invoice 237", history=history, next_action_only=True))
    await agent.aclose()
    assert [(c.name, c.args, c.result) for c in output.tool_calls] == [("refund", {"invoice_id": 237}, None)]
    body = fake.completions()[0].body
    assert body is not None
    # The history already holds the user's message: it is not sent twice; the id-less call got an id.
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "tool"]
    assert body["messages"][3]["tool_call_id"] == body["messages"][2]["tool_calls"][0]["id"] == "call_h1_0"


def test_openai_messages_keep_recorded_ids() -> None:
    history = [
        Message(role="assistant", tool_calls=[ToolCall(name="f", args={"a": 1}, id="x")]),
        Message(role="tool", tool_call_id="x", content="1"),
    ]
    assert openai_messages(history) == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "x", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}],
        },
        {"role": "tool", "tool_call_id": "x", "content": "1"},
    ]


def test_tools_file_problems_carry_json_paths(tmp_path: Path) -> None:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps([{"name": "bad name!"}, {"name": "f", "result": 1, "python": "m:f"}]))
    with pytest.raises(EvalFileError) as caught:
        load_tools(path)
    rendered = str(caught.value)
    assert "$[tools][0].name" in rendered or "$.tools[0].name" in rendered
    assert "give one mock per tool" in rendered


async def test_missing_system_prompt_cannot_start(tmp_path: Path) -> None:
    agent = OpenAIAgent("openai:m", options=OpenAIAgentOptions(system_prompt=str(tmp_path / "nope.txt")))
    with pytest.raises(AgentStartError, match="cannot read the system prompt"):
        await agent.start()


def test_target_hash_covers_prompt_tools_and_steps(fake: FakeOpenAI, tools_file: Path) -> None:
    one = agent_for(fake, tools_file).target
    two = agent_for(fake, tools_file, max_steps=2).target
    assert (one.kind, one.target) == ("openai", "openai:agent-model")
    assert one.config_hash != two.config_hash
