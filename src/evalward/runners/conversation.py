"""One case's conversation as the agent sees it, turn by turn: the session (id and initial state), and the
history of the turns before (user message, assistant tool calls, tool results, final answer).

The one place an `AgentRequest` for a turn is built: the executor plays a case through it (scripted turns
and simulated users alike), and teacher-forced stepwise scoring replays the same turns through it, so the
agent sees the same requests in both."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from evalward.model import AgentOutput, AgentRequest, Message

if TYPE_CHECKING:
    from evalward.model import EvalCase


class Conversation:
    """The requests of one case × repetition's turns, each with the history of the turns answered before."""

    def __init__(self, case: EvalCase, repetition: int, session_id: str) -> None:
        self.case_id = case.case_id
        self.repetition = repetition
        self.session_id = session_id
        self.session_state: dict[str, Any] = dict(case.session_input.state) if case.session_input is not None else {}
        self.history: list[Message] = []

    @classmethod
    def of(cls, eval_set_id: str, case: EvalCase, repetition: int, run_label: str) -> Conversation:
        """A conversation whose session id is unique per case, repetition and `run_label` (a run's nonce, or
        what replays it) and stable across its turns."""
        return cls(case, repetition, f"{eval_set_id}/{case.case_id}/r{repetition}/{run_label}")

    def request(self, turn: int, query: str, inputs: dict[str, Any] | None = None) -> AgentRequest:
        """The request for turn `turn` (0-based): `query` and `inputs`, and the history so far (a copy)."""
        extra: dict[str, Any] = {} if inputs is None else {"inputs": inputs}
        return AgentRequest(
            case_id=self.case_id,
            turn=turn,
            query=query,
            history=list(self.history),
            session_id=self.session_id,
            session_state=self.session_state,
            repetition=self.repetition,
            **extra,
        )

    def answered(self, request: AgentRequest, output: AgentOutput) -> None:
        """Add the turn `request` → `output` to the history the next turns see."""
        self.history.extend(history_messages(request, output))


def history_messages(request: AgentRequest, output: AgentOutput) -> list[Message]:
    """One completed turn as OpenAI-shaped messages: user, assistant tool calls, tool results, final answer."""
    messages = [Message(role="user", content=request.query)]
    if output.tool_calls:
        calls = [
            call.model_copy(update={"id": call.id or f"call_{request.turn}_{index}", "result": None})
            for index, call in enumerate(output.tool_calls)
        ]
        messages.append(Message(role="assistant", content=None, tool_calls=calls))
        for call, original in zip(calls, output.tool_calls, strict=True):
            result = original.result
            content = None if result is None else result if isinstance(result, str) else _to_json(result)
            messages.append(Message(role="tool", tool_call_id=call.id, name=call.name, content=content))
    messages.append(Message(role="assistant", content=output.response))
    return messages


def _to_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
