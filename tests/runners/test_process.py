"""The subprocess runner over real pipes, against the JSON-lines fake (tests/fakes/jsonl_agent.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from tests.fakes.cases import make_case, make_set

from evalward.errors import UsageError
from evalward.model import AgentRequest
from evalward.runners import make_agent
from evalward.runners.agent_contract import AgentFailure, AgentStartError
from evalward.runners.executor import ExecutorOptions, execute, plan_work
from evalward.runners.process import MAX_CONSECUTIVE_DEATHS, SubprocessAgent, parse_command

Target = Callable[..., str]


def request(query: str, case_id: str = "c1", **inputs: object) -> AgentRequest:
    return AgentRequest(case_id=case_id, turn=0, query=query, inputs=dict(inputs), session_id=f"s-{case_id}")


@asynccontextmanager
async def started(target: str, **kwargs: object) -> AsyncIterator[SubprocessAgent]:
    agent = make_agent(target, **kwargs)  # type: ignore[arg-type]
    assert isinstance(agent, SubprocessAgent)
    await agent.start()
    try:
        yield agent
    finally:
        await agent.aclose()


def spawned_pids(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


async def test_a_request_round_trips_through_the_process(jsonl_agent_target: Target) -> None:
    async with started(jsonl_agent_target()) as agent:
        output = await agent.run_turn(request("hi", tool_calls=[{"name": "lookup", "args": {"id": 7}}]))
    assert output.response == "echo: hi"
    assert [(c.name, c.args, c.result) for c in output.tool_calls] == [("lookup", {"id": 7}, "result of lookup")]


async def test_answers_out_of_order_reach_the_right_requests(jsonl_agent_target: Target) -> None:
    # The fake holds three requests, then answers them in reverse order.
    async with started(jsonl_agent_target("--reverse-batch", "3")) as agent:
        outputs = await asyncio.gather(*(agent.run_turn(request(f"q{i}", f"c{i}")) for i in range(3)))
    assert [o.response for o in outputs] == ["echo: q0", "echo: q1", "echo: q2"]


async def test_garbage_lines_and_unknown_ids_are_ignored(jsonl_agent_target: Target) -> None:
    async with started(jsonl_agent_target("--garbage")) as agent:
        outputs = [await agent.run_turn(request(f"q{i}")) for i in range(3)]
    assert [o.response for o in outputs] == ["echo: q0", "echo: q1", "echo: q2"]


async def test_an_error_line_is_an_agent_error_with_its_retry_flag(jsonl_agent_target: Target) -> None:
    async with started(jsonl_agent_target("--error-on", "nope")) as agent:
        with pytest.raises(AgentFailure) as refused:
            await agent.run_turn(request("nope"))
        with pytest.raises(AgentFailure) as transient:
            await agent.run_turn(request("later", protocol_error="rate limited", retryable=True))
        still_fine = await agent.run_turn(request("fine"))
    assert (refused.value.kind, refused.value.message, refused.value.retryable) == (
        "agent_error",
        "the agent reported an error: refused nope",
        False,
    )
    assert (transient.value.kind, transient.value.retryable) == ("agent_error", True)
    assert still_fine.response == "echo: fine"


async def test_a_malformed_output_names_the_field(jsonl_agent_target: Target) -> None:
    async with started(jsonl_agent_target()) as agent:
        with pytest.raises(AgentFailure) as caught:
            await agent.run_turn(request("x", output={"response": 42}))
    assert caught.value.kind == "malformed_output"
    assert caught.value.message == "malformed agent output: response: Input should be a valid string (found 42)"


async def test_a_crash_fails_the_request_with_exit_code_and_stderr_then_respawns(
    jsonl_agent_target: Target, tmp_path: Path
) -> None:
    log = tmp_path / "spawns.log"
    async with started(jsonl_agent_target("--crash-on", "die", "--spawn-log", str(log))) as agent:
        assert (await agent.run_turn(request("before"))).response == "echo: before"
        with pytest.raises(AgentFailure) as caught:
            await agent.run_turn(request("die"))
        after = await agent.run_turn(request("after"))
        assert agent.spawn_count == 2
    assert caught.value.kind == "crash"
    assert "exited with exit code 3" in caught.value.message
    assert "fatal: crash requested on 'die'" in caught.value.message
    assert after.response == "echo: after"
    assert len(set(spawned_pids(log))) == 2


async def test_a_crash_fails_every_request_in_flight(jsonl_agent_target: Target) -> None:
    async with started(jsonl_agent_target("--crash-on", "die", "--hang-on", "wait")) as agent:
        waiting = asyncio.create_task(agent.run_turn(request("wait", "bystander")))
        await asyncio.sleep(0)  # let the bystander's request go out first
        results = await asyncio.gather(waiting, agent.run_turn(request("die")), return_exceptions=True)
    assert all(isinstance(r, AgentFailure) and r.kind == "crash" for r in results)
    assert "in flight" in str(results[0])


async def test_the_stderr_tail_keeps_the_last_fifty_lines(jsonl_agent_target: Target) -> None:
    target = jsonl_agent_target("--stderr-noise", "80", "--exit-at-start", "7")
    async with started(target) as agent:
        with pytest.raises(AgentFailure) as caught:
            await agent.run_turn(request("x"))
    message = caught.value.message
    assert "exited with exit code 7" in message
    # 80 noise lines (0..79) + "cannot start" = 81 lines; the last 50 are noise 31..79 and "cannot start".
    assert "noise 31\n" in message
    assert "noise 30\n" not in message
    assert message.rstrip().endswith("cannot start\n(the request was in flight when the process died)".rstrip())


async def test_a_process_that_keeps_dying_at_start_is_not_restarted_forever(
    jsonl_agent_target: Target, tmp_path: Path
) -> None:
    log = tmp_path / "spawns.log"
    async with started(jsonl_agent_target("--exit-at-start", "2", "--spawn-log", str(log))) as agent:
        failures = []
        for i in range(MAX_CONSECUTIVE_DEATHS + 2):
            with pytest.raises(AgentFailure) as caught:
                await agent.run_turn(request(f"q{i}"))
            failures.append(caught.value.message)
    # start + 2 restarts = 3 deaths in a row; then no more processes are started.
    assert len(spawned_pids(log)) == MAX_CONSECUTIVE_DEATHS
    assert failures[-1].startswith(f"the agent process died {MAX_CONSECUTIVE_DEATHS} times in a row without answering")


async def test_a_pool_spreads_concurrent_requests_over_its_processes(
    jsonl_agent_target: Target, tmp_path: Path
) -> None:
    log = tmp_path / "spawns.log"
    async with started(jsonl_agent_target("--spawn-log", str(log), "--report-pid"), processes=2) as agent:
        outputs = await asyncio.gather(*(agent.run_turn(request(f"q{i}", f"c{i}", sleep_s=0.2)) for i in range(4)))
        assert agent.spawn_count == 2
    assert [o.response for o in outputs] == [f"echo: q{i}" for i in range(4)]
    # least busy first: q0 → p1, q1 → p2 (idle), q2 → p1 and q3 → p2 (round-robin between equals)
    pids = [str(o.outputs["pid"]) for o in outputs]
    assert pids[0] == pids[2] != pids[1] == pids[3]
    assert sorted(set(pids)) == sorted(spawned_pids(log))


async def test_process_death_mid_run_only_fails_the_case_that_killed_it(
    jsonl_agent_target: Target, tmp_path: Path
) -> None:
    log = tmp_path / "spawns.log"
    agent = make_agent(jsonl_agent_target("--crash-on", "die", "--spawn-log", str(log)))
    await agent.start()
    cases = [make_case("a"), make_case("b", "hello", "die"), make_case("c"), make_case("d")]
    summary = await execute(plan_work([make_set(*cases)], 1), agent, ExecutorOptions(concurrency=1, timeout_s=30))

    by_case = {r.item.case.case_id: r for r in summary.completed}
    assert [by_case[c].error is None for c in "acd"] == [True, True, True]
    error = by_case["b"].error
    assert error is not None
    assert (error.kind, error.turn, error.attempts) == ("crash", 1, 1)  # a crash is not retried
    assert [o.response for o in by_case["b"].outputs] == ["echo: hello"]
    assert len(spawned_pids(log)) == 2  # the first process and one respawn for c and d


async def test_a_hanging_request_times_out_while_others_are_answered(jsonl_agent_target: Target) -> None:
    agent = make_agent(jsonl_agent_target("--hang-on", "stuck"))
    await agent.start()
    cases = [make_case("stuck"), make_case("x"), make_case("y")]
    options = ExecutorOptions(concurrency=3, timeout_s=1.0)
    summary = await execute(plan_work([make_set(*cases)], 1), agent, options)
    by_case = {r.item.case.case_id: r for r in summary.completed}
    assert by_case["stuck"].error is not None
    assert by_case["stuck"].error.kind == "timeout"
    assert [by_case[c].outputs[0].response for c in "xy"] == ["echo: x", "echo: y"]


async def test_a_missing_command_is_a_start_error() -> None:
    agent = make_agent("cmd:definitely-not-a-command-4711 --serve")
    with pytest.raises(AgentStartError, match="agent command not found: 'definitely-not-a-command-4711'"):
        await agent.start()
    await agent.aclose()


def test_commands_are_split_like_a_shell_would() -> None:
    assert parse_command("cmd:python 'my agent.py' --name \"a b\"") == ["python", "my agent.py", "--name", "a b"]
    with pytest.raises(UsageError, match="no command after `cmd:`"):
        parse_command("cmd:   ")
    with pytest.raises(UsageError, match="cannot split the command"):
        parse_command("cmd:python 'unclosed")


def test_the_target_keeps_the_command_and_hashes_it() -> None:
    target = make_agent("cmd:python agent.py").target
    assert (target.kind, target.target) == ("subprocess", "cmd:python agent.py")
    assert target.config_hash != make_agent("cmd:python agent.py --v2").target.config_hash
