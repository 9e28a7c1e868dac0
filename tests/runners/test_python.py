"""The in-process Python runner: target forms, call conventions, failures, imports and tracing."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest
from tests.fakes.agents import FLAKY_ATTEMPTS
from tests.fakes.cases import make_case, make_set

from evalward.model import AgentOutput, AgentRequest, EvalCase, ToolCall
from evalward.runners import make_agent
from evalward.runners.agent_contract import Agent, AgentFailure, AgentStartError
from evalward.runners.executor import CaseRun, ExecutorOptions, execute, plan_work
from evalward.runners.python import PythonAgent

REPO_ROOT = Path(__file__).resolve().parents[2]


def request(query: str = "hello", **inputs: object) -> AgentRequest:
    return AgentRequest(case_id="c1", turn=0, query=query, inputs=dict(inputs), session_id="s-1")


async def run(
    target: str, req: AgentRequest | None = None, *, cwd: Path | None = None, env: dict[str, str] | None = None
) -> AgentOutput:
    agent = make_agent(target, cwd=cwd, env=env)
    await agent.start()
    try:
        return await agent.run_turn(req or request())
    finally:
        await agent.aclose()


async def failure(target: str, req: AgentRequest | None = None) -> AgentFailure:
    with pytest.raises(AgentFailure) as caught:
        await run(target, req)
    return caught.value


@pytest.mark.parametrize("name", ["echo", "async_echo"])
async def test_sync_and_async_functions_get_a_dict_and_return_one(name: str) -> None:
    output = await run(f"tests.fakes.agents:{name}", request("hi", tool_calls=[{"name": "t", "args": {"x": 1}}]))
    assert output.response == "echo: hi"
    assert output.tool_calls == [ToolCall(name="t", args={"x": 1}, result="result of t")]


async def test_a_function_annotated_with_agent_request_gets_the_model() -> None:
    output = await run("tests.fakes.agents:typed_echo", request("hi"))
    assert output.response == "typed echo: hi"
    assert output.outputs == {"session_id": "s-1"}


async def test_a_returned_string_is_the_response() -> None:
    output = await run("tests.fakes.agents:text_echo", request("hi"))
    assert output.response == "echo: hi"
    assert output.tool_calls == []


async def test_extra_output_keys_go_to_outputs() -> None:
    output = await run("tests.fakes.agents:echo", request(output={"route": "refund_agent"}))
    assert output.outputs == {"route": "refund_agent"}
    assert output.response is None


async def test_an_exception_is_an_agent_error_pointing_at_the_users_code() -> None:
    error = await failure("tests.fakes.agents:raises")
    assert error.kind == "agent_error"
    assert error.retryable is False
    assert error.message.startswith("RuntimeError: boom in case c1 turn 0 (at ")
    assert "tests/fakes/agents.py:" in error.message
    assert error.message.endswith(" in raises)")


async def test_malformed_output_names_the_field_and_what_was_found() -> None:
    error = await failure("tests.fakes.agents:malformed")
    assert error.kind == "malformed_output"
    assert error.message == (
        'malformed agent output: tool_calls[0].name: Field required (found {"args": {"city": "Paris"}})'
    )


@pytest.mark.parametrize("retryable", [True, False])
async def test_an_output_with_error_is_an_agent_error(retryable: bool) -> None:
    error = await failure("tests.fakes.agents:reports_error", request(retryable=retryable))
    assert (error.kind, error.retryable) == ("agent_error", retryable)
    assert error.message == "the agent reported an error: the model quota is exhausted"


async def test_traced_calls_are_merged_after_the_returned_ones() -> None:
    output = await run("tests.fakes.agents:sync_traced", request("q"))
    assert [c.name for c in output.tool_calls] == ["returned_tool", "sync_tool"]
    assert output.tool_calls[1].args == {"query": "q"}
    assert output.agents == ["sync_root"]
    assert output.trajectory == ["sync_step"]


async def test_a_fast_sync_agent_runs_in_place_and_still_traces_its_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """Once its calls have shown they are fast, a sync agent is called on the loop's thread (worker_threads):
    what it traces is still its turn's."""
    from evalward.runners import worker_threads
    from evalward.runners.worker_threads import FAST_STREAK

    monkeypatch.setattr(worker_threads, "FAST_CALL_S", 1.0)  # however busy the machine

    agent = make_agent("tests.fakes.agents:sync_traced")
    await agent.start()
    try:
        outputs = [await agent.run_turn(request(f"q{i}")) for i in range(FAST_STREAK + 3)]
        assert isinstance(agent, PythonAgent) and agent._threads is not None
        policy = agent._threads.policy
        assert policy is not None and policy.inline
    finally:
        await agent.aclose()
    for i, output in enumerate(outputs):
        assert [c.name for c in output.tool_calls] == ["returned_tool", "sync_tool"]
        assert output.tool_calls[1].args == {"query": f"q{i}"}


async def test_a_file_target_imports_its_siblings_and_does_not_collide_with_same_named_files(tmp_path: Path) -> None:
    for name in ("one", "two"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / f"helper_{name}.py").write_text(f"GREETING = 'from {name}'\n")
        (folder / "agent.py").write_text(
            f"from helper_{name} import GREETING\n\ndef root(request):\n    return GREETING\n", encoding="utf-8"
        )
    assert (await run("one/agent.py:root", cwd=tmp_path)).response == "from one"
    assert (await run("two/agent.py:root", cwd=tmp_path)).response == "from two"


async def test_postponed_annotations_still_select_the_model(tmp_path: Path) -> None:
    (tmp_path / "typed.py").write_text(
        textwrap.dedent(
            """
            from __future__ import annotations
            from evalward.model import AgentRequest

            async def root(request: AgentRequest) -> str:
                return f"turn {request.turn} of {request.case_id}"
            """
        )
    )
    output = await run(str(tmp_path / "typed.py") + ":root")
    assert output.response == "turn 0 of c1"


async def test_a_module_target_is_found_from_the_working_directory(tmp_path: Path) -> None:
    package = tmp_path / "cwd_pkg_for_runner_test"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "bot.py").write_text(
        "class Bot:\n    @staticmethod\n    def answer(request):\n        return 'nested'\n"
    )
    output = await run("cwd_pkg_for_runner_test.bot:Bot.answer", cwd=tmp_path)
    assert output.response == "nested"


def resolved(path: Path) -> Path:
    return path.resolve()


async def start_error(target: str, cwd: Path | None = None) -> str:
    agent = make_agent(target, cwd=cwd)
    with pytest.raises(AgentStartError) as caught:
        await agent.start()
    return str(caught.value)


async def test_a_missing_module_is_a_start_error_naming_it() -> None:
    message = await start_error("no_such_module_xyz:agent")
    assert (
        "importing module 'no_such_module_xyz' failed: ModuleNotFoundError: No module named 'no_such_module_xyz'"
        in message
    )


async def test_a_missing_file_is_a_start_error(tmp_path: Path) -> None:
    message = await start_error("missing.py:agent", cwd=tmp_path)
    assert message == f"agent 'missing.py:agent': file not found: {resolved(tmp_path / 'missing.py')}"


async def test_a_missing_function_lists_what_is_there(tmp_path: Path) -> None:
    (tmp_path / "bot.py").write_text("def root(request):\n    return ''\n\ndef helper():\n    pass\n\nVALUE = 3\n")
    message = await start_error("bot.py:rooot", cwd=tmp_path)
    assert message == "agent 'bot.py:rooot': bot.py has no attribute 'rooot'; callables found there: helper, root"


async def test_a_syntax_error_points_at_the_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("x = 1\ndef root(request:\n")
    message = await start_error("broken.py:root", cwd=tmp_path)
    assert "importing" in message
    assert "SyntaxError" in message
    assert f"{resolved(tmp_path / 'broken.py')}:2" in message


async def test_an_exception_at_import_is_a_start_error(tmp_path: Path) -> None:
    (tmp_path / "explodes.py").write_text("raise RuntimeError('no API key configured')\n")
    message = await start_error("explodes.py:root", cwd=tmp_path)
    assert "RuntimeError: no API key configured" in message
    assert "explodes.py:1" in message


async def test_env_is_set_for_the_run_and_restored(tmp_path: Path) -> None:
    (tmp_path / "envbot.py").write_text("import os\n\ndef root(request):\n    return os.environ['RUNNER_TEST_VAR']\n")
    assert "RUNNER_TEST_VAR" not in os.environ
    output = await run("envbot.py:root", cwd=tmp_path, env={"RUNNER_TEST_VAR": "set"})
    assert output.response == "set"
    assert "RUNNER_TEST_VAR" not in os.environ


async def test_from_callable_wraps_a_function_without_importing() -> None:
    def local(request: dict[str, object]) -> dict[str, object]:
        return {"response": f"local {request['query']}"}

    agent: Agent = PythonAgent.from_callable(local)
    await agent.start()
    assert (await agent.run_turn(request("x"))).response == "local x"
    assert agent.target.kind == "python"
    assert agent.target.target.endswith(":test_from_callable_wraps_a_function_without_importing.<locals>.local")


def test_the_target_is_described_with_a_config_hash() -> None:
    first = make_agent("tests.fakes.agents:echo").target
    assert (first.kind, first.target) == ("python", "tests.fakes.agents:echo")
    assert first.config_hash == make_agent("tests.fakes.agents:echo").target.config_hash
    assert first.config_hash != make_agent("tests.fakes.agents:async_echo").target.config_hash


# --- through the executor ------------------------------------------------------------------------------------


async def execute_one(target: str, case: EvalCase, options: ExecutorOptions) -> CaseRun:
    agent = make_agent(target)
    await agent.start()
    summary = await execute(plan_work([make_set(case)], 1), agent, options)
    return summary.completed[0]


async def test_a_flaky_agent_is_retried_and_the_attempts_counted() -> None:
    FLAKY_ATTEMPTS.clear()
    run_ = await execute_one(
        "tests.fakes.agents:flaky",
        make_case("c", "a", "b", inputs={"fail_times": 1}),
        ExecutorOptions(retry_backoff_s=0),
    )
    assert run_.error is None
    # each of the 2 turns: 1 retryable error + 1 success = 4 attempts
    assert run_.attempts == 4
    assert [o.outputs["attempt"] for o in run_.outputs] == [2, 2]
    assert sorted(FLAKY_ATTEMPTS.values()) == [2, 2]


@pytest.mark.parametrize("target", ["tests.fakes.agents:hang", "tests.fakes.agents:sync_slow"])
async def test_a_turn_that_runs_too_long_times_out(target: str) -> None:
    # sync_slow sleeps 0.3 s in its thread, which runs to the end after the 0.05 s timeout fires.
    run_ = await execute_one(target, make_case("c", inputs={"sleep_s": 0.3}), ExecutorOptions(timeout_s=0.05))
    assert run_.error is not None
    assert (run_.error.kind, run_.error.turn) == ("timeout", 0)
    assert run_.outputs == []


async def test_the_agent_sees_the_conversation_so_far() -> None:
    run_ = await execute_one(
        "tests.fakes.agents:history_echo", make_case("c", "one", "two", "three"), ExecutorOptions()
    )
    histories = [json.loads(o.response or "") for o in run_.outputs]
    assert histories[0] == []
    assert histories[1] == [["user", "one"], ["assistant", "[]"]]
    # turn 2 sees turn 0 and turn 1, each as (user, assistant), the assistant text being what it answered
    assert histories[2] == [
        ["user", "one"],
        ["assistant", "[]"],
        ["user", "two"],
        ["assistant", run_.outputs[1].response],
    ]
