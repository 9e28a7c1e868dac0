"""Messages recorded as events of a span: span events, or log records attached to it (`traces.span_logs`).

Three shapes, each found by its event name:
- one event per input message, `gen_ai.system.message`, `gen_ai.user.message`, `gen_ai.assistant.message`,
  `gen_ai.tool.message` (`opentelemetry-instrumentation-openai-v2` by default, OpenLLMetry with
  `use_attributes=False`): the body is `{content, tool_calls: [{id, type, function: {name, arguments}}]}`,
  a tool message's call id is `id`; OpenLLMetry leaves the id out, so such a result answers the assistant's
  calls in order (`genai_messages`);
- one `gen_ai.choice` event per output choice: `{index, finish_reason, message: {role, content,
  tool_calls}}` (OpenLLMetry puts `tool_calls` beside `message`);
- one `gen_ai.client.inference.operation.details` event per call (openai-v2's `event_only` and
  `span_and_event` modes), whose attributes `gen_ai.input.messages` and `gen_ai.output.messages` hold the
  1.37+ messages.
A span event (not a log record) has no body: its attributes stand for it (older SDKs put the body in
`gen_ai.event.content`, `body` or `event.body`, JSON-encoded).

The readers give the messages as dicts for `genai_messages` to read, or None when the events hold no
messages of that side.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evalward.traces.genai_spans import decode_json, first
from evalward.traces.otlp import SpanEvent

OPERATION_DETAILS = "gen_ai.client.inference.operation.details"
CHOICE = "gen_ai.choice"
MESSAGE_EVENTS = {f"gen_ai.{role}.message": role for role in ("system", "user", "assistant", "tool")}
_BODY_ATTRIBUTES = ("gen_ai.event.content", "body", "event.body")


def event_body(event: SpanEvent) -> Any:
    """What the event says: the body of a log record, else the encoded body a span event carries in an
    attribute, else its attributes."""
    if event.body is not None:
        return decode_json(event.body)
    encoded = first(event.attributes, _BODY_ATTRIBUTES)
    if encoded is not None:
        return decode_json(encoded)
    return event.attributes


def event_input_messages(events: Sequence[SpanEvent]) -> list[Any] | None:
    """The input messages the events record, or None when they record none."""
    details = _details(events, "gen_ai.input.messages")
    if details is not None:
        return details
    messages: list[Any] = []
    for event in events:
        role = MESSAGE_EVENTS.get(event.name)
        if role is None:
            continue
        body = event_body(event)
        body = body if isinstance(body, dict) else {"content": body}
        message: dict[str, Any] = {"role": body.get("role") or role, "content": body.get("content")}
        if isinstance(body.get("tool_calls"), list):
            message["tool_calls"] = body["tool_calls"]
        if role == "tool":
            message["tool_call_id"] = body.get("id", body.get("tool_call_id"))
        messages.append(message)
    return messages or None


def event_output_messages(events: Sequence[SpanEvent]) -> list[Any] | None:
    """The output messages the events record, or None when they record none."""
    details = _details(events, "gen_ai.output.messages")
    if details is not None:
        return details
    messages: list[Any] = []
    for event in events:
        if event.name != CHOICE:
            continue
        body = event_body(event)
        if not isinstance(body, dict):
            continue
        inner = body.get("message")
        message = dict(inner) if isinstance(inner, dict) else {}
        if isinstance(body.get("tool_calls"), list) and "tool_calls" not in message:
            message["tool_calls"] = body["tool_calls"]  # OpenLLMetry's place for them
        messages.append({"message": message, "finish_reason": body.get("finish_reason")})
    return messages or None


def _details(events: Sequence[SpanEvent], key: str) -> list[Any] | None:
    for event in events:
        if event.name == OPERATION_DETAILS and key in event.attributes:
            value = decode_json(event.attributes[key])
            return value if isinstance(value, list) else [value]
    return None
