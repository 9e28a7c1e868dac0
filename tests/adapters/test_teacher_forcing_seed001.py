"""Seed 001's two recorded trajectories, teacher-forced through real compiled LangGraph graphs and a Python agent.

The agent (graphs/search_agent.py) paraphrases the Dune question's second search ("Denis Villeneuve
brother" for the recorded "Denis Villanueve Brother") and gets everything else right; on the SF/LA question
it makes the two searches as parallel calls of one AI message. Scored exactly (the default):

- Dune 2: m = 3 searches + the answer, N = 4; c = (1, 0, 1, 1) → stepwise 3/4 = 0.75, j* = 2,
  survived_until = (2 − 1)/4 = 0.25; the free run diverges at the same search: s = 1 of 3.
- SF/LA: m = 1 (both searches), N = 2; c = (1, 1) → stepwise 1.0, survived_until = 1.0; the free run
  followed the one step: 1/1.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from evalward._pipeline import RunOptions, prepare, run_prepared
from evalward.model import AgentOutput, AgentRequest, Message, RunResult, ToolCall
from evalward.runners.langgraph_agent import LangGraphAgent

GRAPHS = Path(__file__).resolve().parent / "graphs"
AGENT_FILE = GRAPHS / "search_agent.py"
EVAL_FILE = GRAPHS / "seed001.eval.json"

TARGETS = [
    pytest.param(f"langgraph:{AGENT_FILE}:react_graph", id="create_react_agent"),
    pytest.param(f"langgraph:{AGENT_FILE}:state_graph", id="StateGraph+ToolNode"),
    pytest.param(f"{AGENT_FILE}:python_agent", id="python"),
]

SEED_NUMBERS = {
    # hand calculation in the module docstring
    "dune2": {
        "stepwise_score": 0.75,
        "first_error_step": 2.0,
        "survived_until": 0.25,
        "free_running_survival": pytest.approx(1 / 3),
        "divergence_index": 2.0,
    },
    "sf_la": {
        "stepwise_score": 1.0,
        "first_error_step": 3.0,
        "survived_until": 1.0,
        "free_running_survival": 1.0,
        "divergence_index": 2.0,
    },
}


def run(target: str, eval_file: Path = EVAL_FILE) -> RunResult:
    return asyncio.run(run_prepared(prepare(RunOptions(paths=[str(eval_file)], agent=target))))


@pytest.mark.parametrize("eval_file", ["seed001.eval.json", "seed001.langsmith.json"])
@pytest.mark.parametrize("target", TARGETS)
def test_both_seed_trajectories_give_the_seeds_numbers(target: str, eval_file: str) -> None:
    """The native file and the seed's own dataset shape (LangSmith examples whose `inputs.trajectory` holds
    `dumpd` LangChain messages, calls in `additional_kwargs.tool_calls`) give the same numbers."""
    result = run(target, GRAPHS / eval_file)
    scores = {case.case_id: case.metrics for case in result.cases}
    assert scores == SEED_NUMBERS
    dune = next(c for c in result.cases if c.case_id == "dune2")
    steps = next(m for m in dune.metric_results if m.name == "stepwise_score").details["steps"]
    assert steps[1]["note"] == (
        'step 2: [tavily_search_results_json(query="Denis Villeneuve brother")] != '
        '[tavily_search_results_json(query="Denis Villanueve Brother")] -> 0'
    )
    survived = next(m for m in dune.metric_results if m.name == "survived_until")
    assert survived.explanation == "c=(1, 0, 1, 1), j*=2: (j*-1)/N = 1/4 = 0.250"


SF_LA = "What is the difference between the current temperatures in SF and LA?"


@pytest.mark.parametrize("graph", ["react_graph", "state_graph"])
def test_next_action_only_stops_at_the_agents_message_and_runs_no_tool(graph: str) -> None:
    from tests.adapters.graphs import search_agent

    agent = LangGraphAgent(f"langgraph:{AGENT_FILE}:{graph}")

    async def go() -> tuple[AgentOutput, AgentOutput, list[str]]:
        await agent.start()
        search_agent.SEARCHES.clear()
        first = await agent.run_turn(
            AgentRequest(
                case_id="c",
                turn=0,
                query=SF_LA,
                history=[Message(role="user", content=SF_LA)],
                session_id="s",
                next_action_only=True,
            )
        )
        calls = [
            ToolCall(name="tavily_search_results_json", args={"query": q}, id=f"w{k}")
            for k, q in enumerate(["temperature in SF", "temperature in LA"])
        ]
        after = await agent.run_turn(
            AgentRequest(
                case_id="c",
                turn=0,
                query=SF_LA,
                history=[
                    Message(role="user", content=SF_LA),
                    Message(role="assistant", tool_calls=calls),
                    Message(role="tool", tool_call_id="w0", content="the tempareture in SF is 75 degrees Fahrenheit"),
                    Message(role="tool", tool_call_id="w1", content="the temperature in LA is 89 degrees Fahrenheit"),
                ],
                session_id="s",
                next_action_only=True,
            )
        )
        return first, after, list(search_agent.SEARCHES)

    first, after, searches = asyncio.run(go())
    # Both parallel calls are the one next action (one step), and no search ran.
    assert [(c.args, c.step) for c in first.tool_calls] == [
        ({"query": "temperature in SF"}, 0),
        ({"query": "temperature in LA"}, 0),
    ]
    assert first.response is None
    # With the recorded tool messages answering the calls by id, the agent answers.
    assert after.tool_calls == []
    assert after.response == "The difference in temperatures is 14 degrees Fahrenheit"
    assert searches == []


def test_a_free_run_of_create_react_agent_keeps_parallel_calls_in_one_step() -> None:
    agent = LangGraphAgent(f"langgraph:{AGENT_FILE}:react_graph")

    async def go() -> AgentOutput:
        await agent.start()
        return await agent.run_turn(AgentRequest(case_id="c", turn=0, query=SF_LA, session_id="s"))

    output = asyncio.run(go())
    # create_react_agent sends each call to a tools task of its own; both ran in one superstep: one step.
    assert [(c.args["query"], c.step) for c in output.tool_calls] == [
        ("temperature in SF", 0),
        ("temperature in LA", 0),
    ]
