"""Where each value of a JSON, JSONL or YAML document starts, so problems can name a line and column.

Python's `json` module returns plain values without positions, so JSON text is parsed twice: `json.loads`
produces the values (and the line/column of any syntax error), then a small scanner walks the same,
now known-valid, text and records the start of every value and of every object key under its JSON path.
YAML positions come from the marks of PyYAML's composed nodes. JSONL is one JSON document per line; its
records are addressed as `$[i]` (i = 0-based record index, blank lines skipped) and keep their file lines.

A path is a tuple of object keys (str) and array indexes (int); `format_json_path` renders it as
`$.eval_cases[2].conversation[0]`.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

PathKey = tuple[str | int, ...]

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Everything a JSON scalar other than a string can look like (json.loads also accepts NaN/Infinity).
_SCALAR = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null|NaN|-?Infinity")
_WHITESPACE = " \t\n\r"


@dataclass(frozen=True)
class Position:
    """1-based line and column of a character in a file."""

    line: int
    column: int


@dataclass
class PositionIndex:
    """Start positions of values (and of object keys) by JSON path.

    Positions may be stored as character offsets (ints) and turned into line/column only when asked for:
    an eval file with thousands of cases records tens of thousands of values, of which a run reads a few.
    """

    values: dict[PathKey, Position | int] = field(default_factory=dict)
    keys: dict[PathKey, Position | int] = field(default_factory=dict)
    lines: _LineMap | None = None

    def _resolve(self, found: Position | int) -> Position:
        if isinstance(found, Position):
            return found
        assert self.lines is not None, "offsets are recorded together with their line map"
        return self.lines.position(found)

    def value_at(self, path: PathKey) -> Position | None:
        """The start of the value at `path`, or of its nearest recorded ancestor."""
        for end in range(len(path), -1, -1):
            found = self.values.get(path[:end])
            if found is not None:
                return self._resolve(found)
        return None

    def key_at(self, path: PathKey) -> Position | None:
        """The start of the key naming `path` when it is an object member, else `value_at(path)`."""
        found = self.keys.get(path)
        return self._resolve(found) if found is not None else self.value_at(path)


def format_json_path(path: Sequence[str | int]) -> str:
    """`$`, then `.key` for identifier keys, `["odd key"]` for others and `[i]` for indexes."""
    text = "$"
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif _IDENTIFIER.match(part):
            text += f".{part}"
        else:
            text += f"[{json.dumps(part, ensure_ascii=False)}]"
    return text


class _LineMap:
    """Converts character offsets into 1-based line and column numbers."""

    def __init__(self, text: str, first_line: int = 1) -> None:
        self._starts = [0] + [m.end() for m in re.finditer(r"\n", text)]
        self._first_line = first_line

    def position(self, offset: int) -> Position:
        row = bisect.bisect_right(self._starts, offset) - 1
        return Position(line=row + self._first_line, column=offset - self._starts[row] + 1)


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_SKIP = re.compile(r"[ \t\n\r]*")


def index_json(text: str, *, prefix: PathKey = (), first_line: int = 1) -> PositionIndex:
    """Record value and key positions of a JSON text that `json.loads` has already accepted.

    Offsets are recorded, not line/column pairs (see PositionIndex); strings and whitespace are skipped with
    compiled regular expressions and keys are decoded with `json.loads` only when they hold an escape."""
    lines = _LineMap(text, first_line)
    index = PositionIndex(lines=lines)
    values = index.values
    keys = index.keys
    skip_ws = _SKIP.match
    string_at = _STRING.match
    scalar_at = _SCALAR.match

    def skip(offset: int) -> int:
        return skip_ws(text, offset).end()  # type: ignore[union-attr]  # `*` always matches

    def string_end(offset: int) -> int:
        """The offset just past the string literal opening at `offset`."""
        return string_at(text, offset).end()  # type: ignore[union-attr]  # valid JSON: it matches

    def value(offset: int, path: PathKey) -> int:
        values[path] = offset
        char = text[offset]
        if char == "{":
            offset = skip(offset + 1)
            if text[offset] == "}":
                return offset + 1
            while True:
                key_start = offset
                offset = string_end(offset)
                raw_key = text[key_start + 1 : offset - 1]
                key = json.loads(text[key_start:offset]) if "\\" in raw_key else raw_key
                offset = skip(offset)  # now at ':'
                member = (*path, key)
                keys[member] = key_start
                offset = skip(value(skip(offset + 1), member))
                if text[offset] == "}":
                    return offset + 1
                offset = skip(offset + 1)  # past ','
        if char == "[":
            offset = skip(offset + 1)
            if text[offset] == "]":
                return offset + 1
            item = 0
            while True:
                offset = skip(value(offset, (*path, item)))
                item += 1
                if text[offset] == "]":
                    return offset + 1
                offset = skip(offset + 1)
        if char == '"':
            return string_end(offset)
        match = scalar_at(text, offset)
        if match is None:  # unreachable for text json.loads accepted
            raise ValueError(f"unexpected character {char!r} at offset {offset}")
        return match.end()

    value(skip(0), prefix)
    return index


def index_yaml(node: Any, *, index: PositionIndex | None = None, path: PathKey = ()) -> PositionIndex:
    """Record positions from a PyYAML composed node tree (marks are 0-based; ours are 1-based)."""
    import yaml

    index = index if index is not None else PositionIndex()
    index.values[path] = Position(node.start_mark.line + 1, node.start_mark.column + 1)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node.value)
            member = (*path, key)
            index.keys[member] = Position(key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            index_yaml(value_node, index=index, path=member)
    elif isinstance(node, yaml.SequenceNode):
        for item, value_node in enumerate(node.value):
            index_yaml(value_node, index=index, path=(*path, item))
    return index
