"""The messages a GenAI span received and produced, in every dialect (docs/metrics.md §11).

Where a span's messages are, the first that applies (input and output alike):
1. `gen_ai.input.messages` / `gen_ai.output.messages` (GenAI conventions 1.37+: openai-v2 `span_only`,
   OpenLLMetry 0.47+, pydantic-ai, ADK);
2. flattened attributes (`genai_flattened`): pre-1.37 `gen_ai.prompt.N.*` / `gen_ai.completion.N.*`, then
   OpenInference `llm.input_messages.N.message.*` / `llm.output_messages.N.message.*`;
3. events of the span, or log records attached to it (`genai_events`): `gen_ai.*.message`,
   `gen_ai.choice`, `gen_ai.client.inference.operation.details`;
4. ADK's `gcp.vertex.agent.llm_request` (its `contents`) and `gcp.vertex.agent.llm_response`;
5. OpenInference `input.value` / `output.value` of an agent or chat span: plain text, or the JSON of the
   request (`{messages: [...]}`) and of the response (`{choices: [{message, finish_reason}]}`).

A message itself is read in every shape seen in the wild: the 1.37+ JSON (`{role, parts: [{type: text,
content} | {type: tool_call, id, name, arguments} | {type: tool_call_response, id, response}],
finish_reason}`), OpenAI-style `{role, content, tool_calls, tool_call_id}`, a `{message, finish_reason}`
choice, ADK's `function_call` / `function_response` parts. It is reduced to what the turns need: its role,
its text (thoughts left out), the tool calls it requests (id, name, arguments), the tool results it carries
(id, result) and its finish reason. A tool result recorded without its call id (OpenLLMetry's events)
answers the calls of the assistant message before it, in order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evalward.traces.genai_events import event_input_messages, event_output_messages
from evalward.traces.genai_flattened import (
    OPENINFERENCE_INPUT,
    OPENINFERENCE_OUTPUT,
    openinference_messages,
    pre_137_messages,
)
from evalward.traces.genai_spans import decode_json, operation
from evalward.traces.otlp import Span


@dataclass(frozen=True)
class SpanMessage:
    """One message of a span, in any of the shapes of the module docstring."""

    role: str
    text: str
    tool_calls: tuple[tuple[str | None, str, Any], ...] = ()
    tool_results: tuple[tuple[str | None, Any], ...] = ()
    finish_reason: str | None = None


def _text_of(content: Any) -> str:
    """Text of a message `content`: a string, or the text parts of a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and part.get("type", "text") == "text":
                text = part.get("content", part.get("text"))
                if isinstance(text, str) and text:
                    texts.append(text)
        return "\n".join(texts)
    if isinstance(content, dict):
        return _text_of(content.get("parts", content.get("content")))
    return str(content)


def _message(raw: Any) -> SpanMessage | None:
    """One message in any of the shapes of the module docstring."""
    if not isinstance(raw, dict):
        return None
    if "message" in raw and isinstance(raw["message"], dict):  # pre-1.37 `gen_ai.choice` body
        inner = _message(raw["message"])
        if inner is None:
            return None
        return SpanMessage(inner.role, inner.text, inner.tool_calls, inner.tool_results, raw.get("finish_reason"))
    role = str(raw.get("role") or "assistant")
    if role == "model":
        role = "assistant"
    calls: list[tuple[str | None, str, Any]] = []
    results: list[tuple[str | None, Any]] = []
    texts: list[str] = []
    parts = raw.get("parts")
    if isinstance(parts, list):
        for part in parts:
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            if kind == "tool_call":
                calls.append((part.get("id"), str(part.get("name", "")), decode_json(part.get("arguments"))))
            elif kind == "tool_call_response":
                results.append((part.get("id"), decode_json(part.get("response", part.get("result")))))
            elif "function_call" in part and isinstance(part["function_call"], dict):  # ADK / genai parts
                fc = part["function_call"]
                calls.append((fc.get("id"), str(fc.get("name", "")), fc.get("args")))
            elif "function_response" in part and isinstance(part["function_response"], dict):
                fr = part["function_response"]
                results.append((fr.get("id"), fr.get("response")))
            elif kind in (None, "text"):
                text = part.get("content", part.get("text"))
                if isinstance(text, str) and text and not part.get("thought"):
                    texts.append(text)
    else:
        texts.append(_text_of(raw.get("content")))
    for call in raw.get("tool_calls") or []:
        if isinstance(call, dict):
            inner = call.get("function")
            function: dict[str, Any] = inner if isinstance(inner, dict) else call
            calls.append((call.get("id"), str(function.get("name", "")), decode_json(function.get("arguments"))))
    if role == "tool" and not isinstance(parts, list):  # OpenAI-style: the result is the content
        results.append((raw.get("tool_call_id"), decode_json(raw.get("content"))))
    finish = raw.get("finish_reason")
    return SpanMessage(
        role=role,
        text="\n".join(t for t in texts if t),
        tool_calls=tuple(calls),
        tool_results=tuple(results),
        finish_reason=str(finish).lower() if finish is not None else None,
    )


def _messages_value(value: Any) -> list[SpanMessage]:
    value = decode_json(value)
    if isinstance(value, dict) and isinstance(value.get("messages"), list):  # an OpenAI request body
        value = value["messages"]
    elif isinstance(value, dict) and isinstance(value.get("choices"), list):  # an OpenAI response body
        value = [c for c in value["choices"] if isinstance(c, dict)]
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        return [] if value is None else [SpanMessage(role="assistant", text=str(value))]
    return _paired([m for m in (_message(item) for item in value) if m is not None])


def _paired(messages: list[SpanMessage]) -> list[SpanMessage]:
    """`messages` with each tool result recorded without a call id given the id of the call it answers: the
    next unanswered call of the last assistant message that requested calls (the order the API requires)."""
    if not any(call_id is None for m in messages for call_id, _ in m.tool_results):
        return messages
    paired: list[SpanMessage] = []
    pending: list[str | None] = []
    for message in messages:
        if message.tool_calls:
            pending = [call_id for call_id, _, _ in message.tool_calls]
        results = []
        for call_id, result in message.tool_results:
            if call_id is None and pending:
                call_id = pending.pop(0)
            elif call_id in pending:
                pending.remove(call_id)
            results.append((call_id, result))
        paired.append(dataclasses.replace(message, tool_results=tuple(results)))
    return paired


def output_messages(span: Span) -> list[SpanMessage]:
    """What the span produced, in the first place that has it (module docstring)."""
    attrs = span.attributes
    if "gen_ai.output.messages" in attrs:
        return _messages_value(attrs["gen_ai.output.messages"])
    for flattened in (
        pre_137_messages(attrs, "gen_ai.completion"),
        openinference_messages(attrs, OPENINFERENCE_OUTPUT),
    ):
        if flattened:
            return _messages_value(flattened)
    from_events = event_output_messages(span.events)
    if from_events is not None:
        return _messages_value(from_events)
    llm_response = attrs.get("gcp.vertex.agent.llm_response")
    if llm_response is not None:
        decoded = decode_json(llm_response)
        if isinstance(decoded, dict) and isinstance(decoded.get("content"), dict):
            message = _message({**decoded["content"], "finish_reason": decoded.get("finish_reason")})
            return [message] if message is not None else []
        return []
    if "output.value" in attrs and operation(span) in ("invoke_agent", "chat"):
        return _messages_value(attrs["output.value"])
    return []


def input_messages(span: Span) -> list[SpanMessage]:
    """What the span received, in the first place that has it (module docstring)."""
    attrs = span.attributes
    if "gen_ai.input.messages" in attrs:
        return _messages_value(attrs["gen_ai.input.messages"])
    for flattened in (pre_137_messages(attrs, "gen_ai.prompt"), openinference_messages(attrs, OPENINFERENCE_INPUT)):
        if flattened:
            return _messages_value(flattened)
    from_events = event_input_messages(span.events)
    if from_events is not None:
        return _messages_value(from_events)
    llm_request = decode_json(attrs.get("gcp.vertex.agent.llm_request"))
    if isinstance(llm_request, dict) and isinstance(llm_request.get("contents"), list):
        return _messages_value(llm_request["contents"])
    if "input.value" in attrs and operation(span) in ("invoke_agent", "chat"):
        return _messages_value(attrs["input.value"])
    return []


def last_assistant_text(messages: Sequence[SpanMessage]) -> str | None:
    for message in reversed(messages):
        if message.role == "assistant" and message.text:
            return message.text
    return None


def last_user_text(messages: Sequence[SpanMessage]) -> str | None:
    for message in reversed(messages):
        if message.role == "user" and message.text:
            return message.text
    return None
