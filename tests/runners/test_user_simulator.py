"""The simulated user of conversation_scenario cases, run by the executor against the fake OpenAI server through
the real `openai` client: starting prompt, stop signal, turn limit, missing model, retries, empty replies."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from tests.fakes.agents import FakeAgent
from tests.fakes.cases import make_case, make_set
from tests.fakes.openai_server import FakeOpenAI, Reply

from evalward.model import AgentOutput, AgentRequest, ConversationScenario, EvalCase, Invocation, ToolCall
from evalward.runners.executor import ExecutionSummary, ExecutorOptions, execute, plan_work
from evalward.runners.user_simulator import (
    SIMULATOR_INSTRUCTIONS,
    SimulatorSettings,
    UserSimulator,
    has_stop_signal,
    history_text,
    simulator_messages,
)

FAST = ExecutorOptions(concurrency=2, timeout_s=10, retry_backoff_s=0)
SCENARIO = ConversationScenario(
    starting_prompt="I want to plan a trip.", conversation_plan="A 3 day trip to Paris; accept the plan."
)


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(models=["user-model"]) as server:
        yield server


def scenario_case(case_id: str = "trip") -> EvalCase:
    return EvalCase(case_id=case_id, turns=[Invocation(query=SCENARIO.starting_prompt)], scenario=SCENARIO)


def simulator(fake: FakeOpenAI | None, **overrides: Any) -> UserSimulator:
    settings = SimulatorSettings(
        model="user-model",
        base_url=fake.base_url if fake is not None else "http://127.0.0.1:9/v1",
        api_key_env="OPENAI_API_KEY",
        max_turns=20,
        max_retries=2,
    )
    settings = SimulatorSettings(**{**settings.__dict__, **overrides})
    return UserSimulator(lambda _eval_set: settings, environ=os.environ, price=lambda m, i, o: (i + o) / 1e6)


async def play(eval_set: Any, agent: FakeAgent, sim: UserSimulator) -> ExecutionSummary:
    """Run every case of `eval_set` with `sim` playing the user, then close the simulator's client."""
    try:
        return await execute(plan_work([eval_set], 1), agent, FAST, simulator=sim)
    finally:
        await sim.aclose()


async def planner(request: AgentRequest) -> AgentOutput:
    if "paris" in request.query.lower():
        return AgentOutput(response="Booked: 3 days in Paris.", tool_calls=[ToolCall(name="plan_trip", args={})])
    return AgentOutput(response="Where to, and for how long?")


async def test_the_simulated_user_plays_until_the_stop_signal(fake: FakeOpenAI) -> None:
    fake.reply(Reply.text("Paris, for 3 days please."), Reply.text("Perfect, thanks! </FINISHED>"))
    agent = FakeAgent(planner)
    summary = await play(make_set(scenario_case()), agent, simulator(fake))

    [run] = summary.completed
    assert run.error is None
    # Turn 1 is the starting prompt as written (no model call); turn 2 is the simulator's first reply.
    assert run.queries == ["I want to plan a trip.", "Paris, for 3 days please."]
    assert [r.query for r in agent.requests] == run.queries
    assert [m.content for m in agent.requests[1].history] == ["I want to plan a trip.", "Where to, and for how long?"]
    assert run.simulation is not None
    assert (run.simulation.ended_by, run.simulation.user_turns, run.simulation.max_turns) == ("stop_signal", 2, 20)
    assert run.simulation.last_reply == "Perfect, thanks! </FINISHED>"  # the stop signal matches in any case
    # Two model calls, each 10 in / 5 out tokens at $1 per million tokens.
    usage = run.simulation.usage
    assert usage is not None
    assert (usage.model_requests, usage.model_retries, usage.input_tokens, usage.output_tokens) == (2, 0, 20, 10)
    assert usage.cost_usd == pytest.approx(30 / 1e6)
    # The simulator saw the plan and the conversation so far, with the agent's answer.
    [first, _second] = fake.completions()
    assert first.body is not None
    system, user = first.body["messages"]
    assert system == {"role": "system", "content": SIMULATOR_INSTRUCTIONS.format(stop_signal="</finished>")}
    assert "A 3 day trip to Paris; accept the plan." in user["content"]
    assert "user: I want to plan a trip.\n\nagent: Where to, and for how long?" in user["content"]


async def test_the_turn_limit_stops_a_runaway_conversation(fake: FakeOpenAI) -> None:
    fake.responder = lambda body: Reply.text("Hmm, tell me more.")
    agent = FakeAgent(planner)
    run = await play(make_set(scenario_case()), agent, simulator(fake, max_turns=3))
    [case_run] = run.completed
    assert case_run.error is None
    assert case_run.simulation is not None
    assert (case_run.simulation.ended_by, case_run.simulation.user_turns) == ("turn_limit", 3)
    assert len(agent.requests) == 3
    # The starting prompt costs no call, and the limit is checked before asking: 2 simulator calls for 3 turns.
    assert len(fake.completions()) == 2


async def test_without_a_user_model_only_the_scenario_case_fails(fake: FakeOpenAI) -> None:
    eval_set = make_set(make_case("scripted", "hello"), scenario_case())
    agent = FakeAgent(planner)
    summary = await play(eval_set, agent, simulator(fake, model=None))
    runs = {r.item.case.case_id: r for r in summary.completed}
    assert runs["scripted"].error is None and len(runs["scripted"].outputs) == 1
    error = runs["trip"].error
    assert error is not None and error.kind == "simulator_error"
    assert "no user simulator model is configured: pass --user-model" in error.message
    assert runs["trip"].outputs == [] and fake.completions() == []
    assert runs["trip"].simulation is not None and runs["trip"].simulation.ended_by == "simulator_error"


async def test_a_rate_limited_simulator_is_retried_and_counted(fake: FakeOpenAI) -> None:
    fake.fail_next(429, retry_after_ms="10")
    fake.reply(Reply.text("</finished>"))
    summary = await play(make_set(scenario_case()), FakeAgent(planner), simulator(fake))
    [run] = summary.completed
    assert run.error is None and run.simulation is not None
    assert run.simulation.usage is not None
    assert (run.simulation.usage.model_requests, run.simulation.usage.model_retries) == (2, 1)
    assert [r.status for r in fake.completions()] == [429, 200]


async def test_an_unreachable_or_empty_simulator_is_a_simulator_error(fake: FakeOpenAI) -> None:
    fake.reply(Reply.text("   "))
    summary = await play(make_set(scenario_case()), FakeAgent(planner), simulator(fake))
    [run] = summary.completed
    assert run.error is not None and run.error.kind == "simulator_error"
    assert run.error.message == "the user simulator 'user-model' returned an empty message"
    assert run.error.turn == 1 and len(run.outputs) == 1  # the starting prompt's turn ran

    fake.fail_next(401)
    summary = await play(make_set(scenario_case()), FakeAgent(planner), simulator(fake))
    [run] = summary.completed
    assert run.error is not None and run.error.kind == "simulator_error"
    assert "answered HTTP 401 for the user simulator 'user-model'" in run.error.message


async def test_an_agent_failure_ends_the_conversation(fake: FakeOpenAI) -> None:
    from evalward.runners.agent_contract import AgentFailure

    async def broken(request: AgentRequest) -> AgentOutput:
        if request.turn == 1:
            raise AgentFailure("agent_error", "boom")
        return AgentOutput(response="Where to?")

    fake.reply(Reply.text("Paris."))
    summary = await play(make_set(scenario_case()), FakeAgent(broken), simulator(fake))
    [run] = summary.completed
    assert run.error is not None and (run.error.kind, run.error.turn) == ("agent_error", 1)
    assert run.queries == ["I want to plan a trip.", "Paris."]
    assert run.simulation is not None and run.simulation.ended_by == "agent_error"


def test_custom_instructions_replace_the_prompt_and_fill_adk_placeholders() -> None:
    settings = SimulatorSettings(
        model="m",
        base_url=None,
        api_key_env="K",
        max_turns=5,
        custom_instructions="Plan: {{ conversation_plan }}\nSo far:\n{{conversation_history}}\nStop: {{ stop_signal }}",
        include_function_calls=True,
    )
    turns = [("Go", AgentOutput(response="Done.", tool_calls=[ToolCall(name="book", args={"n": 2}, result="ok")]))]
    [message] = simulator_messages(settings, SCENARIO, turns)
    assert message == {
        "role": "user",
        "content": "Plan: A 3 day trip to Paris; accept the plan.\nSo far:\nuser: Go\n\n"
        "agent called tool 'book' with args {\"n\": 2}\n\ntool 'book' returned ok\n\nagent: Done.\nStop: </finished>",
    }


def test_history_and_stop_signal_rules() -> None:
    output = AgentOutput(response="Final.", tool_calls=[ToolCall(name="t", args={})])
    output.intermediate_responses = []
    assert history_text([("Hi", output)]) == "user: Hi\n\nagent: Final."
    assert has_stop_signal("ok </Finished> bye") and not has_stop_signal("finished")
