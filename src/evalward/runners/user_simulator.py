"""The simulated user of `conversation_scenario` cases: a model behind an OpenAI-compatible endpoint.

Semantics (those of ADK 2.13's `LlmBackedUserSimulator`, evalward's own prompt):
1. The first user message is the scenario's `starting_prompt`, as written, without a model call.
2. Before every later message the turn limit is checked: once `max_turns` user messages were sent (the
   starting prompt counts; -1 = no limit, ADK's default is 20) the conversation ends with `turn_limit`,
   without a model call.
3. Otherwise the model is asked for the next message, given the plan, the persona (if any), the stop signal
   and the conversation so far. A reply that contains the stop signal (`</finished>`, in any case, anywhere)
   ends the conversation with `stop_signal`; that reply is not sent to the agent. An empty reply is a
   `simulator_error`, as ADK raises on one.
The conversation so far, as the simulator sees it: `user: …` for each user message, `<author>: …` for each
sub-agent text (intermediate responses) and `agent: …` for each final response; with
`include_function_calls`, also `agent called tool NAME with args {…}` and `tool NAME returned …` lines.

Custom instructions (ADK's `custom_instructions`) replace the whole prompt: `{{ stop_signal }}`,
`{{ conversation_plan }}`, `{{ conversation_history }}` and `{{ persona }}` are filled in, and the result
is sent as one user message, as ADK sends it.

Requests go through `evalward.openai_requests` (the client retries 408/409/429/5xx and connection errors,
honouring `retry-after`); each reply's tokens, cost (from the judge's price table) and the retries it took
are added to the case's simulation usage and to the run's `usage`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

from evalward.model import STOP_SIGNAL, AgentOutput, ConversationScenario, EvalSet, Usage, UserPersona, canonical_hash
from evalward.model.text import compact_json, fill_template
from evalward.openai_requests import async_openai_client, counting_attempts
from evalward.runners.agent_contract import SimulatorError

if TYPE_CHECKING:
    from openai import AsyncOpenAI

PROMPT_VERSION = 1
"""Bumped whenever the simulator's prompt below changes (it is part of the simulator's identity)."""

SIMULATOR_INSTRUCTIONS = """You are playing the USER of an AI agent, to test that agent. You are never the agent.

Your goals, and the only facts you may share, are in the CONVERSATION PLAN. The plan grounds you but is not a script: always react to what the agent said last.

Write only the user's next message: no labels, no quotes, no commentary. To decide what to write:
- The agent asked you something: answer from the plan. If the plan does not say, tell the agent you do not know; never make facts up. Do not move on to your next request yet.
- The agent finished your current request: make your next request of the plan, skipping anything already done.
- The plan says to change your current request: change it, in your own words.
- The agent got something wrong or did not do what you asked: say so and ask it to try again (once).
- End the conversation when the agent has done everything in the plan, when it has failed a request twice, when it says it cannot undo a wrong action, or when it hands you over to a human. To end it, write {stop_signal} and nothing else. Never end it earlier."""
"""The simulator's system message (evalward's wording of ADK's documented behaviour)."""

PERSONA_INSTRUCTIONS = """
PERSONA (how you behave; when it disagrees with the plan, follow the plan):
{persona}"""

SIMULATOR_REQUEST = """CONVERSATION PLAN:
{conversation_plan}

CONVERSATION SO FAR:
{conversation_history}

Write the user's next message, or {stop_signal} to end the conversation."""

Ending = Literal["message", "stop_signal", "turn_limit"]


@dataclass(frozen=True)
class SimulatorSettings:
    """Where the simulated user of one eval set runs and how it plays."""

    model: str | None
    """None: no simulator model configured (scenario cases of the set fail with a `simulator_error`)."""
    base_url: str | None
    api_key_env: str
    max_turns: int
    """User messages per conversation, the starting prompt included; -1 = no limit."""
    custom_instructions: str | None = None
    include_function_calls: bool = False
    temperature: float | None = None
    timeout_s: float = 120.0
    max_retries: int = 4

    @property
    def limit(self) -> int | None:
        """The turn limit, None when there is none."""
        return None if self.max_turns < 0 else self.max_turns

    def identity(self) -> dict[str, Any]:
        """What the run's fingerprint records about the simulator (no secrets)."""
        return {
            "model": self.model,
            "max_turns": self.max_turns,
            "prompt": canonical_hash(
                {
                    "version": PROMPT_VERSION,
                    "instructions": self.custom_instructions or [SIMULATOR_INSTRUCTIONS, SIMULATOR_REQUEST],
                    "function_calls": self.include_function_calls,
                    "temperature": self.temperature,
                }
            )[:16],
        }


@dataclass(frozen=True)
class NextMessage:
    """The simulator's answer: a message to send, or why the conversation ends."""

    ending: Ending
    text: str | None = None
    """The message (`message`), or the reply that carried the stop signal (`stop_signal`)."""
    usage: Usage | None = None
    """The model call behind it (None when none was made)."""


def persona_text(persona: UserPersona) -> str:
    """A persona as the simulator and its judge read it: description, then each behaviour with its rules."""
    lines = [persona.description]
    for behavior in persona.behaviors:
        lines.append(f"- {behavior.name}: {behavior.description}")
        lines.extend(f"  * {instruction}" for instruction in behavior.behavior_instructions)
    return "\n".join(lines)


def history_text(turns: Sequence[tuple[str, AgentOutput]], *, include_function_calls: bool = False) -> str:
    """The conversation so far as the simulator sees it (module docstring)."""
    lines: list[str] = []
    for query, output in turns:
        lines.append(f"user: {query}")
        if include_function_calls:
            for call in output.tool_calls:
                lines.append(f"{call.agent or 'agent'} called tool {call.name!r} with args {compact_json(call.args)}")
                if call.result is not None:
                    result = call.result if isinstance(call.result, str) else compact_json(call.result)
                    lines.append(f"tool {call.name!r} returned {result}")
        lines.extend(f"{r.author}: {r.text}" for r in output.intermediate_responses if r.text)
        if output.response:
            lines.append(f"agent: {output.response}")
    return "\n\n".join(lines)


def simulator_messages(
    settings: SimulatorSettings, scenario: ConversationScenario, turns: Sequence[tuple[str, AgentOutput]]
) -> list[dict[str, str]]:
    """The request for the next user message (module docstring)."""
    history = history_text(turns, include_function_calls=settings.include_function_calls)
    persona = persona_text(scenario.user_persona) if scenario.user_persona is not None else ""
    values = {
        "stop_signal": STOP_SIGNAL,
        "conversation_plan": scenario.conversation_plan,
        "conversation_history": history,
        "persona": persona,
    }
    if settings.custom_instructions is not None:
        return [{"role": "user", "content": fill_template(settings.custom_instructions, values)}]
    system = SIMULATOR_INSTRUCTIONS.format(stop_signal=STOP_SIGNAL)
    if persona:
        system += PERSONA_INSTRUCTIONS.format(persona=persona)
    return [{"role": "system", "content": system}, {"role": "user", "content": SIMULATOR_REQUEST.format(**values)}]


def has_stop_signal(text: str) -> bool:
    """ADK's test: the stop signal anywhere in the reply, ignoring case."""
    return STOP_SIGNAL.lower() in text.lower()


class UserSimulator:
    """The simulated users of one run: one `openai` client per endpoint, and the run's simulator usage.

    `settings(eval_set)` gives the simulator settings of a set (its test_config's `user_simulator_config`
    merged with the run's options); `price(model, input_tokens, output_tokens)` a call's cost in USD (None:
    unpriced)."""

    def __init__(
        self,
        settings: Callable[[EvalSet], SimulatorSettings],
        *,
        environ: Mapping[str, str],
        price: Callable[[str, int, int], float | None] | None = None,
    ) -> None:
        self.settings_for = settings
        self._environ = environ
        self._price = price
        self._clients: dict[tuple[str | None, str, float, int], AsyncOpenAI] = {}
        self.usage = Usage(input_tokens=0, output_tokens=0, model_requests=0, model_retries=0)
        self.replies = 0

    def _client(self, settings: SimulatorSettings) -> AsyncOpenAI:
        key = (settings.base_url, settings.api_key_env, settings.timeout_s, settings.max_retries)
        if key not in self._clients:
            self._clients[key] = async_openai_client(
                base_url=settings.base_url,
                api_key=self._environ.get(settings.api_key_env),
                timeout_s=settings.timeout_s,
                max_retries=settings.max_retries,
            )
        return self._clients[key]

    async def next_message(
        self, settings: SimulatorSettings, scenario: ConversationScenario, turns: Sequence[tuple[str, AgentOutput]]
    ) -> NextMessage:
        """The next user message after `turns` (the messages sent so far, with the agent's outputs)."""
        if not turns:
            return NextMessage("message", scenario.starting_prompt)
        if settings.max_turns >= 0 and len(turns) >= settings.max_turns:
            return NextMessage("turn_limit")
        if settings.model is None:
            raise SimulatorError("no user simulator model is configured")
        text, usage = await self._ask(settings, simulator_messages(settings, scenario, turns))
        if has_stop_signal(text):
            return NextMessage("stop_signal", text, usage)
        if not text.strip():
            raise SimulatorError(f"the user simulator {settings.model!r} returned an empty message")
        return NextMessage("message", text.strip(), usage)

    async def _ask(self, settings: SimulatorSettings, messages: list[dict[str, str]]) -> tuple[str, Usage]:
        import openai

        assert settings.model is not None
        where = settings.base_url or "the OpenAI API (api.openai.com)"
        kwargs: dict[str, Any] = {}
        if settings.temperature is not None:
            kwargs["temperature"] = settings.temperature
        with counting_attempts() as attempts:
            try:
                response = await self._client(settings).chat.completions.create(
                    model=settings.model, messages=cast(Any, messages), **kwargs
                )
            except openai.APIStatusError as exc:
                raise SimulatorError(
                    f"{where} answered HTTP {exc.status_code} for the user simulator {settings.model!r}: "
                    f"{exc.message}{_after(attempts.retries)}"
                ) from exc
            except openai.APIConnectionError as exc:
                raise SimulatorError(f"cannot reach {where}: {exc}{_after(attempts.retries)}") from exc
            finally:
                sent = max(1, attempts.requests)
                self.usage = self.usage.plus(Usage(model_requests=sent, model_retries=sent - 1))
        choices = response.choices or []
        content = choices[0].message.content if choices else None
        counted = getattr(response, "usage", None)
        input_tokens = int(getattr(counted, "prompt_tokens", 0) or 0)
        output_tokens = int(getattr(counted, "completion_tokens", 0) or 0)
        cost = self._price(settings.model, input_tokens, output_tokens) if self._price is not None else None
        usage = Usage(
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cost_usd=cost,
            model_requests=max(1, attempts.requests),
            model_retries=attempts.retries,
        )
        self.usage = self.usage.plus(Usage(input_tokens=input_tokens, output_tokens=output_tokens, cost_usd=cost))
        self.replies += 1
        return content or "", usage

    def describe(self) -> str:
        """`user simulator: 6 replies, 7 requests, 1 retry, 300 in / 60 out tokens, $0.0001`."""
        usage = self.usage
        text = f"user simulator: {self.replies} replies, {usage.model_requests or 0} requests"
        if usage.model_retries:
            text += f", {usage.model_retries} retries"
        text += f", {usage.input_tokens or 0:,} in / {usage.output_tokens or 0:,} out tokens"
        if usage.cost_usd is not None:
            text += f", ${usage.cost_usd:.4f}"
        return text

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.close()
        self._clients.clear()


def _after(retries: int) -> str:
    return f" (after {retries} retries)" if retries else ""
