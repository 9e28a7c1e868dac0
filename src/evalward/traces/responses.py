"""JSON lines of agent responses, indexed as they are read: one line in memory at a time, 33 bytes a turn kept.

A line is `{"case_id": "c1", "turn": 0, "output": {...}}` with optional `eval_set_id`, `repetition` and
`query` (`turn` and `repetition` default to 0); `output` is an `AgentOutput`, or a string (the response
alone). The file is read line by line (`reading.iter_text_lines`), each line validated once, and every
problem of the file reported at once with its line number, as when the file was read whole: a malformed
line (its JSON error, or each validation error with its JSON path), and a (eval set, case, turn,
repetition) recorded a second time (at the later line). Memory keeps the line's place in a `RowIndex`;
lookups read the line back (`IndexedRecordings`).

Duplicates are found after the pass, among the rows sharing a key hash (read back and compared), and their
line numbers by a second pass over the file, which only a file with duplicates (a failing one) pays for.
"""

from __future__ import annotations

import json
from typing import IO

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalward.errors import EvalFileError, FileProblem
from evalward.model import AgentOutput
from evalward.reading import iter_text_lines
from evalward.traces.recordings_index import IndexedRecordings, Row
from evalward.traces.row_index import Hasher, Key, RowIndex

EXPECTED_LINE = '{"case_id", "turn"?, "repetition"?, "eval_set_id"?, "output": {...}}'


class ResponseLine(BaseModel):
    """One line of a responses JSONL file."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    case_id: str
    eval_set_id: str | None = None
    turn: int = Field(default=0, ge=0)
    repetition: int = Field(default=0, ge=0)
    query: str | None = None
    output: AgentOutput | str

    @property
    def key(self) -> Key:
        return (self.eval_set_id, self.case_id, self.turn, self.repetition)


def decode_response_line(data: bytes) -> Row:
    """A line's bytes as a `Row` (parsed as when it was first read, so the output is the same)."""
    parsed = ResponseLine.model_validate(json.loads(data))
    output = parsed.output if isinstance(parsed.output, AgentOutput) else AgentOutput(response=parsed.output)
    return Row(parsed.key, output, parsed.query)


def index_responses_jsonl(file: IO[bytes], source: str, *, hasher: Hasher = hash) -> IndexedRecordings:
    """Index a responses JSONL `file` (open, binary; kept open by the result); `EvalFileError` lists every
    problem of the file (module docstring)."""
    index = RowIndex(hasher)
    problems: list[FileProblem] = []
    for line in iter_text_lines(file, source):
        if not line.text.strip():
            continue
        parsed = _validated(line.text, line.number, source, problems)
        if parsed is not None:
            index.add(parsed.key, line.offset, line.length)
    index.finish()
    recordings = IndexedRecordings(
        source=source, kind="responses_jsonl", file=file, index=index, decode=decode_response_line
    )
    problems += _repeated_keys(recordings, file, source)
    if problems:
        recordings.close()
        problems.sort(key=lambda problem: problem.line or 0)
        raise EvalFileError(problems)
    return recordings


def _validated(text: str, number: int, source: str, problems: list[FileProblem]) -> ResponseLine | None:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        problems.append(FileProblem(source, f"not valid JSON: {exc.msg}", line=number, column=exc.colno))
        return None
    try:
        return ResponseLine.model_validate(data)
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
                    expected=EXPECTED_LINE,
                )
            )
        return None


def _repeated_keys(recordings: IndexedRecordings, file: IO[bytes], source: str) -> list[FileProblem]:
    """A problem at each line that records a key an earlier line recorded."""
    repeated: dict[int, Key] = {}  # offset → key
    for rows in recordings.index.key_hash_groups():
        first_seen: set[Key] = set()
        for row in rows:
            key = recordings.read(row).key
            if key in first_seen:
                repeated[recordings.index.location(row)[0]] = key
            first_seen.add(key)
    if not repeated:
        return []
    problems = []
    for line in iter_text_lines(file, source):
        found = repeated.get(line.offset)
        if found is not None:
            _, case_id, turn, repetition = found
            problems.append(
                FileProblem(
                    source,
                    "the same case, turn and repetition is recorded twice",
                    line=line.number,
                    case_id=case_id,
                    expected="one line per (eval_set_id, case_id, turn, repetition)",
                    found=f"turn {turn}, repetition {repetition} again",
                )
            )
    return problems
