"""`runners.replay`: each request gets an output of its own, read back from recordings of any size."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalward.model import AgentOutput, AgentRequest
from evalward.reading import DEFAULT_MAX_FILE_SIZE, set_max_file_size
from evalward.runners.agent_contract import AgentFailure
from evalward.runners.replay import ReplayAgent

LINE = '{"case_id": "c", "output": {"response": "hi", "tool_calls": [{"name": "f"}]}}\n'


def ask(agent: ReplayAgent, repetition: int = 0) -> AgentOutput:
    request = AgentRequest(case_id="c", turn=0, query="q", session_id=f"set/c/r{repetition}/n", repetition=repetition)
    return asyncio.run(agent.run_turn(request))


@pytest.fixture
def small_cap() -> Iterator[None]:
    set_max_file_size(64)
    yield
    set_max_file_size(DEFAULT_MAX_FILE_SIZE)


def test_each_request_gets_an_output_of_its_own(tmp_path: Path) -> None:
    (tmp_path / "r.jsonl").write_text(LINE, encoding="utf-8")
    agent = ReplayAgent("replay:r.jsonl", cwd=tmp_path)
    first = ask(agent)
    first.tool_calls.clear()
    first.response = "changed by a metric"
    # Repetition 1 replays the lone repetition 0, unchanged by what was done to the first answer.
    assert ask(agent, repetition=1) == AgentOutput.model_validate({"response": "hi", "tool_calls": [{"name": "f"}]})
    asyncio.run(agent.aclose())
    assert agent.recordings is None


def test_a_recording_larger_than_the_file_size_cap_replays_and_is_hashed(tmp_path: Path, small_cap: None) -> None:
    path = tmp_path / "r.jsonl"
    # 31-byte lines under the 64-byte cap, 200 bytes in all: read line by line, hashed in chunks.
    path.write_text('{"case_id": "c", "output": "h"}\n' + "\n" * 168, encoding="utf-8")
    agent = ReplayAgent(f"replay:{path}")
    assert ask(agent).response == "h"
    target = agent.target
    path.write_text('{"case_id": "c", "output": "x"}\n' + "\n" * 168, encoding="utf-8")
    # The same agent keeps the hash of the bytes it replays; a new one hashes the new bytes.
    assert agent.target == target
    assert ReplayAgent(f"replay:{path}").target.config_hash != target.config_hash


def test_a_recording_changed_during_the_run_fails_the_turn_as_data(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(LINE, encoding="utf-8")
    agent = ReplayAgent(f"replay:{path}")
    asyncio.run(agent.start())
    path.write_text("{}", encoding="utf-8")
    with pytest.raises(AgentFailure) as caught:
        ask(agent)
    assert caught.value.kind == "agent_error"
    assert "the recording changed while it was replayed" in str(caught.value)
