"""`evalward.trace` (src/evalward/trace.py): capture scoping, propagation and the merge rules."""

from __future__ import annotations

import asyncio
import contextvars
import threading

from evalward import trace
from evalward.model import AgentOutput, ToolCall, Usage


def test_calls_outside_a_capture_are_no_ops() -> None:
    assert trace.current() is None
    trace.tool_call("search", {"q": 1})
    trace.agent_call("a")
    trace.step("s")
    trace.record_usage(input_tokens=1)
    with trace.capture() as collector:
        pass
    assert collector.empty


def test_a_capture_collects_and_then_uninstalls_itself() -> None:
    with trace.capture() as collector:
        assert trace.current() is collector
        trace.tool_call("search", {"q": "x"}, agent="planner", result=[1], status="error")
        trace.agent_call("planner")
        trace.step("plan")
        trace.record_usage(input_tokens=3, output_tokens=1, cost_usd=0.25)
        trace.record_usage(input_tokens=2)
    assert trace.current() is None
    assert collector.tool_calls == [
        ToolCall(name="search", args={"q": "x"}, agent="planner", result=[1], status="error")
    ]
    assert collector.agents == ["planner"]
    assert collector.steps == ["plan"]
    # input 3 + 2 = 5; output 1 (+ None) = 1; cost 0.25
    assert collector.usage == Usage(input_tokens=5, output_tokens=1, cost_usd=0.25)


def test_nested_captures_do_not_leak_into_each_other() -> None:
    with trace.capture() as outer:
        trace.step("outer-1")
        with trace.capture() as inner:
            trace.step("inner")
        trace.step("outer-2")
    assert (outer.steps, inner.steps) == (["outer-1", "outer-2"], ["inner"])


async def test_tasks_and_to_thread_report_to_their_capture_but_plain_threads_do_not() -> None:
    with trace.capture() as collector:

        async def in_task() -> None:
            trace.step("task")

        await asyncio.create_task(in_task())
        await asyncio.to_thread(trace.step, "to_thread")
        plain = threading.Thread(target=trace.step, args=("plain thread",))
        plain.start()
        plain.join()
        context = contextvars.copy_context()
        copied = threading.Thread(target=context.run, args=(trace.step, "copied context"))
        copied.start()
        copied.join()
    assert collector.steps == ["task", "to_thread", "copied context"]


def collector_with(**calls: object) -> trace.TraceCollector:
    with trace.capture() as collector:
        for name in calls.get("agents", []):  # type: ignore[attr-defined]
            trace.agent_call(name)
        for name in calls.get("steps", []):  # type: ignore[attr-defined]
            trace.step(name)
        for name in calls.get("tools", []):  # type: ignore[attr-defined]
            trace.tool_call(name, agent="traced_agent")
        if "tokens" in calls:
            trace.record_usage(input_tokens=calls["tokens"])  # type: ignore[arg-type]
    return collector


def test_merge_appends_tools_extends_agents_and_fills_a_missing_trajectory() -> None:
    output = AgentOutput(
        response="r",
        tool_calls=[ToolCall(name="returned", agent="worker")],
        usage=Usage(input_tokens=4, output_tokens=2),
    )
    merged = collector_with(agents=["root", "root", "helper"], steps=["a", "b"], tools=["traced"], tokens=6).apply(
        output
    )
    assert [c.name for c in merged.tool_calls] == ["returned", "traced"]
    # agents: none returned → traced ones first (duplicates dropped), then agents known only from tool calls
    assert merged.agents == ["root", "helper", "worker", "traced_agent"]
    assert merged.trajectory == ["a", "b"]
    # input 4 + 6 = 10; output 2
    assert merged.usage == Usage(input_tokens=10, output_tokens=2)
    assert merged.response == "r"


def test_merge_keeps_a_returned_trajectory_and_agent_list() -> None:
    output = AgentOutput(trajectory=["own"], agents=["own_agent"])
    merged = collector_with(agents=["traced_agent", "own_agent"], steps=["traced_step"]).apply(output)
    assert merged.trajectory == ["own"]
    assert merged.agents == ["own_agent", "traced_agent"]


def test_an_empty_capture_leaves_the_output_alone() -> None:
    output = AgentOutput(response="r")
    assert collector_with().apply(output) is output
