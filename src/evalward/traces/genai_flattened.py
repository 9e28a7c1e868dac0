"""Messages flattened into indexed span attributes, as two dialects write them.

- Pre-1.37 GenAI conventions (OpenLLMetry before 0.47, older SDKs): `gen_ai.prompt.N.role`,
  `gen_ai.prompt.N.content`, `gen_ai.prompt.N.tool_call_id`, `gen_ai.completion.N.tool_calls.M.id` /
  `.name` / `.arguments`, `gen_ai.completion.N.finish_reason`.
- OpenInference (`openinference-instrumentation-openai` and the other `openinference-instrumentation-*`
  packages; names from `openinference.semconv.trace`): `llm.input_messages.N.message.role`,
  `.message.content` (or `.message.contents.K.message_content.type` / `.text` for a list of parts),
  `.message.tool_call_id`, `.message.tool_calls.M.tool_call.id`, `.tool_call.function.name`,
  `.tool_call.function.arguments` (a JSON string), the legacy `.message.function_call_name` /
  `.message.function_call_arguments_json`; `llm.output_messages.N.message.*` likewise. The finish reason
  of the first choice is `llm.finish_reason`, on the span.

Each reader gives the messages as OpenAI-style dicts (`{role, content, tool_calls: [{id, function: {name,
arguments}}], tool_call_id, finish_reason}`), which `genai_messages` reads like any other message; an
empty list when the span has none.
"""

from __future__ import annotations

from typing import Any

OPENINFERENCE_INPUT = "llm.input_messages"
OPENINFERENCE_OUTPUT = "llm.output_messages"
OPENINFERENCE_FINISH_REASON = "llm.finish_reason"


def indexed(attrs: dict[str, Any], prefix: str) -> dict[int, dict[str, Any]]:
    """`prefix.N.rest = value` attributes as {N: {rest: value}}, N ascending."""
    found: dict[int, dict[str, Any]] = {}
    start = prefix + "."
    for key, value in attrs.items():
        if not key.startswith(start):
            continue
        index_text, _, rest = key[len(start) :].partition(".")
        if index_text.isdigit() and rest:
            found.setdefault(int(index_text), {})[rest] = value
    return dict(sorted(found.items()))


def pre_137_messages(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """The pre-1.37 form under `prefix` (`gen_ai.prompt` or `gen_ai.completion`)."""
    messages: list[dict[str, Any]] = []
    for fields in indexed(attrs, prefix).values():
        calls = [
            {"id": call.get("id"), "function": {"name": call.get("name", ""), "arguments": call.get("arguments")}}
            for call in indexed(fields, "tool_calls").values()
        ]
        messages.append(
            {
                "role": fields.get("role", "assistant"),
                "content": fields.get("content"),
                "tool_calls": calls,
                "tool_call_id": fields.get("tool_call_id"),
                "finish_reason": fields.get("finish_reason"),
            }
        )
    return messages


def openinference_messages(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """OpenInference's form under `prefix` (`llm.input_messages` or `llm.output_messages`); the output's
    first message takes `llm.finish_reason`."""
    messages: list[dict[str, Any]] = []
    for fields in indexed(attrs, prefix).values():
        calls = []
        for call in indexed(fields, "message.tool_calls").values():
            calls.append(
                {
                    "id": call.get("tool_call.id"),
                    "function": {
                        "name": call.get("tool_call.function.name", ""),
                        "arguments": call.get("tool_call.function.arguments"),
                    },
                }
            )
        if "message.function_call_name" in fields:  # the pre-tools `function_call` of older OpenAI models
            calls.append(
                {
                    "id": None,
                    "function": {
                        "name": fields["message.function_call_name"],
                        "arguments": fields.get("message.function_call_arguments_json"),
                    },
                }
            )
        content: Any = fields.get("message.content")
        if content is None:
            parts = indexed(fields, "message.contents").values()
            content = [
                {"type": "text", "text": part.get("message_content.text")}
                for part in parts
                if part.get("message_content.type") == "text"
            ]
        messages.append(
            {
                "role": fields.get("message.role", "assistant"),
                "content": content,
                "tool_calls": calls,
                "tool_call_id": fields.get("message.tool_call_id"),
            }
        )
    if prefix == OPENINFERENCE_OUTPUT and messages and OPENINFERENCE_FINISH_REASON in attrs:
        messages[0]["finish_reason"] = attrs[OPENINFERENCE_FINISH_REASON]
    return messages
