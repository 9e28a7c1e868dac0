"""OpenTelemetry GenAI spans → one `AgentOutput` per recorded turn, with per-agent attribution.

Spans are classified by their GenAI operation (`genai_spans`, docs/metrics.md §11) and their messages read in
every dialect (`genai_messages`): span attributes, span events, and OTLP log records emitted inside a span,
which are attached to it first (`span_logs`).

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
Provider-side tools exist only as `tool_call` parts of chat outputs, and so do all tools under an
instrumentation of the model client alone (openai-v2, OpenLLMetry, OpenInference: they see the model's
requests, not the tools running): when a turn has no `execute_tool` span at all, the tool calls of the
chat outputs are the calls, joined by id to the results later chat inputs carry (`tool_call_response`
parts, `tool` messages).

Per turn: `query` = the last user text of the top `invoke_agent` span's input, else of the first chat span's
input; `response` = the last assistant text of the turn's top `invoke_agent` span output, else of the
last chat span (by end time) that finished with `stop`, else of the last chat span with text;
`intermediate_responses` = output texts of nested agents; `agents` = `invoke_agent` names in start
order (distinct); `usage` = tokens summed over chat spans (`gen_ai.usage.input_tokens`/`output_tokens`,
the older `prompt_tokens`/`completion_tokens`, OpenInference `llm.token_count.*`), `model_requests` = number
of chat spans. What the spans did not record (no content at all, no query, no answer although the model
finished) becomes the turn's `warnings` (`content_warnings`), for the command replaying the turn to report
with its case.

Grouping: one trace is one turn, unless its spans carry distinct turn attributes (then one turn per
value). The case id is the configurable attribute (default `evalward.case_id`) on any span of the turn,
else the conversation id (`gen_ai.conversation.id`, `session.id`, `gcp.vertex.agent.session_id`), else
the trace id. Turns of one case (and repetition, attribute `evalward.repetition`, default 0) are numbered
by their turn attribute when given, else by start time. Traces with no GenAI span are skipped.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalward.model import AgentOutput, IntermediateResponse, ToolCall, Usage
from evalward.traces.genai_messages import input_messages, last_assistant_text, last_user_text, output_messages
from evalward.traces.genai_spans import Operation, agent_name, decode_json, first, operation, tool_name
from evalward.traces.otlp import LogRecord, Record, Span
from evalward.traces.span_logs import attach_logs

_UNSPECIFIED_IDS = {"", "<not specified>", "N/A"}

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
    warnings: list[str] = field(default_factory=list)
    """What the spans failed to record (the query, the answer, any content): `content_warnings`."""


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


def turns_from_spans(records: Sequence[Record], options: TraceOptions | None = None) -> list[TracedTurn]:
    """Every recorded turn in `records` (spans, and log records, which are attached to their spans first:
    `span_logs`), numbered per case (rules in the module docstring)."""
    options = options or TraceOptions()
    by_trace: dict[str, tuple[list[Span], list[LogRecord]]] = {}
    for record in records:
        spans, logs = by_trace.setdefault(record.trace_id, ([], []))
        if isinstance(record, Span):
            spans.append(record)
        else:
            logs.append(record)
    turns: list[TracedTurn] = []
    explicit: dict[int, int] = {}
    for trace_id, (trace_spans, trace_logs) in by_trace.items():
        joined, _ = attach_logs(trace_spans, trace_logs)
        for traced, number in trace_turns(trace_id, joined, options):
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
        args = decode_json(raw_args)
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
                result=decode_json(first(span.attributes, TOOL_RESULT_KEYS)),
                id=call_id,
                status="error" if span.error or "error.type" in span.attributes else "ok",
                step=step,
            )
        )
    if not tools:
        calls = _calls_from_chats(chats, index)
        if calls:
            notes.append("no execute_tool spans: tool calls were read from the chat spans' output messages")
        without_args = sum(1 for call in calls if call.args is None)
        if without_args:
            notes.append(
                f"{without_args} of {len(calls)} tool call(s) have no recorded arguments (the chat spans "
                "recorded no message content): the native metrics match them by name only"
            )
    if missing_args:
        notes.append(
            f"{missing_args} of {len(tools)} tool call(s) have no recorded arguments "
            "(gen_ai.tool.call.arguments is opt-in): the native metrics match them by name only"
        )

    top = next((a for a in agents if index.nearest(a, "invoke_agent") is None), None)
    response = last_assistant_text(output_messages(top)) if top is not None else None
    if response is None:
        response = _chat_response(chats)
    intermediate = [
        IntermediateResponse(author=agent_name(a), text=text)
        for a in agents
        if a is not top and (text := last_assistant_text(output_messages(a)))
    ]
    agent_names: list[str] = []
    for span in agents:
        name = agent_name(span)
        if name not in agent_names:
            agent_names.append(name)
    query = None
    if top is not None:
        query = last_user_text(input_messages(top))
    if query is None and chats:
        query = last_user_text(input_messages(chats[0]))
    warnings = content_warnings(chats, query=query, response=response, calls=calls)

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
        warnings=warnings,
    )


CAPTURE_HINT = (
    "turn on the instrumentation's content capture (e.g. OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT), "
    "and export the log records it may write the content to into the same file as the spans"
)


def content_warnings(
    chats: Sequence[Span], *, query: str | None, response: str | None, calls: Sequence[ToolCall]
) -> list[str]:
    """What a turn's spans did not record, as warnings: the case is then scored on less than happened.

    Nothing readable at all (no query, answer or call) is what an instrumentation with content capture off
    records, or one whose content went to log records that were not exported with the spans. A missing
    query means it cannot be checked against the eval case's; a missing answer is reported when a chat span
    says the model finished (`stop`) yet no text of it was recorded."""
    if query is None and response is None and not calls:
        where = f"its {len(chats)} chat span(s)" if chats else "its spans"
        return [
            f"{where} carry no readable message content, so the query, the tool calls and the answer are "
            f"unknown: {CAPTURE_HINT}"
        ]
    missing = []
    if query is None:
        missing.append("the user query")
    if response is None and any(_finished(chat) for chat in chats):
        missing.append("the text of the model's final answer")
    if not missing:
        return []
    warning = f"its spans do not record {' or '.join(missing)}"
    if query is None:
        warning += f", so the query cannot be checked against the eval case's: {CAPTURE_HINT}"
    return [warning]


def _finished(chat: Span) -> bool:
    """Whether a chat span says the model finished its answer (finish reason `stop`)."""
    reasons = first(chat.attributes, ("gen_ai.response.finish_reasons", "llm.finish_reason"))
    listed = reasons if isinstance(reasons, list) else [reasons]
    if any(str(reason).lower() == "stop" for reason in listed):
        return True
    return any(message.finish_reason == "stop" for message in output_messages(chat))


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
            text = last_assistant_text(messages)
            if text is not None:
                return text
    for span in reversed(by_end):
        text = last_assistant_text(output_messages(span))
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
