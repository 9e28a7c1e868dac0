"""`traces.genai`: GenAI spans of several dialects → one AgentOutput per turn, with per-agent attribution."""

from __future__ import annotations

import json

from tests.traces.otlp_builders import TraceBuilder, export, messages, multi_agent_turn, text_message

from evalward.model import IntermediateResponse, ToolCall, Usage
from evalward.traces.genai import TraceOptions, turns_from_spans
from evalward.traces.genai_spans import operation
from evalward.traces.otlp import read_spans


def spans_of(*traces: TraceBuilder) -> list:
    return read_spans(json.dumps(export(*traces)), source="t.json")


def test_a_multi_agent_turn_attributes_each_call_to_its_nearest_agent() -> None:
    [turn] = turns_from_spans(spans_of(multi_agent_turn("1" * 32)))
    assert turn.case_id == "conv-1"  # no evalward.case_id: the conversation id names the case
    assert turn.turn == 0
    assert turn.query == "Refund invoice 42"
    assert turn.output.tool_calls == [
        # step = index of the chat span (in start order) whose output requested the call: c1 → 0, c2 → 1.
        ToolCall(name="transfer_to_agent", args={"agent_name": "billing"}, agent="coordinator", id="call-1", step=0),
        ToolCall(name="refund", args={"invoice": 42}, agent="billing", id="call-2", result={"ok": True}, step=1),
    ]
    assert turn.output.agents == ["coordinator", "billing"]
    assert turn.output.response == "Refunded invoice 42."  # the top invoke_agent span's output
    assert turn.output.intermediate_responses == [IntermediateResponse(author="billing", text="Refund done.")]
    # Tokens summed over the 3 chat spans: 12+20+30 = 62 in, 5+7+4 = 16 out; 3 model requests.
    assert turn.output.usage == Usage(input_tokens=62, output_tokens=16, model_requests=3)
    assert turn.notes == []


def test_turns_of_one_conversation_are_numbered_by_start_time() -> None:
    later = multi_agent_turn("2" * 32, offset_s=5)
    earlier = multi_agent_turn("1" * 32)
    turns = turns_from_spans(spans_of(later, earlier))
    assert [(t.case_id, t.turn, t.trace_id) for t in turns] == [("conv-1", 0, "1" * 32), ("conv-1", 1, "2" * 32)]


def test_the_case_attribute_wins_over_the_conversation_id_and_is_configurable() -> None:
    [turn] = turns_from_spans(spans_of(multi_agent_turn("1" * 32, case_id="refund_42")))
    assert turn.case_id == "refund_42"
    trace = TraceBuilder("3" * 32).span("s", "execute_tool f", gen_ai__tool__name="f", app__case="mine")
    [custom] = turns_from_spans(spans_of(trace), TraceOptions(case_attribute="app.case"))
    assert custom.case_id == "mine"


def test_explicit_turn_and_repetition_attributes_split_and_number_turns() -> None:
    trace = TraceBuilder("4" * 32)
    trace.span("w", "session", evalward__case_id="c")
    trace.span("a", "execute_tool f", parent="w", start_ms=5, gen_ai__tool__name="f", evalward__turn=1)
    trace.span("b", "execute_tool g", parent="w", start_ms=1, gen_ai__tool__name="g", evalward__turn=0)
    trace.span(
        "r", "execute_tool h", parent="w", start_ms=9, gen_ai__tool__name="h", evalward__turn=0, evalward__repetition=1
    )
    turns = turns_from_spans(spans_of(trace))
    assert [(t.case_id, t.repetition, t.turn, [c.name for c in t.output.tool_calls]) for t in turns] == [
        ("c", 0, 0, ["g"]),
        ("c", 0, 1, ["f"]),
        ("c", 1, 0, ["h"]),
    ]


def test_older_attribute_names_are_read_and_missing_arguments_are_noted() -> None:
    trace = TraceBuilder("5" * 32)
    trace.span("a", "invoke_agent helper", start_ms=0, end_ms=50, gcp__vertex__agent__session_id="s-9")
    trace.span(
        "l",
        "call_llm",
        parent="a",
        start_ms=1,
        end_ms=5,
        gen_ai__usage__prompt_tokens=7,
        gen_ai__usage__completion_tokens=3,
        gen_ai__completion__0__role="assistant",
        gen_ai__completion__0__content="All set.",
        gen_ai__completion__0__finish_reason="stop",
    )
    trace.span(
        "t1",
        "execute_tool lookup",
        parent="a",
        start_ms=6,
        gcp__vertex__agent__tool_call_args='{"id": 7}',
        gen_ai__tool__call__id="<not specified>",
    )
    trace.span("t2", "execute_tool ping", parent="a", start_ms=7, error=True)
    [turn] = turns_from_spans(spans_of(trace))
    assert turn.case_id == "s-9"
    assert turn.output.tool_calls == [
        ToolCall(name="lookup", args={"id": 7}, agent="helper"),
        ToolCall(name="ping", args=None, agent="helper", status="error"),
    ]
    assert turn.output.response == "All set."
    assert turn.output.usage == Usage(input_tokens=7, output_tokens=3, model_requests=1)
    assert turn.notes == [
        "1 of 2 tool call(s) have no recorded arguments (gen_ai.tool.call.arguments is opt-in): "
        "the native metrics match them by name only"
    ]


def test_provider_side_tool_calls_are_read_from_chat_outputs_when_no_tool_span_exists() -> None:
    trace = TraceBuilder("6" * 32)
    trace.span(
        "c1",
        "chat m",
        start_ms=0,
        gen_ai__operation__name="chat",
        gen_ai__output__messages=messages(
            {
                "role": "assistant",
                "parts": [{"type": "tool_call", "id": "w1", "name": "web_search", "arguments": '{"q": "tides"}'}],
            }
        ),
    )
    trace.span(
        "c2",
        "chat m",
        start_ms=2,
        end_ms=4,
        gen_ai__operation__name="chat",
        gen_ai__input__messages=messages(
            {"role": "tool", "parts": [{"type": "tool_call_response", "id": "w1", "response": "high at 6"}]}
        ),
        gen_ai__output__messages=messages(text_message("assistant", "High tide at 6.", "stop")),
    )
    [turn] = turns_from_spans(spans_of(trace))
    assert turn.output.tool_calls == [
        ToolCall(name="web_search", args={"q": "tides"}, id="w1", result="high at 6", step=0)
    ]
    assert turn.output.response == "High tide at 6."  # the last chat span that finished with stop
    assert turn.notes == ["no execute_tool spans: tool calls were read from the chat spans' output messages"]


def test_output_functions_deferred_calls_and_merged_summaries_are_not_calls() -> None:
    trace = TraceBuilder("7" * 32)
    trace.span(
        "o", "running tool", gen_ai__tool__name="final_result", logfire__msg="running output function: final_result"
    )
    trace.span("d", "running tool", gen_ai__tool__name="approve", pydantic_ai__tool__deferral__name="approve")
    trace.span(
        "m", "execute_tool (merged tools)", gen_ai__operation__name="execute_tool", gen_ai__tool__name="(merged tools)"
    )
    trace.span(
        "k",
        "running tool",
        start_ms=3,
        gen_ai__tool__name="search",
        tool_arguments='{"q": "x"}',
        logfire__msg="running tool: search",
    )
    [turn] = turns_from_spans(spans_of(trace))
    assert [c.signature() for c in turn.output.tool_calls] == ['search(q="x")']


def test_openinference_and_vercel_spans_are_recognised() -> None:
    trace = TraceBuilder("8" * 32)
    trace.span("a", "agent", openinference__span__kind="AGENT", agent__name="oi_agent", output__value="done")
    trace.span(
        "t",
        "tool",
        parent="a",
        start_ms=1,
        openinference__span__kind="TOOL",
        tool__name="calc",
        input__value='{"x": 2}',
        output__value="4",
    )
    trace.span(
        "v",
        "ai.toolCall",
        parent="a",
        start_ms=2,
        ai__toolCall__name="fetch",
        ai__toolCall__args='{"u": 1}',
        ai__toolCall__id="v1",
    )
    [turn] = turns_from_spans(spans_of(trace))
    assert turn.output.tool_calls == [
        ToolCall(name="calc", args={"x": 2}, agent="oi_agent", result=4),
        ToolCall(name="fetch", args={"u": 1}, agent="oi_agent", id="v1"),
    ]
    assert turn.output.response == "done"


def test_pre_1_37_choice_events_give_the_final_response() -> None:
    body = json.dumps({"message": {"role": "assistant", "content": "Hi there"}, "finish_reason": "stop"})
    trace = TraceBuilder("9" * 32).span(
        "c",
        "chat m",
        gen_ai__operation__name="chat",
        events=[{"name": "gen_ai.choice", "attributes": {"gen_ai.event.content": body}}],
    )
    [turn] = turns_from_spans(spans_of(trace))
    assert turn.output.response == "Hi there"


def test_traces_without_genai_spans_are_skipped() -> None:
    trace = TraceBuilder("a" * 32).span("h", "GET /health", http__method="GET")
    assert turns_from_spans(spans_of(trace)) == []


def test_operation_keys_on_the_operation_name_before_the_span_name() -> None:
    [span] = spans_of(TraceBuilder("b" * 32).span("x", "my custom name", gen_ai__operation__name="generate_content"))
    assert operation(span) == "chat"
