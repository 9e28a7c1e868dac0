"""Message dialects the real-instrumentation tests do not reach: OpenInference content parts and legacy
function calls, ADK's recorded request, log records named by the older `event.name` attribute, and the
warnings for a turn whose spans lack a part of the conversation."""

from __future__ import annotations

import json

from tests.traces.otlp_builders import TraceBuilder, any_value, export

from evalward.model import ToolCall
from evalward.traces.genai import CAPTURE_HINT, turns_from_spans
from evalward.traces.otlp import read_records


def test_openinference_content_parts_and_legacy_function_calls_are_read() -> None:
    trace = TraceBuilder("1" * 32)
    trace.span(
        "l",
        "ChatCompletion",
        openinference__span__kind="LLM",
        **{
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.contents.0.message_content.type": "text",
            "llm.input_messages.0.message.contents.0.message_content.text": "Add 2 and 3",
            "llm.input_messages.0.message.contents.1.message_content.type": "image",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.function_call_name": "add",
            "llm.output_messages.0.message.function_call_arguments_json": '{"a": 2, "b": 3}',
            "llm.finish_reason": "function_call",
        },
    )
    [turn] = turns_from_spans(read_records(json.dumps(export(trace)), source="t.json"))
    assert turn.query == "Add 2 and 3"
    assert turn.output.tool_calls == [ToolCall(name="add", args={"a": 2, "b": 3}, step=0)]


def test_adk_recorded_request_gives_the_query() -> None:
    request = {
        "model": "gemini-2.5-flash",
        "contents": [
            {"role": "user", "parts": [{"text": "Roll a die"}]},
            {"role": "model", "parts": [{"function_call": {"name": "roll", "args": {"sides": 6}}}]},
            {"role": "user", "parts": [{"function_response": {"name": "roll", "response": {"result": 4}}}]},
        ],
    }
    response = {"content": {"role": "model", "parts": [{"text": "You rolled a 4."}]}, "finish_reason": "STOP"}
    trace = TraceBuilder("2" * 32).span(
        "c",
        "call_llm",
        gcp__vertex__agent__llm_request=json.dumps(request),
        gcp__vertex__agent__llm_response=json.dumps(response),
    )
    [turn] = turns_from_spans(read_records(json.dumps(export(trace)), source="t.json"))
    assert (turn.query, turn.output.response, turn.warnings) == ("Roll a die", "You rolled a 4.", [])


def test_log_records_named_by_the_older_event_name_attribute_are_attached_and_read() -> None:
    trace = TraceBuilder("3" * 32).span("c", "chat m", gen_ai__operation__name="chat")
    logs = {
        "resourceLogs": [
            {
                "scopeLogs": [
                    {
                        "logRecords": [
                            {
                                "observedTimeUnixNano": str(TraceBuilder.base_ns + order),
                                "traceId": "3" * 32,
                                "spanId": "c",
                                "attributes": [{"key": "event.name", "value": any_value(name)}],
                                "body": any_value(body),
                            }
                            for order, (name, body) in enumerate(
                                [
                                    ("gen_ai.user.message", {"content": "Hi"}),
                                    (
                                        "gen_ai.choice",
                                        {"index": 0, "finish_reason": "stop", "message": {"content": "Hello!"}},
                                    ),
                                ]
                            )
                        ]
                    }
                ]
            }
        ]
    }
    # The logs come first, as the logs pipeline may flush before the traces pipeline.
    text = json.dumps(logs) + "\n" + json.dumps(export(trace)) + "\n"
    [turn] = turns_from_spans(read_records(text, source="t.jsonl"))
    assert (turn.query, turn.output.response) == ("Hi", "Hello!")


def test_a_turn_whose_spans_lack_the_query_is_warned_about() -> None:
    trace = TraceBuilder("4" * 32).span(
        "c",
        "chat m",
        gen_ai__operation__name="chat",
        gen_ai__output__messages=json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "Done."}]}]),
    )
    [turn] = turns_from_spans(read_records(json.dumps(export(trace)), source="t.json"))
    assert turn.output.response == "Done."
    assert turn.warnings == [
        f"its spans do not record the user query, so the query cannot be checked against the eval case's: {CAPTURE_HINT}"
    ]


def test_a_turn_whose_answer_text_is_missing_although_the_model_finished_is_warned_about() -> None:
    trace = TraceBuilder("5" * 32).span(
        "c",
        "chat m",
        gen_ai__operation__name="chat",
        gen_ai__response__finish_reasons=["stop"],
        gen_ai__input__messages=json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Hi"}]}]),
    )
    [turn] = turns_from_spans(read_records(json.dumps(export(trace)), source="t.json"))
    assert turn.warnings == ["its spans do not record the text of the model's final answer"]
