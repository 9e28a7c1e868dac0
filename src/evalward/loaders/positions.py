"""Where each value of a JSON, JSONL or YAML document starts, so problems can name a line and column.

Python's `json` module returns plain values without positions, so JSON text is parsed twice: `json.loads`
produces the values (and the line/column of any syntax error), then a linear scanner walks the same,
now known-valid, text and records the start of every value and of every object key under its JSON path,
refusing what `StructureLimits` forbids (deep nesting, too many values, huge integers) and repeated keys.
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
from json.decoder import scanstring  # type: ignore[attr-defined]  # C string scanner
from typing import Any

PathKey = tuple[str | int, ...]

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Everything a JSON scalar other than a string can look like (json.loads also accepts NaN/Infinity).
_SCALAR = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null|NaN|-?Infinity")
_INTEGER = re.compile(r"-?\d+")


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


_NEWLINE = re.compile(r"\n")


class _LineMap:
    """Converts character offsets into 1-based line and column numbers.

    Newlines are found as far as the offsets asked about reach, not ahead: indexing one value of a large
    file (`start`, its first character at `first_line`, `first_column`) then costs what that value costs."""

    def __init__(self, text: str, first_line: int = 1, *, start: int = 0, first_column: int = 1) -> None:
        self._text = text
        self._starts = [start]
        self._scanned = start  # every newline before this offset is in `_starts`
        self._first_line = first_line
        self._first_shift = first_column - 1

    def position(self, offset: int) -> Position:
        if offset >= self._scanned:
            self._starts.extend(m.end() for m in _NEWLINE.finditer(self._text, self._scanned, offset + 1))
            self._scanned = offset + 1
        row = bisect.bisect_right(self._starts, offset) - 1
        column = offset - self._starts[row] + 1 + (self._first_shift if row == 0 else 0)
        return Position(line=row + self._first_line, column=column)


_SKIP = re.compile(r"[ \t\n\r]*")
_string_value = scanstring


@dataclass(frozen=True)
class StructureLimits:
    """What a document may contain before it is refused instead of read.

    Deeper nesting than `max_depth` exhausts recursion in every later stage; more than `max_values` values
    (for YAML: composed nodes, aliases expanded) exhausts memory; an integer with more than
    `max_integer_digits` digits costs quadratic time to convert (Python refuses beyond 4,300); YAML aliases
    beyond `max_aliases` are how a few lines expand to billions of values ("billion laughs")."""

    max_depth: int = 100
    max_values: int = 1_000_000
    max_integer_digits: int = 1000
    max_aliases: int = 100
    max_yaml_nodes: int = 100_000
    """PyYAML spends ~60 µs and ~1 KB per node: 100,000 nodes is ~6 s and ~100 MB."""


DEFAULT_LIMITS = StructureLimits()


@dataclass(frozen=True)
class StructureProblem:
    """A limit exceeded, or a key given twice, at `position` (the value or key at `path`)."""

    message: str
    position: Position
    path: PathKey | None
    """None when no single path names the place (a node reached through several aliases)."""
    expected: str | None = None
    found: str | None = None


class StructureError(ValueError):
    """The document breaks a `StructureLimits` limit or repeats a key; `problems` says where."""

    def __init__(self, problems: list[StructureProblem]) -> None:
        super().__init__("; ".join(p.message for p in problems))
        self.problems = problems


class LimitExceeded(StructureError):
    """A `StructureLimits` limit was exceeded: the one problem that stopped the scan (keys repeated before it
    are not reported, since a document this far out of bounds is refused whatever else is wrong)."""


def repeated_key(key: str, first: Position, again: Position, member: PathKey) -> StructureProblem:
    """The problem for `key` written a second time (at `again`) in one JSON object."""
    return StructureProblem(
        f"duplicate key {key!r} (first at line {first.line}, column {first.column})",
        again,
        member,
        expected="each key once per object",
        found=f"{key!r} twice",
    )


def index_json(
    text: str,
    *,
    prefix: PathKey = (),
    first_line: int = 1,
    limits: StructureLimits = DEFAULT_LIMITS,
    start: int = 0,
    first_column: int = 1,
    depth: int = 0,
) -> PositionIndex:
    """Record value and key positions of a JSON text, checking it against `limits`.

    With `start`, only the value starting there is indexed: it sits at `prefix`, `depth` levels deep, and
    its first character at `first_line`, `first_column` (how one case of a large file is checked and
    located without indexing the rest).

    Time and memory are linear in the text: strings are skipped (and keys decoded) by the `json` module's
    own C string scanner, whitespace and numbers by single-character-class regular expressions. Offsets are
    recorded, not line/column pairs (see PositionIndex). A key repeated in one object is a problem naming
    both places (every repeat is reported); a limit exceeded stops the scan with one problem. Text that
    `json.loads` rejects is reported by it, not here: the scan assumes valid JSON up to the first problem."""
    lines = _LineMap(text, first_line, start=start, first_column=first_column)
    index = PositionIndex(lines=lines)
    values = index.values
    keys = index.keys
    skip_ws = _SKIP.match
    scalar_at = _SCALAR.match
    repeated: list[StructureProblem] = []

    def skip(offset: int) -> int:
        return skip_ws(text, offset).end()  # type: ignore[union-attr]  # `*` always matches

    def stop(message: str, offset: int, path: PathKey, *, expected: str, found: str) -> LimitExceeded:
        return LimitExceeded([StructureProblem(message, lines.position(offset), path, expected, found)])

    def value(offset: int, path: PathKey, depth: int) -> int:
        if len(values) >= limits.max_values:
            raise stop(
                f"more than {limits.max_values:,} values in one document",
                offset,
                path,
                expected=f"at most {limits.max_values:,} values",
                found="more",
            )
        values[path] = offset
        char = text[offset]
        if char in "{[" and depth >= limits.max_depth:
            raise stop(
                f"values are nested more than {limits.max_depth} levels deep",
                offset,
                path,
                expected=f"at most {limits.max_depth} levels",
                found="deeper nesting",
            )
        if char == "{":
            offset = skip(offset + 1)
            if text[offset] == "}":
                return offset + 1
            first_seen: dict[str, int] = {}
            while True:
                key_start = offset
                key, offset = _string_value(text, offset + 1)
                member = (*path, key)
                if key in first_seen:
                    repeated.append(
                        repeated_key(key, lines.position(first_seen[key]), lines.position(key_start), member)
                    )
                else:
                    first_seen[key] = key_start
                keys[member] = key_start
                offset = skip(offset)  # now at ':'
                offset = skip(value(skip(offset + 1), member, depth + 1))
                if text[offset] == "}":
                    return offset + 1
                offset = skip(offset + 1)  # past ','
        if char == "[":
            offset = skip(offset + 1)
            if text[offset] == "]":
                return offset + 1
            item = 0
            while True:
                offset = skip(value(offset, (*path, item), depth + 1))
                item += 1
                if text[offset] == "]":
                    return offset + 1
                offset = skip(offset + 1)
        if char == '"':
            end: int = _string_value(text, offset + 1)[1]
            return end
        match = scalar_at(text, offset)
        if match is None:  # unreachable for text json.loads accepted
            raise ValueError(f"unexpected character {char!r} at offset {offset}")
        digits = match.end() - offset - (char == "-")
        if digits > limits.max_integer_digits and _INTEGER.fullmatch(match.group()):
            raise stop(
                f"an integer with {digits:,} digits",
                offset,
                path,
                expected=f"at most {limits.max_integer_digits:,} digits",
                found=f"{digits:,} digits",
            )
        return match.end()

    value(skip(start), prefix, depth)
    if repeated:
        raise StructureError(repeated)
    return index


def index_yaml(
    node: Any, *, index: PositionIndex | None = None, path: PathKey = (), limits: StructureLimits = DEFAULT_LIMITS
) -> PositionIndex:
    """Record positions from a PyYAML composed node tree (marks are 0-based; ours are 1-based).

    Checked first, against `limits`: the size of the tree with every alias expanded (an alias is a second
    reference to its anchor's node, so the tree is walked as a DAG, each node's size computed once); then,
    while recording, integers' digits and keys repeated in one mapping (a merge key `<<` may repeat keys)."""
    _check_expanded_size(node, limits)
    index = index if index is not None else PositionIndex()
    repeated: list[StructureProblem] = []
    _index_yaml_node(node, index, path, limits, repeated)
    if repeated:
        raise StructureError(repeated)
    return index


_YAML_INT_TAG = "tag:yaml.org,2002:int"
_YAML_MERGE_TAG = "tag:yaml.org,2002:merge"


def _mark(node: Any) -> Position:
    return Position(node.start_mark.line + 1, node.start_mark.column + 1)


def _check_expanded_size(root: Any, limits: StructureLimits) -> None:
    import yaml

    sizes: dict[int, int] = {}
    # Post-order without recursion: (node, children done?).
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in sizes:
            continue
        if isinstance(node, yaml.MappingNode):
            children = [part for pair in node.value for part in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        else:
            children = []
        if not children_done:
            stack.append((node, True))
            stack.extend((child, False) for child in children if id(child) not in sizes)
            continue
        size = 1 + sum(sizes[id(child)] for child in children)
        sizes[id(node)] = size
        if size > limits.max_values:
            raise StructureError(
                [
                    StructureProblem(
                        f"this value expands to {size:,} values through its aliases (*name)",
                        _mark(node),
                        None,
                        expected=f"at most {limits.max_values:,} values with aliases expanded",
                        found=f"{size:,}",
                    )
                ]
            )


def _index_yaml_node(
    node: Any, index: PositionIndex, path: PathKey, limits: StructureLimits, repeated: list[StructureProblem]
) -> None:
    import yaml

    index.values[path] = _mark(node)
    if isinstance(node, yaml.MappingNode):
        first_seen: dict[str, Position] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node.value)
            member = (*path, key)
            key_position = _mark(key_node)
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != _YAML_MERGE_TAG:
                first = first_seen.setdefault(key, key_position)
                if first is not key_position:
                    repeated.append(
                        StructureProblem(
                            f"duplicate key {key!r} (first at line {first.line}, column {first.column})",
                            key_position,
                            member,
                            expected="each key once per mapping",
                            found=f"{key!r} twice",
                        )
                    )
            index.keys[member] = key_position
            _index_yaml_node(value_node, index, member, limits, repeated)
    elif isinstance(node, yaml.SequenceNode):
        for item, value_node in enumerate(node.value):
            _index_yaml_node(value_node, index, (*path, item), limits, repeated)
    elif node.tag == _YAML_INT_TAG:
        digits = sum(char.isalnum() for char in node.value)
        if digits > limits.max_integer_digits:
            raise StructureError(
                [
                    StructureProblem(
                        f"an integer with {digits:,} digits",
                        _mark(node),
                        path,
                        expected=f"at most {limits.max_integer_digits:,} digits",
                        found=f"{digits:,} digits",
                    )
                ]
            )
