"""The messages a GenAI span received and produced, in every dialect (docs/metrics.md §11).

Messages are read in every shape seen in the wild: the 1.37+ JSON (`[{role, parts: [{type: text,
content} | {type: tool_call, id, name, arguments}], finish_reason}]`), OpenAI-style `{role, content,
tool_calls}`, the flattened pre-1.37 `gen_ai.prompt.N.*` / `gen_ai.completion.N.*` attributes, the
`gen_ai.choice` span events, ADK's `gcp.vertex.agent.llm_response` and OpenInference `output.value`.

A message is reduced to what the turns need: its role, its text (thoughts left out), the tool calls it
requests (id, name, arguments), the tool results it carries (id, result) and its finish reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evalward.traces.genai_spans import decode_json, first, operation
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
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        return [] if value is None else [SpanMessage(role="assistant", text=str(value))]
    return [m for m in (_message(item) for item in value) if m is not None]


def _flattened(attrs: dict[str, Any], prefix: str) -> list[SpanMessage]:
    """The pre-1.37 flattened form: `gen_ai.completion.0.role`, `gen_ai.completion.0.content`, …"""
    found: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        if not key.startswith(prefix + "."):
            continue
        index_text, _, rest = key[len(prefix) + 1 :].partition(".")
        if index_text.isdigit() and rest:
            found.setdefault(int(index_text), {})[rest] = value
    messages = []
    for index in sorted(found):
        fields = found[index]
        calls = []
        call_indexes = sorted({int(k.split(".")[1]) for k in fields if k.startswith("tool_calls.")})
        for ci in call_indexes:
            calls.append(
                (
                    fields.get(f"tool_calls.{ci}.id"),
                    str(fields.get(f"tool_calls.{ci}.name", "")),
                    decode_json(fields.get(f"tool_calls.{ci}.arguments")),
                )
            )
        finish = fields.get("finish_reason")
        messages.append(
            SpanMessage(
                role=str(fields.get("role", "assistant")),
                text=_text_of(fields.get("content")),
                tool_calls=tuple(calls),
                finish_reason=str(finish).lower() if finish is not None else None,
            )
        )
    return messages


def output_messages(span: Span) -> list[SpanMessage]:
    """What the span produced, in the first dialect that has it."""
    attrs = span.attributes
    if "gen_ai.output.messages" in attrs:
        return _messages_value(attrs["gen_ai.output.messages"])
    flattened = _flattened(attrs, "gen_ai.completion")
    if flattened:
        return flattened
    choices = [e for e in span.events if e.name == "gen_ai.choice"]
    if choices:
        messages: list[SpanMessage] = []
        for event in choices:
            body = first(event.attributes, ("gen_ai.event.content", "body", "event.body"))
            if body is None:
                body = {k: v for k, v in event.attributes.items() if k in ("message", "finish_reason", "index")}
            messages.extend(_messages_value(body))
        return messages
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
    attrs = span.attributes
    if "gen_ai.input.messages" in attrs:
        return _messages_value(attrs["gen_ai.input.messages"])
    flattened = _flattened(attrs, "gen_ai.prompt")
    if flattened:
        return flattened
    users = [e for e in span.events if e.name == "gen_ai.user.message"]
    if users:
        return [SpanMessage(role="user", text=_text_of(e.attributes.get("content"))) for e in users]
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
