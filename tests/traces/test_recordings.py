"""`traces.recordings`: every recording source keyed by case, turn and repetition, and the lookup rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.traces.otlp_builders import export, multi_agent_turn

from evalward.errors import EvalFileError
from evalward.model import AgentOutput, CaseError, CaseResult, InvocationResult, RunResult, ToolCall
from evalward.run_json import render_json
from evalward.traces.recordings import RecordedError, Recordings, detect_kind, load_recordings


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_a_responses_jsonl_file_maps_case_turn_and_repetition(tmp_path: Path) -> None:
    lines = [
        {"case_id": "c1", "output": {"response": "hi", "tool_calls": [{"name": "f"}]}},
        {"case_id": "c1", "turn": 1, "output": "bye"},
        {"case_id": "c2", "eval_set_id": "s", "repetition": 2, "output": {"response": "x", "route": "refund"}},
    ]
    recordings = load_recordings(write(tmp_path / "r.jsonl", "\n".join(json.dumps(x) for x in lines)))
    assert recordings.kind == "responses_jsonl"
    assert recordings.lookup("c1", 0, 0) == AgentOutput(response="hi", tool_calls=[ToolCall(name="f")])
    assert recordings.lookup("c1", 1, 0) == AgentOutput(response="bye")
    # Unknown keys of an output are kept in `outputs`, as every runner does.
    found = recordings.lookup("c2", 0, 2, "s")
    assert isinstance(found, AgentOutput) and found.outputs == {"route": "refund"}


def test_every_bad_jsonl_line_is_reported_with_line_and_json_path(tmp_path: Path) -> None:
    text = '{"case_id": "c1", "output": "a"}\n{"case_id": "c1", "output": "b"}\n{"case": "x", "output": 1}\n'
    with pytest.raises(EvalFileError) as caught:
        load_recordings(write(tmp_path / "bad.jsonl", text))
    rendered = [p.render() for p in caught.value.problems]
    assert rendered[0] == (
        f"{tmp_path}/bad.jsonl:2: the same case, turn and repetition is recorded twice; case 'c1'; "
        "expected one line per (eval_set_id, case_id, turn, repetition); found turn 0, repetition 0 again"
    )
    assert any(r.startswith(f"{tmp_path}/bad.jsonl:3: Field required; at $.case_id") for r in rendered)
    assert any("at $.case" in r and "Extra inputs are not permitted" in r for r in rendered)


def _run_with_error() -> RunResult:
    ok = CaseResult(
        eval_set_id="s",
        case_id="ok",
        status="passed",
        invocations=[
            InvocationResult(turn=0, query="q0", output=AgentOutput(response="r0")),
            InvocationResult(turn=1, query="q1", output=AgentOutput(response="r1")),
        ],
    )
    broken = CaseResult(
        eval_set_id="s",
        case_id="broken",
        status="error",
        invocations=[InvocationResult(turn=0, query="q", output=AgentOutput(response="first"))],
        error=CaseError(kind="timeout", message="turn 1 did not finish within 5s", turn=1),
    )
    return RunResult(run_id="r1", passed=False, cases=[ok, broken])


def test_a_run_json_replays_every_output_and_its_recorded_failures(tmp_path: Path) -> None:
    recordings = load_recordings(write(tmp_path / "run.json", render_json(_run_with_error())))
    assert recordings.kind == "run_json"
    assert recordings.lookup("ok", 1, 0, "s") == AgentOutput(response="r1")
    assert recordings.queries[("s", "ok", 1, 0)] == "q1"
    assert recordings.lookup("broken", 0, 0, "s") == AgentOutput(response="first")
    assert recordings.lookup("broken", 1, 0, "s") == RecordedError(
        kind="timeout", message="recorded failure: turn 1 did not finish within 5s"
    )


def test_otel_traces_become_recordings_with_their_notes(tmp_path: Path) -> None:
    path = write(tmp_path / "t.json", json.dumps(export(multi_agent_turn("1" * 32, case_id="refund_42"))))
    recordings = load_recordings(path)
    assert recordings.kind == "otel"
    found = recordings.lookup("refund_42", 0, 0)
    assert isinstance(found, AgentOutput)
    assert [c.signature() for c in found.tool_calls] == [
        'transfer_to_agent(agent_name="billing")',
        "refund(invoice=42)",
    ]
    assert recordings.queries[(None, "refund_42", 0, 0)] == "Refund invoice 42"


def test_lookup_falls_back_to_set_less_entries_and_to_a_lone_repetition_zero() -> None:
    recordings = Recordings(source="x", kind="responses_jsonl")
    recordings.add((None, "c", 0, 0), AgentOutput(response="any set"))
    recordings.add(("s", "d", 0, 0), AgentOutput(response="d0"))
    recordings.add(("s", "d", 0, 1), AgentOutput(response="d1"))
    assert recordings.lookup("c", 0, 0, "s") == AgentOutput(response="any set")
    # Only repetition 0 recorded for c: it replays for every repetition.
    assert recordings.lookup("c", 0, 3, "s") == AgentOutput(response="any set")
    # d has repetitions 0 and 1: repetition 2 must be recorded itself.
    assert recordings.lookup("d", 0, 1, "s") == AgentOutput(response="d1")
    assert recordings.lookup("d", 0, 2, "s") is None
    # No eval set on the request: the case is found under its only set.
    assert recordings.lookup("d", 0, 0) == AgentOutput(response="d0")
    assert recordings.lookup("d", 1, 0, "s") is None
    assert recordings.case_keys() == [(None, "c"), ("s", "d")]


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ('{"schema_version": 1, "run_id": "r", "cases": []}', "run_json"),
        ('{"resourceSpans": []}', "otel"),
        ('{"resourceSpans": []}\n{"resourceSpans": []}', "otel"),
        ('{"case_id": "a", "output": "x"}\n{"case_id": "b", "output": "y"}', "responses_jsonl"),
        ('{"eval_cases": []}', None),
        ("", None),
        ("garbage", None),
    ],
)
def test_sources_are_detected_by_content(text: str, kind: str | None) -> None:
    assert detect_kind(text) == kind


def test_an_unknown_or_missing_file_is_a_file_problem(tmp_path: Path) -> None:
    with pytest.raises(EvalFileError, match="not a recording evalward can replay"):
        load_recordings(write(tmp_path / "x.json", '{"eval_cases": []}'))
    with pytest.raises(EvalFileError, match="recording file not found"):
        load_recordings(tmp_path / "missing.json")


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (render_json(_run_with_error()), "run_json"),
        ('{"resourceSpans": []}', "otel"),
        ('{"resourceSpans": []}\n\n{"resourceSpans": []}\n', "otel"),
        (json.dumps(export(multi_agent_turn("1" * 32)), indent=2), "otel"),
        ('\n\n  {"case_id": "a", "output": "x"}\n\n', "responses_jsonl"),
        ('{"case_id": "a", "output": "x"}\n{"case_id": "b", "output": "y"}', "responses_jsonl"),
        ('{"eval_cases": []}', "other content"),
        ("[1]\n[2]\n", "other content"),
        ("garbage\nmore", "other content"),
        ("\n  \n", "empty file"),
    ],
)
def test_a_file_is_read_as_what_its_whole_text_is(tmp_path: Path, text: str, kind: str) -> None:
    # Files are sniffed from their first lines (JSON lines are never read whole): the same verdict as
    # `detect_kind` on the whole text.
    path = write(tmp_path / "recording", text)
    if kind in ("other content", "empty file"):
        with pytest.raises(EvalFileError) as caught:
            load_recordings(path)
        assert caught.value.problems[0].found == kind
        return
    recordings = load_recordings(path)
    assert (recordings.kind, detect_kind(text)) == (kind, kind)
    recordings.close()
