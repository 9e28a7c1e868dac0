"""Recordings as they were read before they were indexed (evalward up to commit 9c4f104), kept as the oracle
the indexed readers are compared with: every output in a dict, the lookup rules scanning every key."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from pydantic import ValidationError

from evalward.errors import FileProblem
from evalward.model import AgentOutput
from evalward.traces.genai import TracedTurn
from evalward.traces.recordings import Key, RecordedError
from evalward.traces.responses import ResponseLine


@dataclass
class OldRecordings:
    entries: dict[Key, AgentOutput | RecordedError] = field(default_factory=dict)
    queries: dict[Key, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    problems: list[FileProblem] = field(default_factory=list)

    def add(self, key: Key, value: AgentOutput | RecordedError, query: str | None = None) -> None:
        self.entries[key] = value
        if query is not None:
            self.queries[key] = query

    def case_keys(self) -> list[tuple[str | None, str]]:
        seen: dict[tuple[str | None, str], None] = {}
        for set_id, case_id, _, _ in self.entries:
            seen.setdefault((set_id, case_id), None)
        return list(seen)

    def lookup(
        self, case_id: str, turn: int, repetition: int, eval_set_id: str | None = None
    ) -> AgentOutput | RecordedError | None:
        for set_id in [eval_set_id, None] if eval_set_id is not None else [None]:
            found = self.entries.get((set_id, case_id, turn, repetition))
            if found is not None:
                return found
        if eval_set_id is None:
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


def old_from_jsonl(text: str, *, source: str) -> OldRecordings:
    recordings = OldRecordings()
    problems = recordings.problems
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(FileProblem(source, f"not valid JSON: {exc.msg}", line=number, column=exc.colno))
            continue
        try:
            parsed = ResponseLine.model_validate(data)
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
    return recordings


def old_from_turns(turns: list[TracedTurn]) -> OldRecordings:
    recordings = OldRecordings()
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
