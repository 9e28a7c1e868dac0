"""Positions inside a JSON text found when asked for, for files whose cases are read one at a time.

`positions.index_json` records the position of every value up front, walking the text at Python speed; that
is most of what loading a large file costs, and a case needs only a handful of positions (its own, its
turns', and a problem's when it has one). `LocatedIndex` answers the same questions for the paths it is
asked about: from the value at its `prefix`, each step reads the members of one object or the items of one
array up to the one it needs, skipping the values before it with the `json` module's C scanner, and
remembers what it read. Finding a case's first turn reads a key or two, not the case.

Its answers are `index_json`'s for the same text: `value_at(path)` is where the value at `path` starts, or
its nearest existing ancestor; `key_at(path)` is where the key naming `path` starts when `path` is an
object member, else `value_at(path)`. Lines are counted in `\\n` characters and columns in characters,
from a known position (`line`, `column` at offset `base`), so one value of a large file is located
without a line table for the whole file. A path outside `prefix` is answered by `outer` (None without one).
The text must be valid JSON, with no key repeated (the loader checked both before asking).
"""

from __future__ import annotations

import json
import re
from array import array
from collections.abc import Mapping, MutableSequence, Sequence
from typing import Any

from evalward.loaders.positions import PathKey, Position, PositionIndex

_SKIP = re.compile(r"[ \t\n\r]*")
_scan_string: Any = json.decoder.scanstring  # type: ignore[attr-defined]  # the C string scanner
_scan_value: Any = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # the C value scanner

Members = Mapping[str, tuple[int, int]]
"""{key: (offset of the key, offset of its value)} of one object."""


class LocatedIndex(PositionIndex):
    """A `PositionIndex` over one JSON value of `text`, filled in as paths are asked for (module docstring)."""

    def __init__(
        self,
        text: str,
        root: int,
        *,
        prefix: PathKey = (),
        base: int = 0,
        line: int = 1,
        column: int = 1,
        outer: PositionIndex | None = None,
        members: Mapping[int, Members] | None = None,
        items: Mapping[int, Sequence[int]] | None = None,
    ) -> None:
        super().__init__()
        self._text = text
        self._root = root
        self._prefix = prefix
        self._base = base
        self._line = line
        self._column = column
        self._outer = outer
        self._mark = (base, line, base, column)
        """(offset, its line, the offset its line's counted columns start at, the column there) of the last
        position found."""
        # Containers read so far, by offset. Some may be given whole (the loader's own scan of a large
        # top-level object or case list).
        self._objects = {at: _ObjectScan.whole(found) for at, found in (members or {}).items()}
        self._arrays = {at: _ArrayScan.whole(found) for at, found in (items or {}).items()}

    def value_at(self, path: PathKey) -> Position | None:
        if path[: len(self._prefix)] != self._prefix:
            return self._outer.value_at(path) if self._outer is not None else None
        offset, _, _ = self._walk(path[len(self._prefix) :])
        return self.position(offset)

    def key_at(self, path: PathKey) -> Position | None:
        if path[: len(self._prefix)] != self._prefix:
            return self._outer.key_at(path) if self._outer is not None else None
        offset, key, whole = self._walk(path[len(self._prefix) :])
        return self.position(key if whole and key is not None else offset)

    def position(self, offset: int) -> Position:
        """The line and column of the character at `offset` (at or after `base`)."""
        # Counted from the last position asked for when this one is after it: a whole file's cases are asked
        # for in order, and counting each from the start made a one-line file's positions quadratic.
        at, line, line_start, first_column = self._mark
        if offset < at:
            at, line, line_start, first_column = self._base, self._line, self._base, self._column
        text = self._text
        newlines = text.count("\n", at, offset)
        if newlines:
            line += newlines
            line_start, first_column = text.rfind("\n", at, offset) + 1, 1
        self._mark = (offset, line, line_start, first_column)
        return Position(line=line, column=first_column + offset - line_start)

    def _walk(self, steps: PathKey) -> tuple[int, int | None, bool]:
        """(offset of the deepest value found, offset of the key of the last step taken, whether every step
        was found)."""
        offset, key = self._root, None
        for step in steps:
            found = self._child(offset, step)
            if found is None:
                return offset, key, False
            key, offset = found
        return offset, key, True

    def _child(self, offset: int, step: str | int) -> tuple[int | None, int] | None:
        """(key offset or None for an array item, value offset) of `step` in the container at `offset`."""
        opening = self._text[offset]
        if opening == "{" and isinstance(step, str):
            members = self._objects.get(offset)
            if members is None:
                members = self._objects[offset] = _ObjectScan(self._text, offset)
            return members.get(step)
        if opening == "[" and isinstance(step, int):
            items = self._arrays.get(offset)
            if items is None:
                items = self._arrays[offset] = _ArrayScan(self._text, offset)
            found = items.get(step)
            return None if found is None else (None, found)
        return None


def _skip(text: str, offset: int) -> int:
    if offset < len(text) and text[offset] not in " \t\n\r":
        return offset  # the usual case, without a regular expression
    return _SKIP.match(text, offset).end()  # type: ignore[union-attr]  # `*` always matches


class _ObjectScan:
    """The members of one object, read as far as asked for."""

    def __init__(self, text: str, offset: int) -> None:
        self._text = text
        self.members: dict[str, tuple[int, int]] = {}
        first = _skip(text, offset + 1)
        self._next: int | None = None if text[first] == "}" else first  # the next key, when known
        self._unskipped: int | None = None  # the last value read, whose end is not known yet

    @classmethod
    def whole(cls, members: Members) -> _ObjectScan:
        scan = cls.__new__(cls)
        scan.members, scan._next, scan._unskipped = dict(members), None, None
        return scan

    def get(self, key: str) -> tuple[int, int] | None:
        while key not in self.members and self._read_one():
            pass
        return self.members.get(key)

    def _read_one(self) -> bool:
        text = self._text
        if self._unskipped is not None:
            after = _skip(text, _scan_value(text, self._unskipped)[1])
            self._unskipped = None
            self._next = None if text[after] == "}" else _skip(text, after + 1)  # past ','
        if self._next is None:
            return False
        at, self._next = self._next, None
        key, after = _scan_string(text, at + 1)
        value = _skip(text, _skip(text, after) + 1)  # past ':'
        self.members[key] = (at, value)
        self._unskipped = value
        return True


class _ArrayScan:
    """The item offsets of one array, read as far as asked for."""

    def __init__(self, text: str, offset: int) -> None:
        self._text = text
        self.items: MutableSequence[int] = []
        first = _skip(text, offset + 1)
        self._next: int | None = None if text[first] == "]" else first
        self._unskipped: int | None = None

    @classmethod
    def whole(cls, items: Sequence[int]) -> _ArrayScan:
        scan = cls.__new__(cls)
        scan.items, scan._next, scan._unskipped = array("q", items), None, None
        return scan

    def get(self, index: int) -> int | None:
        if index < 0:
            return None
        while len(self.items) <= index and self._read_one():
            pass
        return self.items[index] if index < len(self.items) else None

    def _read_one(self) -> bool:
        text = self._text
        if self._unskipped is not None:
            after = _skip(text, _scan_value(text, self._unskipped)[1])
            self._unskipped = None
            self._next = None if text[after] == "]" else _skip(text, after + 1)
        if self._next is None:
            return False
        self.items.append(self._next)
        self._unskipped, self._next = self._next, None
        return True
