"""Read one file into values plus positions: JSON, JSONL or YAML, chosen as follows.

1. `.yaml` / `.yml` → YAML; `.jsonl` → JSONL (one JSON value per non-blank line).
2. Anything else whose first non-blank character is `{` or `[` → JSON; if `json.loads` stops with
   "Extra data" and every non-blank line is a JSON value of its own, the file is JSONL after all.
3. Anything else → YAML, unless the name ends in `.json` (then the JSON syntax error is reported).

The bytes are read by `evalward.reading` (regular files only, size-capped, UTF-8 without NUL characters).
Syntax errors become `FileProblem`s with the line and column where the parser stopped; a JSONL file
reports every bad line, not just the first.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from evalward.errors import EvalFileError, FileProblem
from evalward.loaders.positions import (
    DEFAULT_LIMITS,
    PathKey,
    PositionIndex,
    StructureError,
    StructureProblem,
    format_json_path,
    index_json,
)
from evalward.reading import UTF8_BYTE_ORDER_MARK, decode_text, read_file_bytes

DocumentKind = Literal["json", "jsonl", "yaml"]


@dataclass
class Document:
    """A parsed file: its values, where each value starts, and the syntax it was written in."""

    path: str
    data: Any
    index: PositionIndex
    kind: DocumentKind


class DocumentError(Exception):
    """The file could not be parsed; `problems` says where and why."""

    def __init__(self, problems: list[FileProblem]) -> None:
        super().__init__("; ".join(p.render() for p in problems))
        self.problems = problems


@dataclass(frozen=True)
class SourceText:
    """A file's text as read, and what reading part of it again later needs (`loaders.indexed_cases`)."""

    path: Path
    shown: str
    text: str
    offset: int
    """Bytes in the file before `text[0]`: 3 after a UTF-8 byte order mark, else 0."""
    signature: tuple[int, int, int]
    """(size, modification time in ns, inode) when read: a file that no longer matches has changed."""

    @property
    def suffix(self) -> str:
        return _suffix(self.path)


def read_document(path: Path, shown: str) -> Document:
    """Parse `path` (reported as `shown`); raise DocumentError with every syntax problem found."""
    return parse_source(read_source(path, shown))


def read_source(path: Path, shown: str) -> SourceText:
    """The text of `path` (`evalward.reading`'s checks); DocumentError when unreadable or empty."""
    try:
        raw = read_file_bytes(path, shown)
        offset = len(UTF8_BYTE_ORDER_MARK) if raw.startswith(UTF8_BYTE_ORDER_MARK) else 0
        text = decode_text(raw, shown)
    except EvalFileError as exc:
        raise DocumentError(exc.problems) from None
    try:
        status = path.stat()
        signature = (status.st_size, status.st_mtime_ns, status.st_ino)
    except OSError:  # gone right after it was read: nothing read later can match it
        signature = (-1, -1, -1)
    del raw  # the text is all that is kept: at most one copy of a large file at a time
    # `not text.strip()` would copy the whole text to ask whether it is blank.
    if not text or text.isspace():
        raise DocumentError([FileProblem(path=shown, message="the file is empty", expected="an eval file")])
    return SourceText(path, shown, text, offset, signature)


def parse_source(source: SourceText) -> Document:
    """Parse the text read by `read_source`; raise DocumentError with every syntax problem found."""
    try:
        return parse_text(source.text, source.shown, suffix=source.suffix)
    except RecursionError:
        raise DocumentError(
            [
                FileProblem(
                    path=source.shown, message="values are nested too deeply to read", expected="a shallower document"
                )
            ]
        ) from None


def parse_text(text: str, shown: str, *, suffix: str = "") -> Document:
    """Parse already-decoded text; `suffix` (e.g. `.yaml`) picks the syntax as `read_document` does.

    Values must stay within `positions.StructureLimits` (nesting, count, integer digits, YAML aliases) and
    no object may repeat a key; each breach is a problem at its line and column."""
    try:
        return _parse_text(text, shown, suffix)
    except StructureError as exc:
        raise DocumentError([structure_problem(shown, problem) for problem in exc.problems]) from None


def structure_problem(shown: str, problem: StructureProblem) -> FileProblem:
    return FileProblem(
        path=shown,
        message=problem.message,
        line=problem.position.line,
        column=problem.position.column,
        json_path=format_json_path(problem.path) if problem.path is not None else None,
        expected=problem.expected,
        found=problem.found,
    )


class IntegerTooLong(ValueError):
    """Raised from inside `json.loads` (by `bounded_int`); the scan of the same text then says where the
    integer is."""


def bounded_int(digits: str) -> int:
    """`int(digits)`, or IntegerTooLong beyond `StructureLimits.max_integer_digits` digits."""
    # Before `int()`: converting a huge integer is quadratic, and beyond 4,300 digits a ValueError.
    if len(digits) > DEFAULT_LIMITS.max_integer_digits:
        raise IntegerTooLong(digits[:20])
    return int(digits)


def _load_json(text: str, *, prefix: PathKey = (), first_line: int = 1) -> Any:
    """`json.loads` with integers bounded; an over-long integer is reported where the scan finds it."""
    try:
        return json.loads(text, parse_int=bounded_int)
    except (IntegerTooLong, RecursionError):
        # The scan stops at the same integer, or at the depth limit long before recursion runs out.
        index_json(text, prefix=prefix, first_line=first_line)
        raise


def _parse_text(text: str, shown: str, suffix: str) -> Document:
    if suffix in (".yaml", ".yml"):
        return _parse_yaml(text, shown)
    if suffix == ".jsonl":
        return _parse_jsonl(text, shown)
    if text.lstrip()[:1] in ("{", "["):
        try:
            data = _load_json(text)
        except json.JSONDecodeError as exc:
            if exc.msg == "Extra data":
                try:
                    return _parse_jsonl(text, shown)
                except DocumentError:
                    pass
            raise DocumentError([json_problem(shown, exc)]) from None
        return Document(path=shown, data=data, index=index_json(text), kind="json")
    if suffix == ".json":
        try:
            _load_json(text)
        except json.JSONDecodeError as exc:
            raise DocumentError([json_problem(shown, exc)]) from None
    return _parse_yaml(text, shown)


def _suffix(path: Path) -> str:
    return path.suffix.lower()


def json_problem(shown: str, exc: json.JSONDecodeError, *, line_offset: int = 0) -> FileProblem:
    return FileProblem(
        path=shown,
        message=f"invalid JSON: {exc.msg}",
        line=exc.lineno + line_offset,
        column=exc.colno,
        expected="valid JSON",
    )


def _parse_jsonl(text: str, shown: str) -> Document:
    records: list[Any] = []
    index = PositionIndex()
    problems: list[FileProblem] = []
    for line_number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        prefix: PathKey = (len(records),)
        try:
            value = _load_json(line, prefix=prefix, first_line=line_number)
        except json.JSONDecodeError as exc:
            problems.append(json_problem(shown, exc, line_offset=line_number - 1))
            continue
        # The value budget is for the whole file, not each line.
        remaining = dataclasses.replace(DEFAULT_LIMITS, max_values=DEFAULT_LIMITS.max_values - len(index.values))
        line_index = index_json(line, prefix=prefix, first_line=line_number, limits=remaining)
        # Each line's offsets belong to that line's own line map: store them as positions.
        index.values.update((path, line_index.value_at(path)) for path in line_index.values)  # type: ignore[misc]
        index.keys.update((path, line_index.key_at(path)) for path in line_index.keys)  # type: ignore[misc]
        records.append(value)
    if problems:
        raise DocumentError(problems)
    return Document(path=shown, data=records, index=index, kind="jsonl")


def _parse_yaml(text: str, shown: str) -> Document:
    # PyYAML (18 modules) is imported only when a YAML file is read.
    from evalward.loaders.yaml_document import parse_yaml  # start-up: YAML, only for YAML files

    return parse_yaml(text, shown)
