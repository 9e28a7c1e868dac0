"""OpenTelemetry GenAI spans → one `AgentOutput` per recorded turn, with per-agent attribution.

Spans are classified by their operation (never by one framework's span names alone; docs/metrics.md §11):

| operation | recognised from (first that applies) |
| --- | --- |
| `execute_tool` | `gen_ai.operation.name = execute_tool`; Logfire `running tool` spans; OpenInference `openinference.span.kind = TOOL`; Vercel AI SDK `ai.toolCall`; a span name starting `execute_tool` |
| `invoke_agent` | `gen_ai.operation.name = invoke_agent` (also `create_agent` is *not* an invocation); OpenInference `AGENT`; a span name starting `invoke_agent` |
| `chat` | `gen_ai.operation.name` in `chat`, `generate_content`, `text_completion`; OpenInference `LLM`; span names `chat …`, `call_llm` |
| excluded | Logfire output functions (`logfire.msg` starting "running output function"), deferred pydantic-ai calls (`pydantic_ai.tool.deferral.name`), ADK's `(merged tools)` summary spans |

A tool call is `ToolCall(name, args, agent, id, result, status, step)`:
- `name`: `gen_ai.tool.name`, `tool.name`, `ai.toolCall.name`, else the span name after `execute_tool `;
- `args`: `gen_ai.tool.call.arguments` (opt-in), else the older `gcp.vertex.agent.tool_call_args`,
  Logfire `tool_arguments`, OpenInference `input.value`, Vercel `ai.toolCall.args`; a JSON string is
  decoded; absent → `None` (name-only matching for the native metrics; the turn's `notes` say so);
- `result`: `gen_ai.tool.call.result`, `gcp.vertex.agent.tool_response`, `tool_response`, `output.value`,
  `ai.toolCall.result`;
- `id`: `gen_ai.tool.call.id` (or `ai.toolCall.id`); ADK's `<not specified>` is treated as absent;
- `agent`: the nearest `invoke_agent` ancestor's `gen_ai.agent.name` (else the span's own
  `gen_ai.agent.name`); `status` is `error` when the span status is ERROR or `error.type` is set;
- `step`: the index (in start order) of the chat span that requested the call, found by its id in that
  span's output messages, else the chat span that is the call's parent;
- order: span start time.
Provider-side tools exist only as `tool_call` parts of chat outputs: when a turn has no `execute_tool`
span at all, those parts are the calls (joined by id to `tool_call_response` parts for results).

Messages are read in every shape seen in the wild: the 1.37+ JSON (`[{role, parts: [{type: text,
content} | {type: tool_call, id, name, arguments}], finish_reason}]`), OpenAI-style `{role, content,
tool_calls}`, the flattened pre-1.37 `gen_ai.prompt.N.*` / `gen_ai.completion.N.*` attributes, the
`gen_ai.choice` span events, ADK's `gcp.vertex.agent.llm_response` and OpenInference `output.value`.

Per turn: `response` = the last assistant text of the turn's top `invoke_agent` span output, else of the
last chat span (by end time) that finished with `stop`, else of the last chat span with text;
`intermediate_responses` = output texts of nested agents; `agents` = `invoke_agent` names in start
order (distinct); `usage` = tokens summed over chat spans (`gen_ai.usage.input_tokens`/`output_tokens`,
or the older `prompt_tokens`/`completion_tokens`), `model_requests` = number of chat spans.

Grouping: one trace is one turn, unless its spans carry distinct turn attributes (then one turn per
value). The case id is the configurable attribute (default `evalward.case_id`) on any span of the turn,
else the conversation id (`gen_ai.conversation.id`, `session.id`, `gcp.vertex.agent.session_id`), else
the trace id. Turns of one case (and repetition, attribute `evalward.repetition`, default 0) are numbered
by their turn attribute when given, else by start time. Traces with no GenAI span are skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from evalward.model import AgentOutput, IntermediateResponse, ToolCall, Usage
from evalward.traces.otlp import Span

Operation = Literal["invoke_agent", "execute_tool", "chat", "invoke_workflow", "excluded", "other"]

_CHAT_OPERATIONS = {"chat", "generate_content", "text_completion", "completion"}
_UNSPECIFIED_IDS = {"", "<not specified>", "N/A"}

TOOL_NAME_KEYS = ("gen_ai.tool.name", "tool.name", "ai.toolCall.name")
TOOL_ARGS_KEYS = (
    "gen_ai.tool.call.arguments",
    "gcp.vertex.agent.tool_call_args",
    "tool_arguments",
    "input.value",
    "ai.toolCall.args",
)
TOOL_RESULT_KEYS = (
    "gen_ai.tool.call.result",
    "gcp.vertex.agent.tool_response",
    "tool_response",
    "output.value",
    "ai.toolCall.result",
)
TOOL_ID_KEYS = ("gen_ai.tool.call.id", "ai.toolCall.id")
CONVERSATION_KEYS = ("gen_ai.conversation.id", "session.id", "gcp.vertex.agent.session_id")
INPUT_TOKEN_KEYS = ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt")
OUTPUT_TOKEN_KEYS = ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens", "llm.token_count.completion")


@dataclass(frozen=True)
class TraceOptions:
    """Which span attributes name the case, turn, repetition and eval set of a recorded turn."""

    case_attribute: str = "evalward.case_id"
    turn_attribute: str = "evalward.turn"
    repetition_attribute: str = "evalward.repetition"
    eval_set_attribute: str = "evalward.eval_set_id"


@dataclass
class TracedTurn:
    """One turn reconstructed from spans."""

    case_id: str
    turn: int
    output: AgentOutput
    repetition: int = 0
    eval_set_id: str | None = None
    conversation_id: str | None = None
    trace_id: str = ""
    query: str | None = None
    start_ns: int = 0
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Message:
    role: str
    text: str
    tool_calls: tuple[tuple[str | None, str, Any], ...] = ()
    tool_results: tuple[tuple[str | None, Any], ...] = ()
    finish_reason: str | None = None


# --- classification ------------------------------------------------------------------------------------


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


def _decode_json(value: Any) -> Any:
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


# --- messages -----------------------------------------------------------------------------------------


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


def _message(raw: Any) -> _Message | None:
    """One message in any of the shapes of the module docstring."""
    if not isinstance(raw, dict):
        return None
    if "message" in raw and isinstance(raw["message"], dict):  # pre-1.37 `gen_ai.choice` body
        inner = _message(raw["message"])
        if inner is None:
            return None
        return _Message(inner.role, inner.text, inner.tool_calls, inner.tool_results, raw.get("finish_reason"))
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
                calls.append((part.get("id"), str(part.get("name", "")), _decode_json(part.get("arguments"))))
            elif kind == "tool_call_response":
                results.append((part.get("id"), _decode_json(part.get("response", part.get("result")))))
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
            calls.append((call.get("id"), str(function.get("name", "")), _decode_json(function.get("arguments"))))
    finish = raw.get("finish_reason")
    return _Message(
        role=role,
        text="\n".join(t for t in texts if t),
        tool_calls=tuple(calls),
        tool_results=tuple(results),
        finish_reason=str(finish).lower() if finish is not None else None,
    )


def _messages_value(value: Any) -> list[_Message]:
    value = _decode_json(value)
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        return [] if value is None else [_Message(role="assistant", text=str(value))]
    return [m for m in (_message(item) for item in value) if m is not None]


def _flattened(attrs: dict[str, Any], prefix: str) -> list[_Message]:
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
                    _decode_json(fields.get(f"tool_calls.{ci}.arguments")),
                )
            )
        finish = fields.get("finish_reason")
        messages.append(
            _Message(
                role=str(fields.get("role", "assistant")),
                text=_text_of(fields.get("content")),
                tool_calls=tuple(calls),
                finish_reason=str(finish).lower() if finish is not None else None,
            )
        )
    return messages


def output_messages(span: Span) -> list[_Message]:
    """What the span produced, in the first dialect that has it."""
    attrs = span.attributes
    if "gen_ai.output.messages" in attrs:
        return _messages_value(attrs["gen_ai.output.messages"])
    flattened = _flattened(attrs, "gen_ai.completion")
    if flattened:
        return flattened
    choices = [e for e in span.events if e.name == "gen_ai.choice"]
    if choices:
        messages: list[_Message] = []
        for event in choices:
            body = first(event.attributes, ("gen_ai.event.content", "body", "event.body"))
            if body is None:
                body = {k: v for k, v in event.attributes.items() if k in ("message", "finish_reason", "index")}
            messages.extend(_messages_value(body))
        return messages
    llm_response = attrs.get("gcp.vertex.agent.llm_response")
    if llm_response is not None:
        decoded = _decode_json(llm_response)
        if isinstance(decoded, dict) and isinstance(decoded.get("content"), dict):
            message = _message({**decoded["content"], "finish_reason": decoded.get("finish_reason")})
            return [message] if message is not None else []
        return []
    if "output.value" in attrs and operation(span) in ("invoke_agent", "chat"):
        return _messages_value(attrs["output.value"])
    return []


def input_messages(span: Span) -> list[_Message]:
    attrs = span.attributes
    if "gen_ai.input.messages" in attrs:
        return _messages_value(attrs["gen_ai.input.messages"])
    flattened = _flattened(attrs, "gen_ai.prompt")
    if flattened:
        return flattened
    users = [e for e in span.events if e.name == "gen_ai.user.message"]
    if users:
        return [_Message(role="user", text=_text_of(e.attributes.get("content"))) for e in users]
    if "input.value" in attrs and operation(span) in ("invoke_agent", "chat"):
        return _messages_value(attrs["input.value"])
    return []


def _last_assistant_text(messages: Sequence[_Message]) -> str | None:
    for message in reversed(messages):
        if message.role == "assistant" and message.text:
            return message.text
    return None


def _last_user_text(messages: Sequence[_Message]) -> str | None:
    for message in reversed(messages):
        if message.role == "user" and message.text:
            return message.text
    return None


# --- turns --------------------------------------------------------------------------------------------


def _int(value: Any, default: int | None) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


class _TraceIndex:
    """Parent links of one trace, to find ancestors."""

    def __init__(self, spans: Sequence[Span]) -> None:
        self.by_id = {s.span_id: s for s in spans}

    def ancestors(self, span: Span) -> Iterable[Span]:
        seen: set[str] = set()
        current = span
        while current.parent_id and current.parent_id in self.by_id and current.parent_id not in seen:
            seen.add(current.parent_id)
            current = self.by_id[current.parent_id]
            yield current

    def nearest(self, span: Span, op: Operation) -> Span | None:
        return next((a for a in self.ancestors(span) if operation(a) == op), None)

    def inherited(self, span: Span, key: str) -> Any:
        if key in span.attributes:
            return span.attributes[key]
        return next((a.attributes[key] for a in self.ancestors(span) if key in a.attributes), None)


def turns_from_spans(spans: Sequence[Span], options: TraceOptions | None = None) -> list[TracedTurn]:
    """Every recorded turn in `spans`, numbered per case (rules in the module docstring)."""
    options = options or TraceOptions()
    by_trace: dict[str, list[Span]] = {}
    for span in spans:
        by_trace.setdefault(span.trace_id, []).append(span)
    turns: list[TracedTurn] = []
    explicit: dict[int, int] = {}
    for trace_id, trace_spans in by_trace.items():
        for traced, number in trace_turns(trace_id, trace_spans, options):
            if number is not None:
                explicit[id(traced)] = number
            turns.append(traced)
    return number_turns(turns, explicit)


def trace_turns(
    trace_id: str, trace_spans: Sequence[Span], options: TraceOptions
) -> list[tuple[TracedTurn, int | None]]:
    """The turns of one trace (all its spans, in the order read), each with the number its turn attribute
    gives it (None without one); `number_turns` numbers them with the other turns of their case."""
    index = _TraceIndex(trace_spans)
    ordered = sorted(trace_spans, key=lambda s: (s.start_ns, s.end_ns))
    groups: dict[tuple[Any, Any], list[Span]] = {}
    for span in ordered:
        tag = (index.inherited(span, options.turn_attribute), index.inherited(span, options.repetition_attribute))
        groups.setdefault(tag, []).append(span)
    untagged_key = (None, None)
    if len(groups) > 1 and untagged_key in groups:
        # Spans outside any turn-tagged subtree (a wrapping HTTP span) belong to no turn of their own.
        untagged = groups.pop(untagged_key)
        if any(operation(s) in ("execute_tool", "chat", "invoke_agent") for s in untagged):
            groups[untagged_key] = untagged
    turns: list[tuple[TracedTurn, int | None]] = []
    for (turn_value, _), group in groups.items():
        traced = _turn(trace_id, group, ordered, index, options)
        if traced is not None:
            turns.append((traced, _int(turn_value, None)))
    return turns


def number_turns(turns: list[TracedTurn], explicit: dict[int, int]) -> list[TracedTurn]:
    """`turns` (in the order their traces were read) numbered per (eval set, case, repetition): by the turn
    attribute where `explicit` (keyed by `id(turn)`) has one, else by position in start order; sorted by
    (eval set, case, repetition, turn)."""
    by_case: dict[tuple[str | None, str, int], list[TracedTurn]] = {}
    for turn in turns:
        by_case.setdefault((turn.eval_set_id, turn.case_id, turn.repetition), []).append(turn)
    numbered: list[TracedTurn] = []
    for group in by_case.values():
        group.sort(key=lambda t: (explicit.get(id(t), 0), t.start_ns))
        for position, turn in enumerate(group):
            turn.turn = explicit.get(id(turn), position)
            numbered.append(turn)
    numbered.sort(key=lambda t: (t.eval_set_id or "", t.case_id, t.repetition, t.turn))
    return numbered


def _turn(
    trace_id: str, group: Sequence[Span], trace: Sequence[Span], index: _TraceIndex, options: TraceOptions
) -> TracedTurn | None:
    def _attribute(key: str) -> Any:
        # The turn's own spans first, then the rest of the trace (a wrapping span may carry the case id).
        for spans in (group, trace):
            found = next((s.attributes[key] for s in spans if key in s.attributes), None)
            if found is not None:
                return found
        return None

    ops = {id(s): operation(s) for s in group}
    agents = [s for s in group if ops[id(s)] == "invoke_agent"]
    tools = [s for s in group if ops[id(s)] == "execute_tool"]
    chats = [s for s in group if ops[id(s)] == "chat"]
    if not (agents or tools or chats):
        return None
    notes: list[str] = []
    chat_steps = {s.span_id: position for position, s in enumerate(chats)}
    requested_by: dict[str, int] = {}
    for position, chat in enumerate(chats):
        for message in output_messages(chat):
            for call_id, _, _ in message.tool_calls:
                if call_id:
                    requested_by.setdefault(str(call_id), position)

    calls: list[ToolCall] = []
    missing_args = 0
    for span in tools:
        call_id = first(span.attributes, TOOL_ID_KEYS)
        call_id = None if call_id is None or str(call_id) in _UNSPECIFIED_IDS else str(call_id)
        raw_args = first(span.attributes, TOOL_ARGS_KEYS)
        args = _decode_json(raw_args)
        if raw_args is None:
            missing_args += 1
            args = None
        elif not isinstance(args, dict):
            args = {"input": args}
        owner = index.nearest(span, "invoke_agent")
        agent = agent_name(owner) if owner is not None else span.attributes.get("gen_ai.agent.name")
        step = requested_by.get(call_id) if call_id else None
        if step is None and span.parent_id in chat_steps:
            step = chat_steps[span.parent_id]
        calls.append(
            ToolCall(
                name=tool_name(span),
                args=args,
                agent=str(agent) if agent else None,
                result=_decode_json(first(span.attributes, TOOL_RESULT_KEYS)),
                id=call_id,
                status="error" if span.error or "error.type" in span.attributes else "ok",
                step=step,
            )
        )
    if not tools:
        calls = _calls_from_chats(chats, index)
        if calls:
            notes.append("no execute_tool spans: tool calls were read from the chat spans' output messages")
    if missing_args:
        notes.append(
            f"{missing_args} of {len(tools)} tool call(s) have no recorded arguments "
            "(gen_ai.tool.call.arguments is opt-in): the native metrics match them by name only"
        )

    top = next((a for a in agents if index.nearest(a, "invoke_agent") is None), None)
    response = _last_assistant_text(output_messages(top)) if top is not None else None
    if response is None:
        response = _chat_response(chats)
    intermediate = [
        IntermediateResponse(author=agent_name(a), text=text)
        for a in agents
        if a is not top and (text := _last_assistant_text(output_messages(a)))
    ]
    agent_names: list[str] = []
    for span in agents:
        name = agent_name(span)
        if name not in agent_names:
            agent_names.append(name)
    query = None
    if top is not None:
        query = _last_user_text(input_messages(top))
    if query is None and chats:
        query = _last_user_text(input_messages(chats[0]))

    conversation = _attribute(CONVERSATION_KEYS[0])
    for key in CONVERSATION_KEYS[1:]:
        conversation = conversation if conversation is not None else _attribute(key)
    case_id = _attribute(options.case_attribute)
    if case_id is None:
        case_id = conversation if conversation is not None else trace_id
    eval_set_id = _attribute(options.eval_set_attribute)
    return TracedTurn(
        case_id=str(case_id),
        turn=0,
        output=AgentOutput(
            response=response,
            tool_calls=calls,
            agents=agent_names if agent_names else None,
            intermediate_responses=intermediate,
            usage=_usage(chats),
        ),
        repetition=_int(index.inherited(group[0], options.repetition_attribute), 0) or 0,
        eval_set_id=str(eval_set_id) if eval_set_id is not None else None,
        conversation_id=str(conversation) if conversation is not None else None,
        trace_id=trace_id,
        query=query,
        start_ns=min(s.start_ns for s in group),
        notes=notes,
    )


def _calls_from_chats(chats: Sequence[Span], index: _TraceIndex) -> list[ToolCall]:
    results: dict[str, Any] = {}
    for chat in chats:
        for message in [*input_messages(chat), *output_messages(chat)]:
            for call_id, result in message.tool_results:
                if call_id:
                    results[str(call_id)] = result
    calls: list[ToolCall] = []
    for position, chat in enumerate(chats):
        owner = index.nearest(chat, "invoke_agent")
        for message in output_messages(chat):
            for call_id, name, args in message.tool_calls:
                calls.append(
                    ToolCall(
                        name=name,
                        args=args if isinstance(args, dict) else ({"input": args} if args is not None else None),
                        agent=agent_name(owner) if owner is not None else None,
                        result=results.get(str(call_id)) if call_id else None,
                        id=str(call_id) if call_id else None,
                        step=position,
                    )
                )
    return calls


def _chat_response(chats: Sequence[Span]) -> str | None:
    by_end = sorted(chats, key=lambda s: (s.end_ns, s.start_ns))
    for span in reversed(by_end):
        messages = output_messages(span)
        if any(m.finish_reason == "stop" for m in messages):
            text = _last_assistant_text(messages)
            if text is not None:
                return text
    for span in reversed(by_end):
        text = _last_assistant_text(output_messages(span))
        if text is not None:
            return text
    return None


def _usage(chats: Sequence[Span]) -> Usage | None:
    if not chats:
        return None
    inputs = [_int(first(s.attributes, INPUT_TOKEN_KEYS), None) for s in chats]
    outputs = [_int(first(s.attributes, OUTPUT_TOKEN_KEYS), None) for s in chats]
    known_in = [v for v in inputs if v is not None]
    known_out = [v for v in outputs if v is not None]
    return Usage(
        input_tokens=sum(known_in) if known_in else None,
        output_tokens=sum(known_out) if known_out else None,
        model_requests=len(chats),
    )
