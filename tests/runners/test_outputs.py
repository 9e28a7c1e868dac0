"""`coerce_output` (src/evalward/runners/outputs.py): what agents may answer and how bad answers are described."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from tests.fakes.cases import make_case, make_set
from tests.fakes.http_agent import FakeHttpAgent

from evalward.model import AgentOutput, ToolCall, Usage
from evalward.runners import make_agent
from evalward.runners.agent_contract import AgentFailure
from evalward.runners.executor import ExecutorOptions, execute, plan_work
from evalward.runners.outputs import coerce_output, snippet


def test_a_dict_an_output_model_and_a_string_are_accepted() -> None:
    assert coerce_output({"response": "r", "tool_calls": [{"name": "t"}], "route": "x"}) == AgentOutput(
        response="r", tool_calls=[ToolCall(name="t")], outputs={"route": "x"}
    )
    model = AgentOutput(response="m")
    assert coerce_output(model) is model
    assert coerce_output("just text") == AgentOutput(response="just text")


def malformed(value: object) -> str:
    with pytest.raises(AgentFailure) as caught:
        coerce_output(value)
    assert caught.value.kind == "malformed_output"
    return caught.value.message


def test_a_wrong_field_is_named_with_what_was_found() -> None:
    assert malformed({"tool_calls": [{"name": "ok"}, {"name": 3}]}) == (
        "malformed agent output: tool_calls[1].name: Input should be a valid string (found 3)"
    )


def test_many_problems_are_summarised() -> None:
    message = malformed({"tool_calls": [{}, {}, {}, {}, {}]})
    # five calls without a name: three are listed, the other two counted
    assert message.count("Field required") == 3
    assert message.endswith("; … and 2 more")


def test_other_types_are_rejected_with_their_type() -> None:
    assert malformed(42) == (
        'malformed agent output: expected an object like {"response": ..., "tool_calls": [...]}, '
        "an AgentOutput or a string; found int 42"
    )
    assert malformed(None).endswith("found NoneType null")


def test_an_error_output_is_an_agent_error() -> None:
    with pytest.raises(AgentFailure) as caught:
        coerce_output({"error": "quota", "retryable": True})
    assert (caught.value.kind, caught.value.message, caught.value.retryable) == (
        "agent_error",
        "the agent reported an error: quota",
        True,
    )


def test_snippets_are_single_line_and_bounded() -> None:
    assert snippet("a\nb") == '"a\\nb"'
    assert snippet({"k": "x" * 500}, limit=20) == '{"k": "xxxxxxxxxxxx…'
    assert len(snippet({"k": "x" * 500}, limit=20)) == 20


# --- the langchain-benchmarks agent contract ---------------------------------------------------------------------

BENCHMARK_JSON = {
    "question": "Add 2 and 3, then negate",
    "output": "The answer is -6.2",
    "intermediate_steps": [
        [{"tool": "add", "tool_input": {"a": 2, "b": 3}, "log": "Invoking add", "type": "AgentAction"}, 6.2],
        [{"tool": "negate", "tool_input": "6.2", "log": ""}, "-6.2"],
    ],
    "state": {"paper": "-6.2"},
}
"""An AgentExecutor answer as JSON would carry it: steps as [action dict, observation] pairs."""

BENCHMARK_OUTPUT = AgentOutput(
    response="The answer is -6.2",
    tool_calls=[
        ToolCall(name="add", args={"a": 2, "b": 3}, result=6.2),
        ToolCall(name="negate", args={"input": "6.2"}, result="-6.2"),
    ],
    state={"paper": "-6.2"},
    outputs={"question": "Add 2 and 3, then negate", "output": "The answer is -6.2"},
)


def test_the_benchmark_shape_becomes_response_tool_calls_and_state() -> None:
    assert coerce_output(BENCHMARK_JSON) == BENCHMARK_OUTPUT


@pytest.mark.parametrize("flavour", ["python", "subprocess", "http"])
async def test_every_runner_reads_the_benchmark_shape(
    flavour: str, jsonl_agent_target: Callable[..., str], http_agent: FakeHttpAgent
) -> None:
    """The fakes answer `inputs.output` verbatim, so the same JSON reaches coerce_output through each runner."""
    target = {"python": "tests.fakes.agents:echo", "subprocess": jsonl_agent_target(), "http": http_agent.url}[flavour]
    agent = make_agent(target)
    await agent.start()
    try:
        summary = await execute(
            plan_work([make_set(make_case("mm-1", inputs={"output": BENCHMARK_JSON}))], 1), agent, ExecutorOptions()
        )
    finally:
        await agent.aclose()
    [case_run] = summary.completed
    assert case_run.error is None
    assert case_run.outputs == [BENCHMARK_OUTPUT]
    assert case_run.final_state == {"paper": "-6.2"}


def test_langchain_agent_actions_are_read_with_their_call_ids() -> None:
    agents = pytest.importorskip("langchain_core.agents")

    class ToolAgentAction(agents.AgentActionMessageLog):  # type: ignore[misc, name-defined]
        tool_call_id: str  # as langchain's tool-calling agents add

    steps = [
        (agents.AgentAction(tool="add", tool_input={"a": 2, "b": 3}, log="Invoking `add`"), 6.2),
        agents.AgentStep(action=agents.AgentAction(tool="negate", tool_input="6.2", log=""), observation=-6.2),
        (ToolAgentAction(tool="sin", tool_input={"radians": 1}, log="", message_log=[], tool_call_id="call_9"), object),
    ]
    output = coerce_output({"output": "done", "intermediate_steps": steps})
    assert output.tool_calls == [
        ToolCall(name="add", args={"a": 2, "b": 3}, result=6.2),
        ToolCall(name="negate", args={"input": "6.2"}, result=-6.2),
        ToolCall(name="sin", args={"radians": 1}, id="call_9", result=str(object)),  # not JSON: its str()
    ]


def test_other_spellings_of_steps_and_outputs() -> None:
    serialised = {
        "lc": 1,
        "type": "constructor",
        "id": ["x", "AgentAction"],
        "kwargs": {"tool": "pi", "tool_input": {}},
    }
    output = coerce_output(
        {
            "output": [
                {"type": "text", "text": "It is"},
                {"type": "tool_use", "id": "t"},
                {"type": "text", "text": "3.14"},
            ],
            "intermediate_steps": [
                serialised,
                {"action": {"tool": "cos", "tool_input": {"radians": 0}}, "observation": 1},
            ],
        }
    )
    assert output.response == "It is\n3.14"
    assert output.tool_calls == [ToolCall(name="pi", args={}), ToolCall(name="cos", args={"radians": 0}, result=1)]
    # A number output is its JSON text; actual_steps are step names.
    steps_only = coerce_output({"output": 7.2, "actual_steps": ["add", "multiply"]})
    assert (steps_only.response, steps_only.steps(), steps_only.tool_calls) == ("7.2", ["add", "multiply"], [])
    # `output` alone is a LangChain answer too; beside the protocol's keys it is just another output.
    assert coerce_output({"output": "hi"}).response == "hi"
    assert coerce_output({"response": "r", "output": "o"}) == AgentOutput(response="r", outputs={"output": "o"})
    # the protocol's other keys keep their meaning beside the benchmark's
    with_usage = coerce_output(
        {"output": "hi", "intermediate_steps": [], "usage": {"input_tokens": 3}, "agents": ["a"]}
    )
    assert (with_usage.usage, with_usage.agents, with_usage.outputs) == (Usage(input_tokens=3), ["a"], {"output": "hi"})
    with pytest.raises(AgentFailure, match="the agent reported an error: quota"):
        coerce_output({"output": None, "intermediate_steps": [], "error": "quota"})


def test_a_step_that_is_no_action_is_named() -> None:
    message = malformed({"output": "x", "intermediate_steps": [["add", 1, 2]]})
    assert message == (
        "malformed agent output: intermediate_steps[0]: expected an (action, observation) pair whose action has "
        '`tool` and `tool_input` (a LangChain AgentAction or its dict), found list ["add", 1, 2]'
    )
    assert malformed({"intermediate_steps": "add"}) == (
        'malformed agent output: intermediate_steps: expected a list of (action, observation) pairs, found str "add"'
    )
