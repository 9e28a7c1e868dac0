"""LangChain messages as recorded in datasets → evalward `Message`s (reference trajectories, guide 001).

Accepted shapes, per message:
1. `dumpd` / LangSmith serialisation: `{"lc": 1, "type": "constructor", "id": [..., "AIMessage"], "kwargs": {...}}`;
2. `messages_to_dict`: `{"type": "ai", "data": {...}}`;
3. flat: `{"type": "ai", "content": ..., ...}` (evalward's own state dumps, `to_json`);
4. OpenAI: `{"role": "assistant", ...}`.
Roles: Human/human/user → `user`, AI/ai/assistant → `assistant`, Tool/tool → `tool`, System/system → `system`.
An AI message's calls come from `tool_calls` (LangChain `{name, args, id}` or OpenAI `{id, function: {name,
arguments}}`), else from `additional_kwargs.tool_calls` (OpenAI shape, as guide 001 records them); `arguments`
is a JSON text. Content given as parts keeps their text, joined. A tool message keeps `tool_call_id` and
`name` (also read from `additional_kwargs.name`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from evalward.model import Message, ToolCall

Role = Literal["system", "user", "assistant", "tool"]

_ROLES: dict[str, Role] = {
    "human": "user",
    "humanmessage": "user",
    "user": "user",
    "ai": "assistant",
    "aimessage": "assistant",
    "assistant": "assistant",
    "tool": "tool",
    "toolmessage": "tool",
    "system": "system",
    "systemmessage": "system",
}


def looks_like_messages(value: Any) -> bool:
    """A non-empty list whose items are all message objects in one of the shapes above."""
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(m, Mapping) and ("lc" in m or "type" in m or "role" in m) for m in value)
    )


def _fields(raw: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    if raw.get("lc") is not None and isinstance(raw.get("id"), list) and raw["id"]:
        kwargs = raw.get("kwargs")
        return str(raw["id"][-1]), kwargs if isinstance(kwargs, Mapping) else {}
    if isinstance(raw.get("data"), Mapping) and "type" in raw:
        return str(raw["type"]), raw["data"]
    return str(raw.get("role", raw.get("type", ""))), raw


def _text(content: Any) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part if isinstance(part, str) else str(part.get("text", ""))
            for part in content
            if isinstance(part, str | Mapping)
        )
    return json.dumps(content, ensure_ascii=False)


def _call(raw: Any, where: str) -> ToolCall:
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where}: a tool call must be an object")
    function = raw.get("function")
    if isinstance(function, Mapping):  # OpenAI: {id, function: {name, arguments: "<json>"}}
        name, arguments = function.get("name"), function.get("arguments")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except ValueError:
                raise ValueError(f"{where}: function.arguments is not JSON: {arguments[:60]!r}") from None
    else:  # LangChain: {name, args, id}
        name, arguments = raw.get("name"), raw.get("args", {})
    if not isinstance(name, str) or not name:
        raise ValueError(f"{where}: a tool call needs a name")
    if arguments is not None and not isinstance(arguments, Mapping):
        raise ValueError(f"{where}: the arguments of {name!r} must be an object")
    call_id = raw.get("id")
    return ToolCall(name=name, args=dict(arguments or {}), id=str(call_id) if call_id else None)


def lc_message(raw: Any, where: str = "message") -> Message:
    """One message (module docstring); ValueError saying what is wrong, prefixed with `where`."""
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where}: a message must be an object")
    kind, fields = _fields(raw)
    role = _ROLES.get(kind.lower())
    if role is None:
        raise ValueError(f"{where}: unknown message type {kind!r} (expected human, ai, tool or system messages)")
    extra = fields.get("additional_kwargs")
    extra = extra if isinstance(extra, Mapping) else {}
    calls_raw = fields.get("tool_calls") or extra.get("tool_calls") or []
    if not isinstance(calls_raw, list):
        raise ValueError(f"{where}: tool_calls must be a list")
    calls = [_call(c, f"{where}.tool_calls[{k}]") for k, c in enumerate(calls_raw)] if role == "assistant" else []
    name = fields.get("name") or extra.get("name")
    call_id = fields.get("tool_call_id")
    return Message(
        role=role,
        content=_text(fields.get("content")),
        tool_calls=calls or None,
        tool_call_id=str(call_id) if role == "tool" and call_id else None,
        name=str(name) if name else None,
    )
