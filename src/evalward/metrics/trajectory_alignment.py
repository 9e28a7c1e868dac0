"""The two sides of a trajectory comparison and the predicate M on every pair (docs/metrics.md §1–§2).

Notation: A = actual items (n = |A|), E = expected items (m = |E|), M(a, e) the call predicate:
`a.name == e.name` ∧ ArgsMatch(a.args, e.args) (args.py) ∧ (`a.agent == e.agent` when `match_agent` and
the expectation names an agent). Over steps, M is string equality. k* = size of a maximum bipartite
matching under M; LCS = longest common subsequence under M. Duplicates always count.

Weighted (`weighted_*`) metrics replace the 0/1 predicate M by a credit in [0, 1] (docs/metrics.md §4 partial
credit, `args.args_credit`): 0 when the names (or the named agent) differ, 1 when M holds, else the share of
matching argument leaves, `#{p ∈ leaves(e) : a[p] matches} ÷ #(leaves(e) ∪ leaves(a))` (option
`credit: symmetric`, default) or `÷ #leaves(e)` (`credit: recall`). Over steps the credit is 0/1 equality.

Filtering (tool calls only): calls with status `error` are excluded from matching unless
`exclude_error_calls` is false; `deferred` calls are excluded unless `count_deferred` is true.

Every score carries diagnostics: matched pairs, missing expected calls, unexpected actual calls, the first
divergence index (with the calls there) and per-argument diffs for missing calls that have a same-named
unmatched actual call.

For the weighted metrics, `call_credit` and `Alignment.weights` give each pair a credit in [0, 1] instead of
M's 0/1 (the formula is in `trajectory_weighted`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from evalward.metrics.args import ArgDiff, Credit, CreditMode, args_credit, check_matchers, compare_args
from evalward.metrics.base import TurnContext
from evalward.metrics.matching import (
    CompatMatrix,
    Pair,
    WeightMatrix,
    compat_matrix,
    first_divergence,
    maximum_matching,
)
from evalward.metrics.trajectory_options import Over, TrajectoryOptions, rule_for
from evalward.model import ToolCall

AlignmentKind = Literal["tool_calls", "steps", "handoffs"]


@dataclass
class Alignment:
    """The two sides of a comparison and the predicate evaluated on every pair."""

    over: AlignmentKind
    actual: list[Any]
    expected: list[Any]
    compat: CompatMatrix
    labels_actual: list[str]
    labels_expected: list[str]
    notes: list[str]
    diff: Callable[[int, int], list[ArgDiff]]
    relaxed: Callable[[int, int], bool] | None = None
    """M without the agent constraint, when the expectation names agents (finds misattributed calls)."""
    credit: Callable[[int, int, CreditMode], Credit] | None = None
    """Partial credit of a compatible-by-name pair (tool calls); None: credit is M as 0/1."""

    def weights(self, mode: CreditMode) -> tuple[WeightMatrix, dict[Pair, Credit]]:
        """The credit matrix for weighted pairing, and each positive partial credit's arithmetic."""
        detail: dict[Pair, Credit] = {}
        matrix: WeightMatrix = []
        for i in range(self.n):
            row: list[float] = []
            for j in range(self.m):
                if self.compat[i][j]:
                    row.append(1.0)
                elif self.credit is None:
                    row.append(0.0)
                else:
                    credit = self.credit(i, j, mode)
                    row.append(credit.value)
                    if credit.value > 0:
                        detail[(i, j)] = credit
            matrix.append(row)
        return matrix, detail

    @property
    def n(self) -> int:
        return len(self.actual)

    @property
    def m(self) -> int:
        return len(self.expected)

    def diagnostics(self, pairs: list[Pair]) -> dict[str, Any]:
        """Matched pairs, missing and unexpected items, first divergence and argument diffs."""
        matched_a = {i for i, _ in pairs}
        matched_e = {j for _, j in pairs}
        missing = [j for j in range(self.m) if j not in matched_e]
        unexpected = [i for i in range(self.n) if i not in matched_a]
        divergence = first_divergence(self.compat, self.m)
        details: dict[str, Any] = {
            "over": self.over,
            "n_actual": self.n,
            "n_expected": self.m,
            "actual": self.labels_actual,
            "expected": self.labels_expected,
            "matched": [{"actual": i, "expected": j, "item": self.labels_expected[j]} for i, j in pairs],
            "missing": [{"index": j, "item": self.labels_expected[j]} for j in missing],
            "unexpected": [{"index": i, "item": self.labels_actual[i]} for i in unexpected],
            "first_divergence": None,
            "arg_diffs": [],
        }
        if divergence is not None:
            details["first_divergence"] = {
                "index": divergence,
                "expected": self.labels_expected[divergence] if divergence < self.m else None,
                "actual": self.labels_actual[divergence] if divergence < self.n else None,
            }
        if self.over == "tool_calls":
            details["arg_diffs"] = self._arg_diffs(missing, unexpected)
        if self.relaxed is not None and missing and unexpected:
            details["misattributed"] = self._misattributed(missing, unexpected)
        if self.notes:
            details["notes"] = list(self.notes)
        return details

    def _misattributed(self, missing: list[int], unexpected: list[int]) -> list[dict[str, Any]]:
        """Missing expected calls that an unexpected actual call satisfies once the agent is ignored
        (docs/metrics.md §7), paired by maximum matching."""
        relaxed = self.relaxed
        assert relaxed is not None
        compat = [[relaxed(i, j) for j in missing] for i in unexpected]
        return [
            {
                "expected_index": missing[j],
                "actual_index": unexpected[i],
                "call": self.labels_expected[missing[j]],
                "expected_agent": self.expected[missing[j]].agent,
                "actual_agent": self.actual[unexpected[i]].agent,
            }
            for i, j in maximum_matching(compat, len(missing))
        ]

    def _arg_diffs(self, missing: list[int], unexpected: list[int]) -> list[dict[str, Any]]:
        """For each missing expected call, diff it against the first same-named unmatched actual call."""
        out: list[dict[str, Any]] = []
        free = list(unexpected)
        for j in missing:
            name = self.expected[j].name
            candidate = next((i for i in free if self.actual[i].name == name), None)
            if candidate is None:
                continue
            free.remove(candidate)
            diffs = self.diff(candidate, j)
            out.append(
                {
                    "expected_index": j,
                    "actual_index": candidate,
                    "tool": name,
                    "diffs": [d.as_dict() for d in diffs],
                }
            )
        return out


def _usable_calls(calls: list[ToolCall], options: TrajectoryOptions) -> tuple[list[ToolCall], list[str]]:
    kept: list[ToolCall] = []
    dropped_error = dropped_deferred = 0
    for call in calls:
        if call.status == "error" and options.exclude_error_calls:
            dropped_error += 1
        elif call.status == "deferred" and not options.count_deferred:
            dropped_deferred += 1
        else:
            kept.append(call)
    notes = []
    if dropped_error:
        notes.append(f"{dropped_error} failed call(s) excluded from matching (exclude_error_calls)")
    if dropped_deferred:
        notes.append(f"{dropped_deferred} deferred call(s) not counted (count_deferred)")
    return kept, notes


def call_diffs(actual: ToolCall, expected: ToolCall, options: TrajectoryOptions) -> list[ArgDiff]:
    """Why `actual` does not satisfy `expected` (empty = M(actual, expected))."""
    diffs: list[ArgDiff] = []
    if actual.name != expected.name:
        diffs.append(ArgDiff("name", "different tool", expected.name, actual.name))
        return diffs
    if options.match_agent and expected.agent is not None and actual.agent != expected.agent:
        diffs.append(ArgDiff("agent", "different agent", expected.agent, actual.agent))
    diffs.extend(compare_args(actual.args, expected.args, rule_for(expected.name, options)))
    return diffs


def call_credit(actual: ToolCall, expected: ToolCall, options: TrajectoryOptions, mode: CreditMode) -> Credit:
    """Partial credit of `actual` for `expected`: 0 for another tool (or another agent, when the expectation
    names one), else `args_credit` under the tool's argument rule."""
    if actual.name != expected.name or (
        options.match_agent and expected.agent is not None and actual.agent != expected.agent
    ):
        return Credit(0.0, 0, 0, False)
    return args_credit(actual.args, expected.args, rule_for(expected.name, options), mode)


def align(ctx: TurnContext[Any], options: TrajectoryOptions, *, prefer: Over = "tool_calls") -> Alignment | None:
    """Build both sides and the predicate matrix, or None when the turn has no matching expectation."""
    over = options.over
    if over is None:
        order: list[Over] = ["tool_calls", "steps"] if prefer == "tool_calls" else ["steps", "tool_calls"]
        for candidate in order:
            if candidate == "tool_calls" and ctx.expected.expected_tool_calls is not None:
                over = candidate
                break
            if candidate == "steps" and ctx.expected.expected_trajectory is not None:
                over = candidate
                break
    if over == "steps":
        if ctx.expected.expected_trajectory is None:
            return None
        actual_steps = ctx.actual.steps()
        expected_steps = list(ctx.expected.expected_trajectory)
        return Alignment(
            over="steps",
            actual=actual_steps,
            expected=expected_steps,
            compat=compat_matrix(actual_steps, expected_steps, lambda a, e: a == e),
            labels_actual=list(actual_steps),
            labels_expected=list(expected_steps),
            notes=[],
            diff=lambda i, j: [],
        )
    if over != "tool_calls" or ctx.expected.expected_tool_calls is None:
        return None
    actual_calls, notes = _usable_calls(list(ctx.actual.tool_calls), options)
    expected_calls = list(ctx.expected.expected_tool_calls)
    if options.args_mode != "ignore" and any(c.args is None for c in actual_calls):
        notes.append("some actual calls have no recorded args: matched by name only")
    relaxed_options = options.model_copy(update={"match_agent": False})
    for index, call in enumerate(expected_calls):
        for problem in check_matchers(call.args or {}, f"expected_tool_calls[{index}].args"):
            raise ValueError(problem)
    return Alignment(
        over="tool_calls",
        actual=actual_calls,
        expected=expected_calls,
        compat=compat_matrix(actual_calls, expected_calls, lambda a, e: not call_diffs(a, e, options)),
        labels_actual=[c.signature() for c in actual_calls],
        labels_expected=[c.signature() for c in expected_calls],
        notes=notes,
        diff=lambda i, j: call_diffs(actual_calls[i], expected_calls[j], options),
        relaxed=(
            (lambda i, j: not call_diffs(actual_calls[i], expected_calls[j], relaxed_options))
            if options.match_agent and any(c.agent is not None for c in expected_calls)
            else None
        ),
        credit=lambda i, j, mode: call_credit(actual_calls[i], expected_calls[j], options, mode),
    )
