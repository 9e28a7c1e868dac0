"""Expected vs actual tool calls (and step names) as a reviewable diff.

Alignment, in two passes:
1. the longest common subsequence (LCS) of the two call lists, where two calls match when their names
   and canonical arguments are equal (a `" "` line each); everything else is left over;
2. inside each gap between matched calls, the LCS of the leftover calls by name alone pairs an expected
   call with an actual call of the same name: a `"~"` line (same tool, different arguments), with the
   argument differences listed. Still unpaired expected calls are `"-"` lines, actual ones `"+"` lines.

Pairing stays inside a gap so the lines keep both lists' order; a call that moved past a matched call
shows as `-` and `+`. Canonical arguments: JSON with sorted keys, integral floats as ints (`1.0 == 1`,
as Python's `==` in ADK's comparison), `None` (no args) distinct from `{}`.

The texts are plain (unescaped): renderers put them in code blocks or escape them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from evalward.model import ToolCall
from evalward.model.text import compact_json

DiffOp = Literal[" ", "-", "+", "~"]
ArgDiffKind = Literal["changed", "missing", "unexpected"]

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Everything a renderer may turn into a line break (see escape.strip_unsafe_chars).
_LINE_BREAK = re.compile("\r\n|[\r\n\u2028\u2029\x85]")


@dataclass(frozen=True)
class DiffLine:
    """One line of a diff.

    `text` is the expected call's signature for `" "`, `"-"` and `"~"` lines and the actual call's for
    `"+"` lines; `actual_text` is the actual signature of a `"~"` line.
    """

    op: DiffOp
    text: str
    expected_index: int | None
    actual_index: int | None
    actual_text: str | None = None


@dataclass(frozen=True)
class ArgDiff:
    """One argument that differs between a paired expected and actual call.

    `path` is `city`, `filters.dates[0]` or `["odd key"]`; the empty path means the whole argument
    object (e.g. expected no arguments at all). `expected`/`actual` are None for `unexpected`/`missing`.
    """

    call_index: int
    """Index of the call in the expected list."""
    name: str
    path: str
    expected: Any
    actual: Any
    kind: ArgDiffKind

    def describe(self) -> str:
        """`seat: expected "aisle", found "window"` (plain text)."""
        where = self.path or "(arguments)"
        if self.kind == "missing":
            return f"{where}: expected {compact_json(self.expected)}, missing"
        if self.kind == "unexpected":
            return f"{where}: not expected, found {compact_json(self.actual)}"
        return f"{where}: expected {compact_json(self.expected)}, found {compact_json(self.actual)}"


@dataclass
class TrajectoryDiff:
    """The aligned lines, where the lists first part, and every argument difference of paired calls."""

    lines: list[DiffLine]
    first_divergence: int | None
    """Index into the expected list of the first line that is not `" "`; for an extra actual call, the
    number of expected calls before it. None when the lists are identical."""
    arg_diffs: list[ArgDiff] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return self.first_divergence is None


def _normalise(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {str(k): _normalise(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_normalise(v) for v in value]
    return value


def _canonical(value: Any) -> str:
    return json.dumps(_normalise(value), sort_keys=True, ensure_ascii=False, default=str)


def _call_key(call: ToolCall) -> tuple[str, str]:
    return (call.name, "<absent>" if call.args is None else _canonical(call.args))


AlignOp = Literal["=", "-", "+"]


def _align(expected: Sequence[Any], actual: Sequence[Any]) -> list[tuple[AlignOp, int | None, int | None]]:
    """LCS alignment of two sequences of hashable keys; deletions before insertions inside a gap."""
    n, m = len(expected), len(actual)
    # suffix[i][j] = length of the LCS of expected[i:] and actual[j:]
    suffix = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            if expected[i] == actual[j]:
                suffix[i][j] = suffix[i + 1][j + 1] + 1
            else:
                suffix[i][j] = max(suffix[i + 1][j], suffix[i][j + 1])
    ops: list[tuple[AlignOp, int | None, int | None]] = []
    i = j = 0
    while i < n and j < m:
        if expected[i] == actual[j]:
            ops.append(("=", i, j))
            i, j = i + 1, j + 1
        elif suffix[i + 1][j] >= suffix[i][j + 1]:
            ops.append(("-", i, None))
            i += 1
        else:
            ops.append(("+", None, j))
            j += 1
    ops.extend(("-", k, None) for k in range(i, n))
    ops.extend(("+", None, k) for k in range(j, m))
    return ops


def _first_divergence(lines: list[DiffLine]) -> int | None:
    # Every line before the first divergence is a " " line consuming one expected call.
    for consumed, line in enumerate(lines):
        if line.op != " ":
            return line.expected_index if line.expected_index is not None else consumed
    return None


def _join_path(path: str, key: str) -> str:
    if _IDENTIFIER.match(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def _compare(expected: Any, actual: Any, path: str, call_index: int, name: str, out: list[ArgDiff]) -> None:
    if isinstance(expected, dict) and isinstance(actual, dict):
        keys = list(expected) + [k for k in actual if k not in expected]
        for key in keys:
            child = _join_path(path, str(key))
            if key not in actual:
                out.append(ArgDiff(call_index, name, child, expected[key], None, "missing"))
            elif key not in expected:
                out.append(ArgDiff(call_index, name, child, None, actual[key], "unexpected"))
            else:
                _compare(expected[key], actual[key], child, call_index, name, out)
        return
    if isinstance(expected, list) and isinstance(actual, list):
        for index in range(max(len(expected), len(actual))):
            child = f"{path}[{index}]"
            if index >= len(actual):
                out.append(ArgDiff(call_index, name, child, expected[index], None, "missing"))
            elif index >= len(expected):
                out.append(ArgDiff(call_index, name, child, None, actual[index], "unexpected"))
            else:
                _compare(expected[index], actual[index], child, call_index, name, out)
        return
    if _canonical(expected) != _canonical(actual):
        out.append(ArgDiff(call_index, name, path, expected, actual, "changed"))


def trajectory_diff(expected: Sequence[ToolCall], actual: Sequence[ToolCall]) -> TrajectoryDiff:
    """Align expected and actual tool calls (see the module docstring for the rule)."""
    lines: list[DiffLine] = []
    arg_diffs: list[ArgDiff] = []
    gap_expected: list[int] = []
    gap_actual: list[int] = []

    def flush_gap() -> None:
        names = _align([expected[i].name for i in gap_expected], [actual[j].name for j in gap_actual])
        for op, gi, gj in names:
            ei = gap_expected[gi] if gi is not None else None
            aj = gap_actual[gj] if gj is not None else None
            if op == "=" and ei is not None and aj is not None:
                exp, act = expected[ei], actual[aj]
                lines.append(DiffLine("~", exp.signature(), ei, aj, act.signature()))
                _compare(exp.args, act.args, "", ei, exp.name, arg_diffs)
            elif ei is not None:
                lines.append(DiffLine("-", expected[ei].signature(), ei, None))
            elif aj is not None:
                lines.append(DiffLine("+", actual[aj].signature(), None, aj))
        gap_expected.clear()
        gap_actual.clear()

    for op, i, j in _align([_call_key(c) for c in expected], [_call_key(c) for c in actual]):
        if op == "=" and i is not None:
            flush_gap()
            lines.append(DiffLine(" ", expected[i].signature(), i, j))
        elif i is not None:
            gap_expected.append(i)
        elif j is not None:
            gap_actual.append(j)
    flush_gap()
    return TrajectoryDiff(lines=lines, first_divergence=_first_divergence(lines), arg_diffs=arg_diffs)


def steps_diff(expected: list[str], actual: list[str]) -> TrajectoryDiff:
    """Align step names (graph nodes, agents, tools) by LCS; no `"~"` lines and no argument diffs."""
    lines: list[DiffLine] = []
    for op, i, j in _align(expected, actual):
        if op == "=" and i is not None:
            lines.append(DiffLine(" ", expected[i], i, j))
        elif i is not None:
            lines.append(DiffLine("-", expected[i], i, None))
        elif j is not None:
            lines.append(DiffLine("+", actual[j], None, j))
    return TrajectoryDiff(lines=lines, first_divergence=_first_divergence(lines))


def _flat(text: str) -> str:
    """One physical line per diff line: a line break inside a tool name or argument key is shown as
    `\\n`, so it cannot start a line that looks like another `-`/`+` entry."""
    return _LINE_BREAK.sub("\\\\n", text)


def diff_text(diff: TrajectoryDiff, *, unit: str = "call", max_lines: int | None = None) -> list[str]:
    """Unified-diff style plain lines: `  same`, `- expected`, `+ actual`; a `"~"` line becomes a `-`/`+`
    pair; a `! first divergence at expected {unit} N` line precedes the first divergent line; line
    breaks inside a text are shown as `\\n`. With
    `max_lines`, a last `… N more lines` line replaces the rest."""
    out: list[str] = []
    marked = False
    for line in diff.lines:
        if line.op != " " and not marked:
            out.append(f"! first divergence at expected {unit} {(diff.first_divergence or 0) + 1}")
            marked = True
        if line.op == "~":
            out.append(f"- {_flat(line.text)}")
            out.append(f"+ {_flat(line.actual_text or '')}")
        else:
            out.append(f"{line.op} {_flat(line.text)}")
    if max_lines is not None and len(out) > max_lines:
        hidden = len(out) - max_lines
        out = [*out[:max_lines], f"… {hidden} more line{'s' if hidden != 1 else ''}"]
    return out
