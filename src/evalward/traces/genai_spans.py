"""What a GenAI span stands for, across dialects, and the names it carries.

Spans are classified by their operation (never by one framework's span names alone; docs/metrics.md §11):

| operation | recognised from (first that applies) |
| --- | --- |
| `execute_tool` | `gen_ai.operation.name = execute_tool`; Logfire `running tool` spans; OpenInference `openinference.span.kind = TOOL`; Vercel AI SDK `ai.toolCall`; a span name starting `execute_tool` |
| `invoke_agent` | `gen_ai.operation.name = invoke_agent` (also `create_agent` is *not* an invocation); OpenInference `AGENT`; a span name starting `invoke_agent` |
| `chat` | `gen_ai.operation.name` in `chat`, `generate_content`, `text_completion`; OpenInference `LLM`; span names `chat …`, `call_llm` |
| excluded | Logfire output functions (`logfire.msg` starting "running output function"), deferred pydantic-ai calls (`pydantic_ai.tool.deferral.name`), ADK's `(merged tools)` summary spans |

`agent_name` and `tool_name` read the names a span carries; `first` and `decode_json` read its attribute
values.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Literal

from evalward.traces.otlp import Span

Operation = Literal["invoke_agent", "execute_tool", "chat", "invoke_workflow", "excluded", "other"]

_CHAT_OPERATIONS = {"chat", "generate_content", "text_completion", "completion"}

TOOL_NAME_KEYS = ("gen_ai.tool.name", "tool.name", "ai.toolCall.name")


def operation(span: Span) -> Operation:
    """The GenAI operation a span stands for (table in the module docstring)."""
    attrs = span.attributes
    message = str(attrs.get("logfire.msg", ""))
    if message.startswith("running output function") or "pydantic_ai.tool.deferral.name" in attrs:
        return "excluded"
    op = str(attrs.get("gen_ai.operation.name", "")).strip().lower()
    if op == "execute_tool":
        return "excluded" if first(attrs, TOOL_NAME_KEYS) == "(merged tools)" else "execute_tool"
    if op == "invoke_agent":
        return "invoke_agent"
    if op == "invoke_workflow":
        return "invoke_workflow"
    if op in _CHAT_OPERATIONS:
        return "chat"
    kind = str(attrs.get("openinference.span.kind", "")).upper()
    if kind == "TOOL":
        return "execute_tool"
    if kind == "AGENT":
        return "invoke_agent"
    if kind == "LLM":
        return "chat"
    name = span.name
    if name == "running tool" or message.startswith("running tool") or name == "ai.toolCall":
        return "execute_tool"
    if attrs.get("ai.operationId") == "ai.toolCall":
        return "execute_tool"
    if name.startswith("execute_tool"):
        return "excluded" if name.endswith("(merged tools)") else "execute_tool"
    if name.startswith("invoke_agent"):
        return "invoke_agent"
    if name.startswith(("chat ", "generate_content")) or name in ("chat", "call_llm"):
        return "chat"
    return "other"


def first(attrs: dict[str, Any], keys: Iterable[str]) -> Any:
    """The value of the first key present (and not None) in `attrs`."""
    for key in keys:
        value = attrs.get(key)
        if value is not None:
            return value
    return None


def decode_json(value: Any) -> Any:
    """`value` decoded when it is a JSON string (or bytes), else as it is."""
    if isinstance(value, str | bytes):
        try:
            return json.loads(value)
        except (json.JSONDecodeError, ValueError):
            return value
    return value


def agent_name(span: Span) -> str:
    """`gen_ai.agent.name` (or OpenInference `agent.name`), else the span name after `invoke_agent `."""
    named = first(span.attributes, ("gen_ai.agent.name", "agent.name"))
    if named:
        return str(named)
    return span.name.removeprefix("invoke_agent").strip() or span.name


def tool_name(span: Span) -> str:
    named = first(span.attributes, TOOL_NAME_KEYS)
    if named:
        return str(named)
    return span.name.removeprefix("execute_tool").strip() or span.name
