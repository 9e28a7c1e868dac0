"""Recorded agent outputs, keyed by case, turn and repetition: what `replay:FILE` plays back.

Sources (detected by content, not by file name):
1. an evalward run JSON (`evalward run --json`; `schema_version` + `cases`): every turn's `output`; a case
   that stopped with an error replays that error at its turn;
2. JSON lines of agent responses, one per turn: `{"case_id": "c1", "turn": 0, "output": {...}}` with
   optional `eval_set_id` and `repetition` (`turn` defaults to 0, `repetition` to 0); `output` is an
   `AgentOutput` (or a string, the response alone);
3. OpenTelemetry traces (OTLP JSON, OTLP JSON lines, Jaeger JSON), mapped by `traces.genai`.

Lookup (`Recordings.lookup`): the entry for (eval set, case, turn, repetition), else one recorded without
an eval set id; a case recorded only as repetition 0 replays that recording for every repetition (so
`--repeat` re-scores one recording), while a case with several recorded repetitions must have each one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalward.errors import EvalFileError, FileProblem
from evalward.model import AgentOutput, CaseError, RunResult
from evalward.reading import read_text_file
from evalward.traces.genai import TracedTurn, TraceOptions, turns_from_spans
from evalward.traces.otlp import is_jaeger_document, is_otlp_document, read_spans

SourceKind = Literal["run_json", "responses_jsonl", "otel"]

Key = tuple[str | None, str, int, int]
"""(eval_set_id or None, case_id, turn, repetition)."""


@dataclass(frozen=True)
class RecordedError:
    """A turn that failed when it was recorded; replaying it fails the same way."""

    kind: str
    message: str


@dataclass
class Recordings:
    """Recorded outputs (or failures) per (eval set, case, turn, repetition)."""

    source: str
    kind: SourceKind
    entries: dict[Key, AgentOutput | RecordedError] = field(default_factory=dict)
    queries: dict[Key, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def add(self, key: Key, value: AgentOutput | RecordedError, query: str | None = None) -> None:
        self.entries[key] = value
        if query is not None:
            self.queries[key] = query

    def case_keys(self) -> list[tuple[str | None, str]]:
        """(eval set, case) pairs recorded, in first-seen order."""
        seen: dict[tuple[str | None, str], None] = {}
        for set_id, case_id, _, _ in self.entries:
            seen.setdefault((set_id, case_id), None)
        return list(seen)

    def lookup(
        self, case_id: str, turn: int, repetition: int, eval_set_id: str | None = None
    ) -> AgentOutput | RecordedError | None:
        """The recording for a turn (fallback rules in the module docstring), or None."""
        for set_id in [eval_set_id, None] if eval_set_id is not None else [None]:
            found = self.entries.get((set_id, case_id, turn, repetition))
            if found is not None:
                return found
        if eval_set_id is None:
            # The request named no eval set: accept the case under any set, when only one set has it.
            owners = {k[0] for k in self.entries if k[1] == case_id}
            if len(owners) == 1:
                found = self.entries.get((next(iter(owners)), case_id, turn, repetition))
                if found is not None:
                    return found
        if repetition > 0:
            recorded_reps = {k[3] for k in self.entries if k[1] == case_id and k[0] in (eval_set_id, None)}
            if recorded_reps == {0}:
                return self.lookup(case_id, turn, 0, eval_set_id)
        return None


class _ResponseLine(BaseModel):
    """One line of a responses JSONL file."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    case_id: str
    eval_set_id: str | None = None
    turn: int = Field(default=0, ge=0)
    repetition: int = Field(default=0, ge=0)
    query: str | None = None
    output: AgentOutput | str


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


def recordings_from_turns(turns: list[TracedTurn], *, source: str) -> Recordings:
    recordings = Recordings(source=source, kind="otel")
    for traced in turns:
        key = (traced.eval_set_id, traced.case_id, traced.turn, traced.repetition)
        if key in recordings.entries:
            recordings.notes.append(
                f"case {traced.case_id!r} turn {traced.turn} repetition {traced.repetition} was recorded "
                f"more than once; trace {traced.trace_id} replaces the earlier one"
            )
        recordings.add(key, traced.output, traced.query)
        for note in traced.notes:
            recordings.notes.append(f"case {traced.case_id!r} turn {traced.turn}: {note}")
    return recordings


def recordings_from_jsonl(text: str, *, source: str) -> Recordings:
    """A responses JSONL file; every malformed line is reported at once with its line number."""
    recordings = Recordings(source=source, kind="responses_jsonl")
    problems: list[FileProblem] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(FileProblem(source, f"not valid JSON: {exc.msg}", line=number, column=exc.colno))
            continue
        try:
            parsed = _ResponseLine.model_validate(data)
        except ValidationError as exc:
            for error in exc.errors(include_url=False):
                path = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error["loc"])
                problems.append(
                    FileProblem(
                        source,
                        error["msg"],
                        line=number,
                        json_path=path,
                        case_id=data.get("case_id") if isinstance(data, dict) else None,
                        expected='{"case_id", "turn"?, "repetition"?, "eval_set_id"?, "output": {...}}',
                    )
                )
            continue
        output = parsed.output if isinstance(parsed.output, AgentOutput) else AgentOutput(response=parsed.output)
        key = (parsed.eval_set_id, parsed.case_id, parsed.turn, parsed.repetition)
        if key in recordings.entries:
            problems.append(
                FileProblem(
                    source,
                    "the same case, turn and repetition is recorded twice",
                    line=number,
                    case_id=parsed.case_id,
                    expected="one line per (eval_set_id, case_id, turn, repetition)",
                    found=f"turn {parsed.turn}, repetition {parsed.repetition} again",
                )
            )
            continue
        recordings.add(key, output, parsed.query)
    if problems:
        raise EvalFileError(problems)
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


def load_recordings(path: str | Path, *, options: TraceOptions | None = None) -> Recordings:
    """Read a recording file of any supported source; `EvalFileError` names the file and what was found."""
    from evalward.report.json_report import load_run_json

    shown = str(path)
    file = Path(path)
    if not file.is_file():
        raise EvalFileError([FileProblem(shown, "recording file not found", expected="an existing file")])
    text = read_text_file(file, shown)
    kind = detect_kind(text)
    if kind == "run_json":
        return recordings_from_run(load_run_json(text, source=shown), source=shown)
    if kind == "responses_jsonl":
        return recordings_from_jsonl(text, source=shown)
    if kind == "otel":
        return recordings_from_turns(turns_from_spans(read_spans(text, source=shown), options), source=shown)
    raise EvalFileError(
        [
            FileProblem(
                shown,
                "not a recording evalward can replay",
                expected="an evalward run JSON, JSON lines of {case_id, turn, output}, or OpenTelemetry "
                "traces (OTLP JSON or JSON lines, Jaeger JSON)",
                found="empty file" if not text.strip() else "other content",
            )
        ]
    )
