"""The teacher-forcing driver: ask the agent for its next action after each reference prefix.

For one turn with a reference trajectory of m steps, teacher-forced step j (j = 1 … m+1) sends the agent
an `AgentRequest` with `next_action_only = true` whose `history` is
    earlier turns (as the normal run built them) + the turn's input messages (the reference's leading
    system/user messages, or the user query) + the reference prefix r_1, o_1, …, r_{j−1}, o_{j−1}
(assistant tool calls, then the recorded tool results) and records what the agent answered. Steps run one
after another. A failure at a step is recorded with its message (the step then scores 0, see
`metrics.stepwise`); a retryable failure (429, 5xx, the agent's own `retryable`) is retried up to
`max_retries` times after `evalward.backoff.backoff_wait` (base `backoff_s`) or the agent's `retry-after`,
whichever is longer.
Agents that ignore `next_action_only` and run to the end still work: the scorer takes their first step.
Scoring lives in `evalward.metrics.stepwise`; this module only talks to the agent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

from evalward.backoff import backoff_wait
from evalward.model import AgentOutput, AgentRequest, EvalCase, Message
from evalward.runners.agent_contract import Agent, AgentFailure
from evalward.runners.conversation import Conversation


@dataclass(frozen=True)
class StepAttempt:
    """The agent's answer at teacher-forced step `step` (1-based), or why there is none."""

    step: int
    output: AgentOutput | None
    error: str | None = None


async def teacher_forced_steps(
    agent: Agent,
    base: AgentRequest,
    lead: Sequence[Message],
    prefixes: Sequence[Sequence[Message]],
    *,
    timeout_s: float | None = None,
    max_retries: int = 2,
    backoff_s: float = 0.5,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> list[StepAttempt]:
    """One `StepAttempt` per prefix: `prefixes[j-1]` is the reference prefix of step j (module docstring).

    `base` is the turn's normal request (its `history` holds the earlier turns); `lead` the turn's input
    messages (normally the user's message).
    """
    attempts: list[StepAttempt] = []
    for j, prefix in enumerate(prefixes, start=1):
        request = base.model_copy(
            update={"history": [*base.history, *lead, *prefix], "next_action_only": True}, deep=True
        )
        retries = 0
        while True:
            try:
                async with asyncio.timeout(timeout_s):
                    output = await agent.run_turn(request)
                attempts.append(StepAttempt(step=j, output=output))
                break
            except TimeoutError:
                attempts.append(StepAttempt(step=j, output=None, error=f"no answer within {timeout_s:g}s"))
                break
            except AgentFailure as exc:
                if not exc.retryable or retries >= max_retries:
                    attempts.append(StepAttempt(step=j, output=None, error=f"{exc.kind}: {exc.message}"))
                    break
                retries += 1
                await sleep(backoff_wait(retries, base_s=backoff_s, retry_after_s=exc.retry_after_s))
            except Exception as exc:  # a runner bug is still data for this step, not a dead run
                attempts.append(
                    StepAttempt(step=j, output=None, error=f"the runner failed: {type(exc).__name__}: {exc}")
                )
                break
    return attempts


class AgentTeacher:
    """The agent under test as teacher forcing's `metrics.scoring_context.Teacher` for one case × repetition: turn t's
    request is the one the run sent (`runners.conversation`, in a session of its own), its history the turns
    before as the agent answered them in the run."""

    def __init__(
        self,
        agent: Agent,
        eval_set_id: str,
        case: EvalCase,
        repetition: int,
        outputs: Sequence[AgentOutput],
        *,
        timeout_s: float | None,
        max_retries: int,
    ) -> None:
        self._agent = agent
        self._eval_set_id = eval_set_id
        self._case = case
        self._repetition = repetition
        self._outputs = outputs
        self._timeout_s = timeout_s
        self._max_retries = max_retries
        self._requests: list[AgentRequest] = []

    @cached_property
    def _conversation(self) -> Conversation:
        # Built on the first step asked: every case gets a teacher, few have reference messages.
        return Conversation.of(self._eval_set_id, self._case, self._repetition, "teacher-forcing")

    def request(self, turn: int) -> AgentRequest:
        """Turn `turn`'s request (turns are built in order, each after the one before was answered)."""
        while len(self._requests) <= turn:
            built = len(self._requests)
            if built:
                self._conversation.answered(self._requests[built - 1], self._outputs[built - 1])
            invocation = self._case.turns[built]
            self._requests.append(self._conversation.request(built, invocation.query, invocation.inputs))
        return self._requests[turn]

    async def next_actions(
        self, turn: int, lead: Sequence[Message], prefixes: Sequence[Sequence[Message]]
    ) -> list[StepAttempt]:
        return await teacher_forced_steps(
            self._agent,
            self.request(turn),
            lead,
            prefixes,
            timeout_s=self._timeout_s,
            max_retries=self._max_retries,
        )
