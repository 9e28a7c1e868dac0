"""`traces.otlp`: OTLP JSON, OTLP JSON lines and Jaeger JSON into spans, with decoded attributes."""

from __future__ import annotations

import json

import pytest
from tests.traces.otlp_builders import TraceBuilder, export

from evalward.errors import EvalFileError
from evalward.traces.otlp import decode_any_value, read_spans


@pytest.mark.parametrize(
    ("encoded", "decoded"),
    [
        ({"stringValue": "x"}, "x"),
        ({"intValue": "9007199254740993"}, 9007199254740993),  # 64-bit ints are JSON strings
        ({"doubleValue": 0.5}, 0.5),
        ({"boolValue": True}, True),
        ({"arrayValue": {"values": [{"intValue": "1"}, {"stringValue": "a"}]}}, [1, "a"]),
        ({"kvlistValue": {"values": [{"key": "k", "value": {"boolValue": False}}]}}, {"k": False}),
        ({}, None),
    ],
)
def test_any_values_decode_to_plain_python(encoded: dict[str, object], decoded: object) -> None:
    assert decode_any_value(encoded) == decoded


def test_an_otlp_export_yields_every_span_with_parents_times_and_error_status() -> None:
    trace = TraceBuilder("t" * 32)
    trace.span("root", "invoke_agent a", start_ms=0, end_ms=10, gen_ai__agent__name="a")
    trace.span("kid", "execute_tool f", parent="root", start_ms=2, end_ms=3, error=True, gen_ai__tool__name="f")
    spans = read_spans(json.dumps(export(trace)), source="t.json")
    assert [(s.span_id, s.parent_id, s.error) for s in spans] == [("root", None, False), ("kid", "root", True)]
    # 2 ms after the base time, in nanoseconds.
    assert spans[1].start_ns - spans[0].start_ns == 2_000_000
    assert spans[1].attributes == {"gen_ai.tool.name": "f"}
    assert spans[0].resource == {"service.name": "shop"}
    assert spans[1].status_message == "boom"


def test_collector_file_exporter_lines_are_read_one_export_per_line() -> None:
    first = TraceBuilder("a" * 32).span("s1", "chat m")
    second = TraceBuilder("b" * 32).span("s2", "chat m")
    text = json.dumps(export(first)) + "\n\n" + json.dumps(export(second)) + "\n"
    assert [s.trace_id for s in read_spans(text, source="x.jsonl")] == ["a" * 32, "b" * 32]


def test_jaeger_json_is_read_with_child_of_parents_and_microsecond_times() -> None:
    data = {
        "data": [
            {
                "traceID": "abc",
                "spans": [
                    {
                        "traceID": "abc",
                        "spanID": "1",
                        "operationName": "invoke_agent x",
                        "startTime": 10,
                        "duration": 5,
                        "references": [],
                        "tags": [{"key": "gen_ai.agent.name", "value": "x"}],
                    },
                    {
                        "traceID": "abc",
                        "spanID": "2",
                        "operationName": "execute_tool f",
                        "startTime": 11,
                        "duration": 1,
                        "references": [{"refType": "CHILD_OF", "spanID": "1"}],
                        "tags": [{"key": "error", "value": True}],
                    },
                ],
                "processes": {},
            }
        ]
    }
    spans = read_spans(json.dumps(data), source="j.json")
    assert [(s.span_id, s.parent_id, s.error) for s in spans] == [("1", None, False), ("2", "1", True)]
    # 10 µs → 10,000 ns; end = start + 5 µs.
    assert (spans[0].start_ns, spans[0].end_ns) == (10_000, 15_000)


def test_a_json_file_that_is_not_a_trace_names_what_was_found() -> None:
    with pytest.raises(EvalFileError) as caught:
        read_spans('{"eval_cases": []}', source="wrong.json")
    assert str(caught.value) == (
        "1 problem in eval files:\n"
        '  wrong.json: not a trace export; at $; expected OTLP JSON ({"resourceSpans": [...]}) or Jaeger JSON '
        '({"data": [...]}); found an object with keys eval_cases'
    )


def test_every_bad_line_of_a_json_lines_file_is_reported_with_its_number() -> None:
    good = json.dumps(export(TraceBuilder("a" * 32).span("s", "chat")))
    with pytest.raises(EvalFileError) as caught:
        read_spans(f'{good}\nnot json\n{{"x": 1}}\n', source="bad.jsonl")
    rendered = [p.render() for p in caught.value.problems]
    assert rendered[0].startswith("bad.jsonl:2:1: not valid JSON")
    assert rendered[1].startswith("bad.jsonl:3: not an OTLP export line")


def test_an_empty_file_is_a_problem() -> None:
    with pytest.raises(EvalFileError, match="the trace file is empty"):
        read_spans("  \n", source="empty.json")
