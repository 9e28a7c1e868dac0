"""Walk a large JSON or JSONL eval file one case at a time, checking it as the whole-file reader would.

`documents.parse_text` holds every value of a file at once (`json.loads`) and the position of each
(`positions.index_json`): hundreds of megabytes for a 100,000-case file. Here the text is walked once. The
top level is walked by hand (an object's members, or an array); each element of the case list (an ADK
file's `eval_cases`, the items of a top-level array, the lines of a JSONL file) is decoded on its own by the
`json` module's C decoder and handed to the caller, who maps it and lets it go.

The walk reports a file's problems as the whole-file reader does, problem for problem:
1. Syntax: the first error `json.loads` reports. When the walk meets anything unexpected, a decode of the
   whole text that keeps no objects (`_first_syntax_error`) finds that error. "Extra data" (a JSONL file
   named `.json`, perhaps) and anything that decode cannot settle raise `WholeFile`: the file is then read
   by the whole-file reader.
2. Structure limits and repeated keys, with the same limits. Each element (and each other top-level value)
   is decoded with a hook that notices a repeated key and with integers bounded, then measured (depth,
   count of values). An element that fails is indexed by `index_json` (at its line and column, JSON path and
   depth), whose problems are the whole-file reader's. As there, an exceeded limit is reported alone,
   unless a syntax error comes after it (the whole-file reader checks syntax first); repeated keys are
   reported together. Unlike there, the value limit (`max_values`) applies to each element and each other
   top-level value, not to the whole file: a file of many small cases is what this reader is for.
3. JSONL as `documents` reads it: lines split where `str.splitlines` splits them; every bad line reported,
   unless a structure problem stops the read first (then that problem alone).
"""

from __future__ import annotations

import json
import re
from array import array
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import Any

from evalward.errors import FileProblem
from evalward.loaders.documents import (
    DocumentError,
    IntegerTooLong,
    bounded_int,
    json_problem,
    structure_problem,
)
from evalward.loaders.positions import (
    DEFAULT_LIMITS,
    LimitExceeded,
    PathKey,
    Position,
    StructureError,
    StructureLimits,
    StructureProblem,
    index_json,
    repeated_key,
)

_SKIP = re.compile(r"[ \t\n\r]*")
_scan_string: Any = json.decoder.scanstring  # type: ignore[attr-defined]  # the C string scanner
# Where `str.splitlines` ends a line ("\r\n" counts once).
_LINE_BREAK = re.compile("\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
_JSONL_BLANKS = " \t"  # what may surround a JSONL record on its line (other whitespace ends the line)


@dataclass(frozen=True)
class Element:
    """One element of the case list: its value, JSON path, and where its text is."""

    path: PathKey
    position: int
    """Its index in the case list (the last step of `path`)."""
    value: Any
    start: int
    """Offset of its first character in the text."""
    end: int
    """Offset just after its last character."""
    line: int
    column: int


class WholeFile(Exception):
    """This file is for the whole-file reader (`documents.parse_text`): not a shape walked here, or a
    problem only that reader reports as it should be reported."""


class _Malformed(Exception):
    """The walk met text that is not JSON where it expected JSON."""


class _Stop(Exception):
    """A problem that ends the walk (the whole-file reader would stop there too)."""


class _Decoder:
    """Decodes one value with integers bounded, noticing whether any object in it repeats a key."""

    def __init__(self) -> None:
        self.repeated = False
        self._json = json.JSONDecoder(object_pairs_hook=self._object, parse_int=bounded_int)

    def _object(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        found = dict(pairs)
        if len(found) != len(pairs):
            self.repeated = True
        return found

    def at(self, text: str, offset: int) -> tuple[Any, int]:
        """The value starting at `offset`, and the offset after it."""
        self.repeated = False
        return self._json.raw_decode(text, offset)

    def whole(self, text: str) -> Any:
        """`text` as one value, as `json.loads` reads it (whitespace around it allowed)."""
        self.repeated = False
        return self._json.decode(text)


def may_exceed(text: str, start: int, end: int, depth: int, limits: StructureLimits) -> bool:
    """Whether the value in `text[start:end]`, `depth` levels deep, could exceed `limits` at all, counted in C:
    nesting to `max_depth` needs that many `[` or `{` characters, and every value takes a character. Nearly
    every case of an eval file is far from both, and then need not be walked (`exceeds`)."""
    openings = text.count("[", start, end) + text.count("{", start, end)
    return openings > limits.max_depth - depth - 1 or end - start > limits.max_values


def exceeds(value: Any, depth: int, limits: StructureLimits) -> bool:
    """Whether `value`, `depth` levels deep, holds an array or object at `limits.max_depth` or deeper, or more
    than `limits.max_values` values (as `index_json` counts them: every value, keys not included)."""
    count = 0
    stack = [(value, depth)]
    while stack:
        item, level = stack.pop()
        count += 1
        if count > limits.max_values:
            return True
        if isinstance(item, dict | list):
            if level >= limits.max_depth:
                return True
            stack.extend((child, level + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False


def _skip(text: str, offset: int) -> int:
    return _SKIP.match(text, offset).end()  # type: ignore[union-attr]  # `*` always matches


def _discard(_: object) -> None:
    return None


def _first_syntax_error(text: str, shown: str) -> DocumentError:
    """The problem `json.loads(text)` reports, found without keeping what it decodes; WholeFile when that
    is not a plain syntax error."""
    try:
        json.loads(text, object_pairs_hook=_discard, parse_int=_discard, parse_float=_discard)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":
            raise WholeFile from None  # documents may read it as JSONL
        return DocumentError([json_problem(shown, exc)])
    except RecursionError:
        raise WholeFile from None
    raise WholeFile  # the walk stumbled on valid JSON: the whole-file reader decides


class _Lines:
    """Line and column of offsets visited in increasing order, counting only the text in between."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._line = 1
        self._line_start = 0
        self._at = 0

    def at(self, offset: int) -> tuple[int, int]:
        newlines = self._text.count("\n", self._at, offset)
        if newlines:
            self._line += newlines
            self._line_start = self._text.rfind("\n", self._at, offset) + 1
        self._at = offset
        return self._line, offset - self._line_start + 1


class JsonWalk:
    """One walk over a JSON text whose top level is an object (its cases under `case_key`) or an array (its
    items are the cases). Iterate `elements()`, then call `finish()`; see the module docstring."""

    def __init__(self, text: str, shown: str, *, case_key: str, limits: StructureLimits = DEFAULT_LIMITS) -> None:
        self.text = text
        self.root = _skip(text, 0)
        if text[self.root : self.root + 1] not in ("{", "["):
            raise WholeFile
        self.top: Any = None
        """The top-level value once walked, the case list standing as `[]`."""
        self.members: dict[str, tuple[int, int]] = {}
        """The top-level object's {key: (key offset, value offset)}."""
        self.cases_at: int | None = None
        """Offset of the case list (the top-level array, or the array under `case_key`), once found."""
        self.case_starts = array("q")
        """Offsets of the case list's elements."""
        self._shown = shown
        self._case_key = case_key
        self._limits = limits
        self._decoder = _Decoder()
        self._lines = _Lines(text)
        self._limit: StructureProblem | None = None
        self._repeated: list[StructureProblem] = []
        self._malformed = False
        self._finished = False

    @property
    def troubled(self) -> bool:
        """A problem was found: later elements are walked only to find the problem that is reported."""
        return self._malformed or self._limit is not None or bool(self._repeated)

    @property
    def finished(self) -> bool:
        """The walk has reached the end of the text (or the problem that ends it)."""
        return self._finished

    def elements(self) -> Iterator[Element]:
        """The case list's elements, in order, decoded and checked (module docstring, rules 1 and 2)."""
        text = self.text
        try:
            if text[self.root] == "{":
                end = yield from self._object()
            else:
                self.top = []
                end = yield from self._array(self.root, (), 0)
            if _skip(text, end) != len(text):
                raise _Malformed
        except (_Malformed, json.JSONDecodeError, IndexError):
            self._malformed = True
        except _Stop:
            pass
        self._finished = True

    def finish(self) -> None:
        """Raise DocumentError with the file's syntax or structure problems (WholeFile: read it whole)."""
        if self._malformed:
            raise _first_syntax_error(self.text, self._shown)
        if self._limit is not None:
            raise DocumentError([structure_problem(self._shown, self._limit)])
        if self._repeated:
            raise DocumentError([structure_problem(self._shown, p) for p in self._repeated])

    def _object(self) -> Generator[Element, None, int]:
        text = self.text
        top: dict[str, Any] = {}
        self.top = top
        at = _skip(text, self.root + 1)
        if text[at] == "}":
            return at + 1
        while True:
            if text[at] != '"':
                raise _Malformed
            key, after = _scan_string(text, at + 1)
            colon = _skip(text, after)
            if text[colon] != ":":
                raise _Malformed
            value_at = _skip(text, colon + 1)
            self._note_key(key, at)
            self.members[key] = (at, value_at)
            if key == self._case_key and text[value_at] == "[":
                top[key] = []
                end = yield from self._array(value_at, (key,), 1)
            else:
                top[key], end = self._value(value_at, (key,), 1)
            at = _skip(text, end)
            if text[at] == "}":
                return at + 1
            if text[at] != ",":
                raise _Malformed
            at = _skip(text, at + 1)

    def _array(self, offset: int, prefix: PathKey, depth: int) -> Generator[Element, None, int]:
        text = self.text
        self.cases_at = offset
        self.case_starts = array("q")
        at = _skip(text, offset + 1)
        if text[at] == "]":
            return at + 1
        while True:
            position = len(self.case_starts)
            path = (*prefix, position)
            line, column = self._lines.at(at)
            value, end = self._value(at, path, depth + 1, line, column)
            self.case_starts.append(at)
            yield Element(path, position, value, at, end, line, column)
            at = _skip(text, end)
            if text[at] == "]":
                return at + 1
            if text[at] != ",":
                raise _Malformed
            at = _skip(text, at + 1)

    def _value(
        self, offset: int, path: PathKey, depth: int, line: int | None = None, column: int | None = None
    ) -> tuple[Any, int]:
        """Decode and check the value at `offset` (rule 2)."""
        if line is None or column is None:
            line, column = self._lines.at(offset)
        try:
            value, end = self._decoder.at(self.text, offset)
        except (IntegerTooLong, RecursionError):
            # The whole-file reader stops here too; its problem is the first limit exceeded.
            if self._limit is None:
                self._index(offset, path, depth, line, column)
            if self._limit is None:
                raise WholeFile from None
            raise _Stop from None
        if self._limit is None and (
            self._decoder.repeated
            or (may_exceed(self.text, offset, end, depth, self._limits) and exceeds(value, depth, self._limits))
        ):
            self._index(offset, path, depth, line, column)
        return value, end

    def _index(self, offset: int, path: PathKey, depth: int, line: int, column: int) -> None:
        """Let `index_json` say what is wrong with the value at `offset`, where the whole-file reader would."""
        try:
            index_json(
                self.text,
                prefix=path,
                start=offset,
                first_line=line,
                first_column=column,
                depth=depth,
                limits=self._limits,
            )
        except LimitExceeded as exc:
            self._limit = exc.problems[0]
        except StructureError as exc:
            self._repeated.extend(exc.problems)

    def _note_key(self, key: str, at: int) -> None:
        """A top-level key given twice is a problem, as in any other object."""
        first = self.members.get(key)
        if first is not None:
            self._repeated.append(repeated_key(key, self._position(first[0]), self._position(at), (key,)))

    def _position(self, offset: int) -> Position:
        line_start = self.text.rfind("\n", 0, offset) + 1
        return Position(self.text.count("\n", 0, offset) + 1, offset - line_start + 1)


def _line_spans(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each line, as `str.splitlines` splits them, without holding them all."""
    start = 0
    for found in _LINE_BREAK.finditer(text):
        yield start, found.start()
        start = found.end()
    if start < len(text):
        yield start, len(text)


class JsonlWalk:
    """One walk over a JSONL text: each non-blank line a record, addressed `$[i]` (module docstring, rule 3).
    Iterate `elements()`, then call `finish()`."""

    def __init__(self, text: str, shown: str, *, limits: StructureLimits = DEFAULT_LIMITS) -> None:
        self.text = text
        self._shown = shown
        self._limits = limits
        self._decoder = _Decoder()
        self._syntax: list[FileProblem] = []
        self._structure: list[StructureProblem] = []

    @property
    def troubled(self) -> bool:
        return bool(self._syntax or self._structure)

    def elements(self) -> Iterator[Element]:
        records = 0
        for number, (start, end) in enumerate(_line_spans(self.text), start=1):
            line = self.text[start:end]
            if not line.strip():
                continue
            path: PathKey = (records,)
            try:
                value = self._decoder.whole(line)
            except json.JSONDecodeError as exc:
                self._syntax.append(json_problem(self._shown, exc, line_offset=number - 1))
                continue
            except (IntegerTooLong, RecursionError):
                self._index(line, path, number)
                return
            if self._decoder.repeated or (
                may_exceed(line, 0, len(line), 0, self._limits) and exceeds(value, 0, self._limits)
            ):
                self._index(line, path, number)
                if self._structure:
                    return
            lead = len(line) - len(line.lstrip(_JSONL_BLANKS))
            yield Element(path, records, value, start + lead, start + len(line.rstrip(_JSONL_BLANKS)), number, lead + 1)
            records += 1

    def finish(self) -> None:
        """Raise DocumentError with the file's problems, as `documents` reads JSONL."""
        if self._structure:
            raise DocumentError([structure_problem(self._shown, p) for p in self._structure])
        if self._syntax:
            raise DocumentError(self._syntax)

    def _index(self, line: str, path: PathKey, number: int) -> None:
        try:
            index_json(line, prefix=path, first_line=number, limits=self._limits)
        except StructureError as exc:
            self._structure = exc.problems
            return
        raise WholeFile  # measured out of bounds, yet indexed without a problem: let documents decide
