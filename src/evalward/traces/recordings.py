"""Recorded agent outputs, keyed by case, turn and repetition: what `replay:FILE` plays back.

Sources (detected by content, not by file name):
1. an evalward run JSON (`evalward run --json`; `schema_version` + `cases`): every turn's `output`; a case
   that stopped with an error replays that error at its turn. It is read whole and kept in memory
   (`Recordings`), as a run JSON is one document;
2. JSON lines of agent responses, one per turn: `{"case_id": "c1", "turn": 0, "output": {...}}` with
   optional `eval_set_id` and `repetition` (`turn` defaults to 0, `repetition` to 0); `output` is an
   `AgentOutput` (or a string, the response alone). Read line by line and indexed (`traces.responses`):
   memory keeps ~33 bytes a turn, and a lookup reads its line back;
3. OpenTelemetry traces (OTLP JSON, OTLP JSON lines, Jaeger JSON), with the OTLP log records exported
   beside them, mapped by `traces.genai`. JSON lines are read line by line; a single OTLP or Jaeger document
   is parsed whole (JSON gives no way to read a part of it). Either way the spans, log records and turns go
   through temporary files (`traces.trace_turns`), not memory.

Which source a file is: its first non-blank line, when it is JSON and more lines follow (JSON lines: an
OTLP export of spans or logs → traces, a `case_id` object → responses); otherwise the whole text, as one
JSON document.

Lookup (`RecordingSet.lookup`): the entry for (eval set, case, turn, repetition), else one recorded without
an eval set id; a case recorded only as repetition 0 replays that recording for every repetition (so
`--repeat` re-scores one recording), while a case with several recorded repetitions must have each one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

from evalward.errors import EvalFileError, FileProblem
from evalward.model import AgentOutput, CaseError, RunResult
from evalward.reading import iter_text_lines, open_regular_file, read_text_file
from evalward.run_json import load_run_json
from evalward.traces.genai import TraceOptions
from evalward.traces.otlp import Record, is_jaeger_document, is_otlp_document, read_records, records_from_lines
from evalward.traces.recording_set import Key, RecordedError, RecordingSet, Row, SourceKind
from evalward.traces.responses import index_responses_jsonl
from evalward.traces.row_index import Hasher
from evalward.traces.trace_turns import recordings_from_records

__all__ = [
    "Key",
    "RecordedError",
    "RecordingSet",
    "Recordings",
    "Row",
    "SourceKind",
    "detect_kind",
    "load_recordings",
    "recordings_from_run",
]


@dataclass
class Recordings(RecordingSet):
    """Recorded outputs (or failures) held in memory, per (eval set, case, turn, repetition)."""

    source: str
    kind: SourceKind
    entries: dict[Key, AgentOutput | RecordedError] = field(default_factory=dict)
    queries: dict[Key, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def add(self, key: Key, value: AgentOutput | RecordedError, query: str | None = None) -> None:
        self.entries[key] = value
        if query is not None:
            self.queries[key] = query

    def __len__(self) -> int:
        return len(self.entries)

    def close(self) -> None:
        """Nothing to release: the recordings are in memory."""

    def has_case(self, case_id: str) -> bool:
        return any(key[1] == case_id for key in self.entries)

    def case_ids(self) -> Iterator[str]:
        return iter(dict.fromkeys(key[1] for key in self.entries))

    def case_keys(self) -> list[tuple[str | None, str]]:
        seen: dict[tuple[str | None, str], None] = {}
        for set_id, case_id, _, _ in self.entries:
            seen.setdefault((set_id, case_id), None)
        return list(seen)

    def _get(self, key: Key) -> Row | None:
        found = self.entries.get(key)
        if found is None:
            return None
        value = found.model_copy(deep=True) if isinstance(found, AgentOutput) else found
        return Row(key, value, self.queries.get(key))

    def _owners(self, case_id: str) -> set[str | None]:
        return {k[0] for k in self.entries if k[1] == case_id}

    def _only_repetition_zero(self, case_id: str, set_ids: tuple[str | None, ...]) -> bool:
        return {k[3] for k in self.entries if k[1] == case_id and k[0] in set_ids} == {0}


def recordings_from_run(run: RunResult, *, source: str) -> Recordings:
    """Every turn's output of a stored or exported run; errored cases replay their error."""
    recordings = Recordings(source=source, kind="run_json")
    for case in run.cases:
        for invocation in case.invocations:
            if invocation.output is not None:
                recordings.add(
                    (case.eval_set_id, case.case_id, invocation.turn, case.repetition),
                    invocation.output,
                    invocation.query,
                )
        error: CaseError | None = case.error
        if error is not None and error.kind != "metric_error":
            turn = error.turn if error.turn is not None else len([i for i in case.invocations if i.output])
            recordings.add(
                (case.eval_set_id, case.case_id, turn, case.repetition),
                RecordedError(kind=error.kind, message=f"recorded failure: {error.message}"),
            )
    return recordings


def detect_kind(text: str) -> SourceKind | None:
    """Which recording source `text` is (see the module docstring), or None."""
    stripped = text.lstrip()
    if not stripped:
        return None
    try:
        whole: Any = json.loads(stripped)
    except json.JSONDecodeError:
        whole = None
    if whole is not None:
        if is_otlp_document(whole) or is_jaeger_document(whole):
            return "otel"
        if isinstance(whole, dict) and "schema_version" in whole and "cases" in whole:
            return "run_json"
        if isinstance(whole, dict) and "case_id" in whole:
            return "responses_jsonl"
        return None
    first_line = next((line for line in text.splitlines() if line.strip()), "")
    try:
        first_value: Any = json.loads(first_line)
    except json.JSONDecodeError:
        return None
    if is_otlp_document(first_value):
        return "otel"
    if isinstance(first_value, dict) and "case_id" in first_value:
        return "responses_jsonl"
    return None


def load_recordings(path: str | Path, *, options: TraceOptions | None = None, hasher: Hasher = hash) -> RecordingSet:
    """Read a recording file of any supported source; `EvalFileError` names the file and what was found.

    Indexed recordings keep a file open: `close()` them when done (or let them be collected)."""
    shown = str(path)
    file = Path(path)
    if not file.is_file():
        raise EvalFileError([FileProblem(shown, "recording file not found", expected="an existing file")])
    opened: IO[bytes] | None = open_regular_file(file, shown)
    try:
        assert opened is not None
        kind = _kind_of_lines(opened, shown)
        text: str | None = None
        if kind == "whole":
            text = read_text_file(file, shown)
            kind = detect_kind(text) or "other"
        if kind == "responses_jsonl":
            recordings = index_responses_jsonl(opened, shown, hasher=hasher)
            opened = None  # the recordings read from it from now on
            return recordings
        if kind == "otel":
            if text is not None:
                records: Iterable[Record] = read_records(text, source=shown)
            else:
                lines = ((line.number, line.text) for line in iter_text_lines(opened, shown))
                records = records_from_lines(lines, source=shown)
            return recordings_from_records(records, source=shown, options=options, hasher=hasher)
        if kind == "run_json":
            assert text is not None
            return recordings_from_run(load_run_json(text, source=shown), source=shown)
        raise EvalFileError(
            [
                FileProblem(
                    shown,
                    "not a recording evalward can replay",
                    expected="an evalward run JSON, JSON lines of {case_id, turn, output}, or OpenTelemetry "
                    "traces (OTLP JSON or JSON lines, Jaeger JSON)",
                    found="empty file" if text is not None and not text.strip() else "other content",
                )
            ]
        )
    finally:
        if opened is not None:
            opened.close()


def _kind_of_lines(opened: IO[bytes], shown: str) -> SourceKind | Literal["other", "whole"]:
    """The source the first non-blank line says the file is, when that line is JSON (module docstring);
    "whole" when only the whole text can tell (the file is one document spread over lines, or empty)."""
    lines = (line for line in iter_text_lines(opened, shown) if line.text.strip())
    first = next(lines, None)
    if first is None:
        return "whole"
    try:
        value: Any = json.loads(first.text)
    except json.JSONDecodeError:
        return "whole"
    if next(lines, None) is not None:
        if is_otlp_document(value):
            return "otel"
        if isinstance(value, dict) and "case_id" in value:
            return "responses_jsonl"
        return "other"
    # One JSON document on one line: what `detect_kind` says of it. A run JSON or a trace document is then
    # read whole, so that its problems are located in the whole text.
    kind = detect_kind(first.text)
    if kind == "responses_jsonl":
        return kind
    return "other" if kind is None else "whole"
