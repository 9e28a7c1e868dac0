"""Traces from real instrumentation (issue #30 rows 12–14), read back by `load_recordings` and `import-traces`.

Every trace here is produced by the instrumentation package itself, around an agent that calls the fake
OpenAI-compatible server through the real `openai` client (`instrumented_agent`), and exported as a
Collector's file exporter writes OTLP JSON (`otlp_json`). Each of the five cases must come back exactly: the
user query, every tool call (name, arguments, result, call id, model step) and the final answer.
"""

from __future__ import annotations

import json
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from tests.traces.instrumented_agent import CASES, AgentCase, record

from evalward._cli.import_traces_cmd import import_traces_command
from evalward.model import AgentOutput, ToolCall, Usage
from evalward.store import open_store
from evalward.traces.genai import CAPTURE_HINT, turns_from_spans
from evalward.traces.otlp import read_records
from evalward.traces.query_check import same_query
from evalward.traces.recordings import RecordingSet, load_recordings

READ_BACK = [
    "openinference",
    "openinference_values_only",
    "openllmetry",
    "openllmetry_events",
    "openai_v2_span_only",
    "openai_v2_log_events",
    "openai_v2_event_only",
]
"""Every instrumentation that records content: all of it must come back."""

# 30 + 40 input tokens and 8 + 12 output tokens over the two model calls of each case (`respond`).
USAGE = Usage(input_tokens=70, output_tokens=20, model_requests=2)


def read_back(recordings: RecordingSet, case: AgentCase) -> tuple[str | None, list[ToolCall], str | None, Any]:
    row = recordings.locate(case.case_id, 0, 0)
    assert row is not None, case.case_id
    assert isinstance(row.value, AgentOutput)
    return row.query, row.value.tool_calls, row.value.response, (row.value.usage, row.warnings)


def expected(case: AgentCase) -> tuple[str | None, list[ToolCall], str | None, Any]:
    return case.query, case.expected_calls(), case.answer, (USAGE, ())


@pytest.mark.parametrize("name", READ_BACK)
def test_each_instrumentation_gives_back_every_query_tool_call_and_answer_exactly(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = record(name, monkeypatch).write(tmp_path / "telemetry.jsonl")
    with closing(load_recordings(path)) as recordings:
        assert {c.case_id: read_back(recordings, c) for c in CASES} == {c.case_id: expected(c) for c in CASES}
        assert recordings.warnings == []


def test_log_records_read_in_memory_give_the_same_turns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`turns_from_spans` over the records of the whole file attaches the log records as the indexed
    reader does."""
    path = record("openai_v2_log_events", monkeypatch).write(tmp_path / "telemetry.jsonl")
    turns = turns_from_spans(read_records(path.read_text(encoding="utf-8"), source=str(path)))
    by_case = {t.case_id: (t.query, t.output.tool_calls, t.output.response, (t.output.usage, ())) for t in turns}
    assert by_case == {c.case_id: expected(c) for c in CASES}


def test_the_exports_are_otlp_json_as_a_collector_writes_it(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = record("openai_v2_log_events", monkeypatch, CASES[:1]).lines()
    spans_line, logs_line = (json.loads(line) for line in lines)
    [chat, *_] = spans_line["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert len(chat["traceId"]) == 32 and len(chat["spanId"]) == 16 and chat["kind"] == 3  # hex ids, CLIENT
    tokens = {a["key"]: a["value"] for a in chat["attributes"]}["gen_ai.usage.input_tokens"]
    assert tokens == {"intValue": "30"}  # 64-bit ints are strings
    records = logs_line["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    user = next(r for r in records if r["eventName"] == "gen_ai.user.message")  # the first model call's
    assert user["eventName"] == "gen_ai.user.message"
    assert user["body"] == {
        "kvlistValue": {"values": [{"key": "content", "value": {"stringValue": "Where is order 7?"}}]}
    }
    assert user["spanId"] == chat["spanId"]


def write_eval_set(path: Path, queries: dict[str, str] | None = None) -> Path:
    """The five cases with their tool calls and answers expected; `queries` replaces some cases' query."""
    cases = [
        {
            "id": case.case_id,
            "query": (queries or {}).get(case.case_id, case.query),
            "expect": {
                "tool_calls": [{"name": step.name, "args": step.args} for step in case.steps],
                "response": case.answer,
            },
        }
        for case in CASES
    ]
    document = {
        "evalward": 1,
        "eval_set_id": "support",
        "metrics": ["trajectory_exact", "response_exact"],
        "cases": cases,
    }
    path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")  # JSON is YAML
    return path


def import_traces(tmp_path: Path, traces: Path, evals: Path, *extra: str) -> Result:
    db = f"sqlite:///{tmp_path}/history.db"
    return CliRunner().invoke(
        import_traces_command, [str(traces), "--eval-set", str(evals), "--db", db, "--run-id", "r1", *extra]
    )


def warnings_of(result: Result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("warning: ")]


@pytest.mark.parametrize("name", ["openinference", "openllmetry", "openai_v2_span_only", "openai_v2_log_events"])
def test_import_traces_passes_all_five_cases_without_a_warning(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    traces = record(name, monkeypatch).write(tmp_path / "telemetry.jsonl")
    result = import_traces(tmp_path, traces, write_eval_set(tmp_path / "support.evalward.yaml"))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["PASSED: 5 passed, 0 failed, 0 errors", "run id: r1"]
    assert warnings_of(result) == []


CASE_IDS = sorted(case.case_id for case in CASES)  # warnings come by case id

NOTHING_READABLE = (
    "its 2 chat span(s) carry no readable message content, so the query, the tool calls and the answer are "
    f"unknown: {CAPTURE_HINT}"
)
NO_QUERY_NOR_ANSWER = (
    "its spans do not record the user query or the text of the model's final answer, so the query cannot be "
    f"checked against the eval case's: {CAPTURE_HINT}"
)


@pytest.mark.parametrize(
    ("name", "with_logs", "warning"),
    [
        # openai-v2 with content capture off: its default conventions still log the tool names (no arguments).
        ("openai_v2_no_content", True, NO_QUERY_NOR_ANSWER),
        ("openai_v2_latest_no_content", True, NOTHING_READABLE),
        # Content captured as log records, but only the spans exported.
        ("openai_v2_log_events", False, NOTHING_READABLE),
    ],
)
def test_spans_without_content_are_a_warning_naming_each_case(
    name: str, with_logs: bool, warning: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    traces = record(name, monkeypatch).write(tmp_path / "telemetry.jsonl", with_logs=with_logs)
    result = import_traces(tmp_path, traces, write_eval_set(tmp_path / "support.evalward.yaml"))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == "FAILED: 0 passed, 5 failed, 0 errors"
    assert warnings_of(result) == [f"warning: case {case_id!r} turn 0: {warning}" for case_id in CASE_IDS]


def test_a_changed_query_makes_its_case_an_error_with_a_warning_naming_both_queries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    traces = record("openllmetry", monkeypatch).write(tmp_path / "telemetry.jsonl")
    evals = write_eval_set(tmp_path / "support.evalward.yaml", {"order_status": "Where is order 8?"})
    mismatch = (
        'the recording answers another question: it was recorded with the query "Where is order 7?", '
        'the eval case asks "Where is order 8?"'
    )

    result = import_traces(tmp_path, traces, evals)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == "FAILED: 4 passed, 0 failed, 1 errors"
    assert warnings_of(result) == [
        f"warning: case 'order_status' turn 0: {mismatch}; the turn is scored as an error "
        "(--query-mismatch warn scores it anyway)"
    ]
    with open_store(f"sqlite:///{tmp_path}/history.db") as store:
        run = store.load_run("r1")
    [case] = [c for c in run.cases if c.case_id == "order_status"]
    assert case.error is not None and (case.error.kind, case.error.message) == ("agent_error", mismatch)

    warned = import_traces(tmp_path, traces, evals, "--query-mismatch", "warn", "--run-id", "r2")
    assert warned.exit_code == 0, warned.output
    assert warned.stdout.splitlines()[0] == "PASSED: 5 passed, 0 failed, 0 errors"
    assert warnings_of(warned) == [
        f"warning: case 'order_status' turn 0: {mismatch}; scored anyway (--query-mismatch warn)"
    ]


def test_a_query_that_differs_only_in_whitespace_or_unicode_form_is_the_same_question() -> None:
    assert same_query("Where is order 7?", "  Where is\norder  7?\n")  # a YAML block scalar's newline
    assert same_query("résumé", "re\u0301sume\u0301")  # NFD and NFC
    assert not same_query("Where is order 7?", "where is order 7?")
    assert not same_query("Where is order 7?", "Where is order 8?")


def test_log_records_whose_spans_are_missing_are_counted_in_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The refund case's spans are lost (another exporter, a dropped batch); its 8 log records stay."""
    telemetry = record("openai_v2_log_events", monkeypatch)
    telemetry.drop_spans("refund")
    traces = telemetry.write(tmp_path / "telemetry.jsonl")
    result = import_traces(tmp_path, traces, write_eval_set(tmp_path / "support.evalward.yaml"))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == "FAILED: 4 passed, 0 failed, 1 errors"
    assert warnings_of(result)[0] == (
        "warning: 8 OTLP log record(s) belong to no span of the file (no span id, or their span is missing): "
        "the message content they may hold is not read"
    )
