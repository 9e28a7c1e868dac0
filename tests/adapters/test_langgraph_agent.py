"""`langgraph:` targets (runners/langgraph_agent.py) on a real compiled graph: router, subgraphs, ToolNode."""

from __future__ import annotations

import asyncio
import json
import textwrap
from pathlib import Path

import pytest

from evalward._pipeline import RunOptions, prepare, run_prepared
from evalward.model import AgentOutput, AgentRequest, RunResult, ToolCall
from evalward.runners import AgentFailure, AgentStartError
from evalward.runners.langgraph_agent import LangGraphAgent, LangGraphOptions

GRAPH_FILE = Path(__file__).resolve().parent / "graphs" / "music_store_graph.py"
TARGET = f"langgraph:{GRAPH_FILE}:graph"

EVAL_SET = textwrap.dedent(
    """\
    evalward: 1
    eval_set_id: music_store
    metrics:
      - trajectory_subsequence
      - {name: tool_trajectory_avg_score, threshold: 1.0}
      - {name: output_match, threshold: 1.0, key: route}
      - {name: response_exact, threshold: 1.0}
    cases:
      - id: hendrix
        query: What songs by Jimi Hendrix do you have?
        expect:
          response: "Tracks: Purple Haze, Little Wing."
          trajectory: [router, question_answering_agent, tools, lookup_tracks]
          tool_calls:
            - {name: lookup_artist, args: {name: jimi hendrix}}
            - {name: lookup_tracks, args: {artist: jimi hendrix}}
          outputs: {route: question_answering_agent}
      - id: refund_237
        query: Please refund invoice 237
        expect:
          response: Invoice 237 would be refunded (mock).
          trajectory: [router, refund_agent, refund]
          tool_calls: []
          outputs: {route: refund_agent}
    """
)


def request(query: str, **fields: object) -> AgentRequest:
    return AgentRequest(case_id="c", turn=0, query=query, session_id="s-1", **fields)  # type: ignore[arg-type]


def run_turn(agent: LangGraphAgent, query: str, **fields: object) -> AgentOutput:
    async def go() -> AgentOutput:
        await agent.start()
        return await agent.run_turn(request(query, **fields))

    return asyncio.run(go())


def test_node_path_tool_calls_and_response_are_recorded_like_the_tutorial() -> None:
    output = run_turn(LangGraphAgent(TARGET), "What songs by Jimi Hendrix do you have?")
    # Node tasks in order, through the subgraph; after `tools`, the names of the calls it ran.
    assert output.trajectory == [
        "router",
        "question_answering_agent",
        "qa_model",
        "tools",
        "lookup_artist",
        "lookup_tracks",
        "qa_model",
    ]
    assert output.tool_calls == [
        ToolCall(
            name="lookup_artist",
            args={"name": "jimi hendrix"},
            agent="question_answering_agent",
            result="Jimi Hendrix",
            id="call_1",
            step=0,
        ),
        ToolCall(
            name="lookup_tracks",
            args={"artist": "jimi hendrix"},
            agent="question_answering_agent",
            result="Purple Haze, Little Wing",
            id="call_2",
            step=0,
        ),
    ]
    assert output.response == "Tracks: Purple Haze, Little Wing."
    assert output.outputs == {"route": "question_answering_agent"}
    state = output.state
    assert [m["type"] for m in state["messages"]] == ["human", "ai", "tool", "tool", "ai"]


def test_the_run_config_reaches_the_graph_mock_mode_by_default() -> None:
    mocked = run_turn(LangGraphAgent(TARGET), "Please refund invoice 237")
    assert mocked.response == "Invoice 237 would be refunded (mock)."
    live = run_turn(
        LangGraphAgent(TARGET, env={"EVALWARD_LANGGRAPH_CONFIG": '{"configurable": {"env": "prod"}}'}),
        "Please refund invoice 237",
    )
    assert live.response == "Invoice 237 was refunded."


def test_the_response_key_and_input_template_are_configurable() -> None:
    options = LangGraphOptions.from_env(
        {
            "EVALWARD_LANGGRAPH_RESPONSE_KEY": "route",
            "EVALWARD_LANGGRAPH_INPUT": '{"messages": [{"role": "user", "content": "refund {query}"}]}',
        }
    )
    output = run_turn(LangGraphAgent(TARGET, options=options), "invoice 9")
    assert output.response == "refund_agent"
    assert output.outputs["followup"] == "Invoice 9 would be refunded (mock)."


def test_session_state_and_history_become_graph_input() -> None:
    agent = LangGraphAgent(TARGET)
    from evalward.model import Message

    history = [Message(role="user", content="refund please"), Message(role="assistant", content="Which invoice?")]
    # The router reads the latest human message ("42"): no "refund" in it → the question path; the history
    # is in the graph's messages, and the session state seeds `invoice_id`.
    output = run_turn(agent, "invoice 42", history=history, session_state={"invoice_id": 5})
    messages = output.state["messages"]
    assert [m["content"] for m in messages[:3]] == ["refund please", "Which invoice?", "invoice 42"]
    assert output.outputs["invoice_id"] == 5


def test_the_pipeline_scores_a_langgraph_eval_set(tmp_path: Path) -> None:
    evals = tmp_path / "music.eval.yaml"
    evals.write_text(EVAL_SET, encoding="utf-8")
    run: RunResult = asyncio.run(run_prepared(prepare(RunOptions(paths=[str(evals)], agent=TARGET))))
    assert run.agent is not None and run.agent.kind == "langgraph"
    assert [(c.case_id, c.status) for c in run.cases] == [("hendrix", "passed"), ("refund_237", "passed")]
    # trajectory_subsequence: every reference step found in order → 4/4 and 3/3 = 1.0.
    assert run.cases[0].metrics == {
        "trajectory_subsequence": 1.0,
        "tool_trajectory_avg_score": 1.0,
        "output_match": 1.0,
        "response_exact": 1.0,
    }


def test_a_failing_graph_is_an_agent_error_naming_the_users_line() -> None:
    agent = LangGraphAgent(f"langgraph:{GRAPH_FILE}:broken_graph")  # a factory returning a compiled graph
    with pytest.raises(AgentFailure) as caught:
        run_turn(agent, "hi")
    assert caught.value.kind == "agent_error"
    assert caught.value.message.startswith("RuntimeError: database is locked (at ")
    assert "music_store_graph.py" in caught.value.message


@pytest.mark.parametrize(
    ("target", "message"),
    [
        (f"langgraph:{GRAPH_FILE}:nothing", "has no attribute 'nothing'"),
        (f"langgraph:{GRAPH_FILE}:TRACKS", "is a dict, not a compiled graph"),
        ("langgraph:no/such/file.py:graph", "file not found"),
        ("langgraph:graph_only", "expected langgraph:module:graph"),
        ("langgraph:no_such_module_xyz:graph", "importing module 'no_such_module_xyz' failed"),
    ],
)
def test_bad_targets_fail_to_start_with_a_reason(target: str, message: str) -> None:
    with pytest.raises(AgentStartError, match=message):
        asyncio.run(LangGraphAgent(target).start())


def test_a_bad_config_variable_fails_at_start() -> None:
    agent = LangGraphAgent(TARGET, env={"EVALWARD_LANGGRAPH_CONFIG": "[1, 2"})
    with pytest.raises(AgentStartError, match="EVALWARD_LANGGRAPH_CONFIG is not valid JSON"):
        asyncio.run(agent.start())
    assert json.loads(json.dumps(agent.target.model_dump()))["kind"] == "langgraph"
