"""The teacher-forcing driver on a recorded trajectory (guide 001's Dune example), scored by hand."""

from __future__ import annotations

from tests.fakes.agents import FakeAgent

from evalward.metrics.stepwise import first_step, free_run, parse_reference, step_credit, stepwise_scores
from evalward.model import AgentOutput, AgentRequest, Message, ToolCall
from evalward.runners.agent_contract import AgentFailure
from evalward.runners.teacher_forcing_driver import teacher_forced_steps


def search(query: str, call_id: str | None = None) -> ToolCall:
    return ToolCall(name="search", args={"query": query}, id=call_id)


REFERENCE = [
    Message(role="user", content="What was the age of the director of Dune 2's brother on March 1, 2024?"),
    Message(role="assistant", tool_calls=[search("dune 2 director", "c1")]),
    Message(role="tool", tool_call_id="c1", content='{"results": ["The director is Denis Villeneuve"]}'),
    Message(role="assistant", tool_calls=[search("Denis Villeneuve brother", "c2")]),
    Message(role="tool", tool_call_id="c2", content='{"results": ["His brother is Martin Villeneuve"]}'),
    Message(role="assistant", tool_calls=[search("Martin Villeneuve birthday", "c3")]),
    Message(role="tool", tool_call_id="c3", content='{"results": ["Born March 13th, 1978"]}'),
    Message(role="assistant", content="45"),
]


async def agent_handler(request: AgentRequest) -> AgentOutput:
    """Right on steps 1 and 3, wrong on step 2 (searches the cast), and answers 45 at the end."""
    last = request.history[-1]
    if last.role == "user":
        return AgentOutput(tool_calls=[search("dune 2 director")])
    if "Denis" in (last.content or ""):
        return AgentOutput(tool_calls=[search("Dune 2 cast")])
    if "Martin" in (last.content or ""):
        return AgentOutput(tool_calls=[search("Martin Villeneuve birthday")])
    return AgentOutput(response="45")


async def test_teacher_forcing_on_a_recorded_trajectory() -> None:
    reference = parse_reference(REFERENCE)
    agent = FakeAgent(agent_handler)
    base = AgentRequest(case_id="dune", turn=0, query=REFERENCE[0].content or "", session_id="s")
    prefixes = [reference.prefix(j) for j in range(1, reference.m + 2)]
    attempts = await teacher_forced_steps(agent, base, reference.lead, prefixes)

    # Every step saw the user message and exactly the reference prefix, with next_action_only set.
    assert [len(r.history) for r in agent.requests] == [1, 3, 5, 7]
    assert all(r.next_action_only for r in agent.requests)
    assert agent.requests[2].history[-1].content == '{"results": ["His brother is Martin Villeneuve"]}'

    credits, notes = [], []
    for attempt in attempts:
        j = attempt.step
        assert attempt.output is not None
        size = len(reference.steps[j - 1].calls) if j <= reference.m else 1
        c, note = step_credit(j, reference, first_step(attempt.output, size), lambda r: (r == "45", "45?"))
        credits.append(c)
        notes.append(note)
    assert credits == [1.0, 0.0, 1.0, 1.0]
    scores = stepwise_scores(credits, notes, free_run(AgentOutput(tool_calls=[search("dune 2 director")]), reference))
    # hand calculation: m = 3, N = 4, c = (1, 0, 1, 1) -> 3/4 = 0.75; j* = 2 -> (2 - 1)/4 = 0.25
    assert scores["stepwise_score"].value == 0.75
    assert scores["survived_until"].value == 0.25
    # hand calculation: free run followed r_1 only, then answered: s = 1 of 3 -> 0.333, divergence at 2
    assert round(scores["free_running_survival"].value, 3) == 0.333
    assert scores["divergence_index"].value == 2


async def test_failures_are_recorded_per_step_and_retried_when_retryable() -> None:
    calls = {"n": 0}
    delays: list[float] = []

    async def handler(request: AgentRequest) -> AgentOutput:
        calls["n"] += 1
        if calls["n"] == 1:
            raise AgentFailure("agent_error", "rate limited", retryable=True, retry_after_s=2.0)
        raise AgentFailure("agent_error", "model refused")

    async def sleep(seconds: float) -> None:
        delays.append(seconds)

    base = AgentRequest(case_id="c", turn=0, query="q", session_id="s")
    attempts = await teacher_forced_steps(FakeAgent(handler), base, [], [[]], sleep=sleep)
    assert delays == [2.0]  # retry-after 2 s beats the 0.5 s backoff
    assert attempts[0].output is None
    assert attempts[0].error == "agent_error: model refused"
