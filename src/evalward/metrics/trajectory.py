"""Native trajectory metrics: match modes over tool calls or step names (docs/metrics.md §1–§2).

Notation: A = actual items (n = |A|), E = expected items (m = |E|), M(a, e) the call predicate:
`a.name == e.name` ∧ ArgsMatch(a.args, e.args) (args.py) ∧ (`a.agent == e.agent` when `match_agent` and
the expectation names an agent). Over steps, M is string equality. k* = size of a maximum bipartite
matching under M; LCS = longest common subsequence under M. Duplicates always count.

| metric | score |
| --- | --- |
| `trajectory_exact` | 1 iff n = m and M(a_i, e_i) ∀ i (`parallel_unordered`: each step group as a multiset) |
| `trajectory_in_order` | 1 iff E is a subsequence of A under M (extras anywhere) |
| `trajectory_any_order` (= `superset`) | 1 iff k* = m |
| `trajectory_subset` | 1 iff k* = n |
| `trajectory_same_multiset` | 1 iff k* = n = m |
| `trajectory_precision` | P = k*/n |
| `trajectory_recall` | R = k*/m |
| `trajectory_f1` | 2PR/(P+R) |
| `trajectory_ordered_f1` | P, R, F1 with k* replaced by LCS |
| `trajectory_subsequence` | seed music-store partial credit: greedy left-to-right scan; matched/m, 0 when n < m |
| `trajectory_weighted_precision` | P_w = k*_w/n, k*_w = Σ credit over a maximum-weight matching (Hungarian) |
| `trajectory_weighted_recall` | R_w = k*_w/m |
| `trajectory_weighted_f1` | 2·P_w·R_w/(P_w+R_w) |
| `trajectory_weighted_ordered_f1` | P, R, F1 with k*_w = Σ credit over a maximum-weight common subsequence |

Weighted (`weighted_*`) metrics replace the 0/1 predicate M by a credit in [0, 1] (docs/metrics.md §4 partial
credit, `args.args_credit`): 0 when the names (or the named agent) differ, 1 when M holds, else the share of
matching argument leaves, `#{p ∈ leaves(e) : a[p] matches} ÷ #(leaves(e) ∪ leaves(a))` (option
`credit: symmetric`, default) or `÷ #leaves(e)` (`credit: recall`). Over steps the credit is 0/1 equality.

Empty rules: P, R, F1 = `both_empty_score` (default 1.0) when n = m = 0, and 0.0 when exactly one side
is empty. Boolean modes: empty E passes in_order / any_order (and subset iff A is empty too); exact
passes only if A is empty too. `trajectory_subsequence` with an empty reference scores 1.0 (nothing was
expected; the seed divides by zero there).

Filtering (tool calls only): calls with status `error` are excluded from matching unless
`exclude_error_calls` is false; `deferred` calls are excluded unless `count_deferred` is true.

Every score carries diagnostics: matched pairs, missing expected calls, unexpected actual calls, the first
divergence index (with the calls there) and per-argument diffs for missing calls that have a same-named
unmatched actual call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalward.metrics.args import (
    ArgDiff,
    ArgsMode,
    ArgsRule,
    Credit,
    CreditMode,
    ListPolicy,
    args_credit,
    check_matchers,
    compare_args,
)
from evalward.metrics.base import Metric, Score, TurnContext
from evalward.metrics.matching import (
    CompatMatrix,
    Pair,
    WeightMatrix,
    compat_matrix,
    first_divergence,
    lcs_pairs,
    max_weight_matching,
    maximum_matching,
    subsequence_pairs,
    weighted_lcs_pairs,
)
from evalward.model import MetricSpec, ToolCall
from evalward.model.text import ratio

Over = Literal["tool_calls", "steps"]
AlignmentKind = Literal["tool_calls", "steps", "handoffs"]


class ToolArgsOverride(BaseModel):
    """Per-tool argument rule, replacing the metric-wide `args_mode` / `keys` for that tool."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    args_mode: ArgsMode | None = None
    keys: list[str] | None = None


class TrajectoryOptions(BaseModel):
    """Options shared by every trajectory metric."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    over: Over | None = Field(
        default=None,
        description="`tool_calls` or `steps`; default: tool_calls when the turn has expected_tool_calls, "
        "else steps when it has expected_trajectory, else not applicable.",
    )
    args_mode: ArgsMode = "exact"
    keys: list[str] | None = Field(default=None, description="Compare only these argument dot paths.")
    tool_args: dict[str, ToolArgsOverride] = Field(default_factory=dict)
    coerce: bool = False
    list_policy: ListPolicy = "exact"
    match_agent: bool = True
    parallel_unordered: bool = False
    exclude_error_calls: bool = True
    count_deferred: bool = False
    both_empty_score: float = Field(default=1.0, ge=0.0, le=1.0)


class WeightedTrajectoryOptions(TrajectoryOptions):
    """Options of the weighted trajectory metrics: the trajectory options plus the credit formula."""

    credit: CreditMode = Field(
        default="symmetric",
        description="`symmetric`: matching leaves ÷ #(leaves(e) ∪ leaves(a)); `recall`: ÷ #leaves(e).",
    )


def parse_options(model: type[BaseModel], spec: MetricSpec) -> tuple[Any, list[str]]:
    """Validate `spec.options` against `model`: (parsed options or None, problems)."""
    try:
        return model.model_validate(spec.options), []
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            where = ".".join(str(p) for p in error["loc"]) or "options"
            problems.append(f"{spec.name}: option {where}: {error['msg']}")
        return None, problems


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


def rule_for(tool: str, options: TrajectoryOptions) -> ArgsRule:
    """The argument rule for one tool: the per-tool override, else the metric-wide settings."""
    override = options.tool_args.get(tool)
    mode = options.args_mode
    keys = options.keys
    if override is not None:
        mode = override.args_mode or mode
        keys = override.keys if override.keys is not None else keys
    return ArgsRule(
        mode=mode,
        keys=tuple(keys) if keys is not None else None,
        coerce=options.coerce,
        list_policy=options.list_policy,
    )


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


def align(ctx: TurnContext, options: TrajectoryOptions, *, prefer: Over = "tool_calls") -> Alignment | None:
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


def prf(k: int, n: int, m: int, both_empty: float) -> tuple[float, float, float, str]:
    """Precision, recall, F1 and the arithmetic, under the empty rules (k = matched pairs)."""
    if n == 0 and m == 0:
        v = both_empty
        return v, v, v, f"n=m=0 (both empty) → P=R=F1={v:.3f}"
    if n == 0 or m == 0:
        side = "actual" if n == 0 else "expected"
        return 0.0, 0.0, 0.0, f"n={n}, m={m} ({side} empty) → P=R=F1=0.000"
    p, r = k / n, k / m
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f1, f"P={ratio(k, n)}, R={ratio(k, m)}, F1={f1:.3f}"


def _boolean(passed: bool) -> float:
    return 1.0 if passed else 0.0


class TrajectoryMetric(Metric):
    """Shared option parsing and alignment for the trajectory family."""

    scope: ClassVar[Literal["turn", "case"]] = "turn"
    prefer: ClassVar[Over] = "tool_calls"
    allows_parallel_unordered: ClassVar[bool] = False
    options_model: ClassVar[type[TrajectoryOptions]] = TrajectoryOptions

    def check_options(self, spec: MetricSpec) -> list[str]:
        options, problems = parse_options(self.options_model, spec)
        if options is not None and options.parallel_unordered and not self.allows_parallel_unordered:
            problems.append(f"{spec.name}: option parallel_unordered applies to trajectory_exact only")
        return problems

    def options(self, spec: MetricSpec) -> TrajectoryOptions:
        options, problems = parse_options(self.options_model, spec)
        if problems:
            raise ValueError("; ".join(problems))
        assert isinstance(options, TrajectoryOptions)
        return options

    def score_turn(self, ctx: TurnContext) -> Score | None:
        options = self.options(ctx.spec)
        alignment = align(ctx, options, prefer=self.prefer)
        if alignment is None:
            return None
        return self.score_alignment(alignment, options)

    def score_alignment(self, al: Alignment, options: TrajectoryOptions) -> Score:
        raise NotImplementedError


class TrajectoryExact(TrajectoryMetric):
    """1 iff n = m and M(a_i, e_i) for every i; with `parallel_unordered`, calls sharing a `step` are
    compared as a multiset (each step group matched by maximum matching). Both empty → 1."""

    name = "trajectory_exact"
    description = "same calls in the same order (n = m, M(a_i, e_i) for all i); 1/0"
    allows_parallel_unordered = True

    def score_alignment(self, al: Alignment, options: TrajectoryOptions) -> Score:
        if options.parallel_unordered and al.over == "tool_calls":
            return self._parallel(al)
        divergence = first_divergence(al.compat, al.m)
        passed = divergence is None
        details = al.diagnostics(lcs_pairs(al.compat, al.m))
        if passed:
            explanation = f"exact: n=m={al.n}, all {al.n} positions match → 1"
        elif al.n != al.m and divergence == min(al.n, al.m):
            explanation = f"exact: n={al.n} ≠ m={al.m} → 0"
        else:
            explanation = (
                f"exact: first divergence at index {divergence} "
                f"(expected {_label(al.labels_expected, divergence)}, got {_label(al.labels_actual, divergence)}) → 0"
            )
        return Score(_boolean(passed), explanation, details)

    def _parallel(self, al: Alignment) -> Score:
        groups_a = _step_groups([c.step for c in al.actual])
        if any(c.step is not None for c in al.expected):
            groups_e = _step_groups([c.step for c in al.expected])
        else:
            # Unlabelled expectation: cut it where the actual side's step groups fall.
            groups_e, start = [], 0
            for group in groups_a:
                groups_e.append(list(range(start, min(start + len(group), al.m))))
                start += len(group)
            if start < al.m:
                groups_e.append(list(range(start, al.m)))
        pairs: list[Pair] = []
        passed = len(groups_a) == len(groups_e) and al.n == al.m
        for ga, ge in zip(groups_a, groups_e, strict=False):
            sub = [[al.compat[i][j] for j in ge] for i in ga]
            local = maximum_matching(sub, len(ge))
            pairs.extend((ga[i], ge[j]) for i, j in local)
            if len(local) != len(ga) or len(ga) != len(ge):
                passed = False
        details = al.diagnostics(sorted(pairs))
        details["step_groups"] = {"actual": groups_a, "expected": groups_e}
        verdict = "every step group matches as a multiset → 1" if passed else "step groups differ → 0"
        explanation = (
            f"exact (parallel_unordered): {len(groups_a)} actual vs {len(groups_e)} expected groups, {verdict}"
        )
        return Score(_boolean(passed), explanation, details)


def _step_groups(steps: list[int | None]) -> list[list[int]]:
    """Consecutive indices sharing a non-None step; a call without a step is a group of its own."""
    groups: list[list[int]] = []
    for index, step in enumerate(steps):
        if groups and step is not None and steps[groups[-1][-1]] == step:
            groups[-1].append(index)
        else:
            groups.append([index])
    return groups


def _label(labels: list[str], index: int | None) -> str:
    if index is None or index >= len(labels):
        return "<end>"
    return labels[index]


class TrajectoryInOrder(TrajectoryMetric):
    """1 iff the expected items form a subsequence of the actual ones under M (extras allowed anywhere).
    Left-to-right scan (optimal for the subsequence test). Empty expected → 1."""

    name = "trajectory_in_order"
    description = "expected calls appear in order, extras allowed; 1/0"

    def score_alignment(self, al: Alignment, options: TrajectoryOptions) -> Score:
        pairs = subsequence_pairs(al.compat, al.m)
        passed = len(pairs) == al.m
        explanation = f"in_order: {len(pairs)}/{al.m} expected items found in order → {_boolean(passed):g}"
        return Score(_boolean(passed), explanation, al.diagnostics(pairs))


class TrajectoryAnyOrder(TrajectoryMetric):
    """Superset: 1 iff k* = m (every expected item matched to a distinct actual item; extras allowed).
    Empty expected → 1."""

    name = "trajectory_any_order"
    description = "every expected call matched to a distinct actual call (k* = m); 1/0"

    def score_alignment(self, al: Alignment, options: TrajectoryOptions) -> Score:
        pairs = maximum_matching(al.compat, al.m)
        passed = len(pairs) == al.m
        explanation = f"any_order: k*={len(pairs)} of m={al.m} expected items matched → {_boolean(passed):g}"
        return Score(_boolean(passed), explanation, al.diagnostics(pairs))


class TrajectorySuperset(TrajectoryAnyOrder):
    """Alias of `trajectory_any_order`: 1 iff k* = m."""

    name = "trajectory_superset"
    description = "alias of trajectory_any_order (k* = m); 1/0"


class TrajectorySubset(TrajectoryMetric):
    """1 iff k* = n (every actual item matched to a distinct expected item; missing allowed).
    Empty actual → 1."""

    name = "trajectory_subset"
    description = "every actual call matched to a distinct expected call (k* = n); 1/0"

    def score_alignment(self, al: Alignment, options: TrajectoryOptions) -> Score:
        pairs = maximum_matching(al.compat, al.m)
        passed = len(pairs) == al.n
        explanation = f"subset: k*={len(pairs)} of n={al.n} actual items matched → {_boolean(passed):g}"
        return Score(_boolean(passed), explanation, al.diagnostics(pairs))


class TrajectorySameMultiset(TrajectoryMetric):
    """1 iff k* = n = m (same multiset of items, any order). Both empty → 1."""

    name = "trajectory_same_multiset"
    description = "same multiset of calls in any order (k* = n = m); 1/0"

    def score_alignment(self, al: Alignment, options: TrajectoryOptions) -> Score:
        pairs = maximum_matching(al.compat, al.m)
        passed = len(pairs) == al.n == al.m
        explanation = f"same_multiset: k*={len(pairs)}, n={al.n}, m={al.m} → {_boolean(passed):g}"
        return Score(_boolean(passed), explanation, al.diagnostics(pairs))


class TrajectoryPrecision(TrajectoryMetric):
    """P = k*/n (k* = maximum matching under M). Both empty → both_empty_score (1.0); one empty → 0."""

    name = "trajectory_precision"
    description = "P = k*/n over a maximum matching of calls"

    def score_alignment(self, al: Alignment, options: TrajectoryOptions) -> Score:
        pairs = maximum_matching(al.compat, al.m)
        p, _, _, _ = prf(len(pairs), al.n, al.m, options.both_empty_score)
        arithmetic = _empty_rule(al.n, al.m, p) or f"P={ratio(len(pairs), al.n)}"
        return Score(p, f"k*={len(pairs)}, {arithmetic}", al.diagnostics(pairs))


class TrajectoryRecall(TrajectoryMetric):
    """R = k*/m (k* = maximum matching under M). Both empty → both_empty_score (1.0); one empty → 0."""

    name = "trajectory_recall"
    description = "R = k*/m over a maximum matching of calls"

    def score_alignment(self, al: Alignment, options: TrajectoryOptions) -> Score:
        pairs = maximum_matching(al.compat, al.m)
        _, r, _, _ = prf(len(pairs), al.n, al.m, options.both_empty_score)
        arithmetic = _empty_rule(al.n, al.m, r) or f"R={ratio(len(pairs), al.m)}"
        return Score(r, f"k*={len(pairs)}, {arithmetic}", al.diagnostics(pairs))


def _empty_rule(n: int, m: int, value: float) -> str | None:
    if n == 0 and m == 0:
        return f"n=m=0 (both empty) → {value:.3f}"
    if n == 0 or m == 0:
        return f"n={n}, m={m} ({'actual' if n == 0 else 'expected'} empty) → 0.000"
    return None


class TrajectoryF1(TrajectoryMetric):
    """F1 = 2PR/(P+R) with P = k*/n, R = k*/m over a maximum matching. Both empty → both_empty_score (1.0);
    one empty → 0."""

    name = "trajectory_f1"
    description = "F1 of P = k*/n and R = k*/m over a maximum matching of calls"

    def score_alignment(self, al: Alignment, options: TrajectoryOptions) -> Score:
        pairs = maximum_matching(al.compat, al.m)
        p, r, f1, arithmetic = prf(len(pairs), al.n, al.m, options.both_empty_score)
        details = al.diagnostics(pairs)
        details.update(precision=p, recall=r)
        return Score(f1, f"k*={len(pairs)}, {arithmetic}", details)


class TrajectoryOrderedF1(TrajectoryMetric):
    """P, R, F1 with k* replaced by LCS_M(A, E), the longest common subsequence under M. Empty rules as F1."""

    name = "trajectory_ordered_f1"
    description = "F1 with k* replaced by the LCS of actual and expected calls"

    def score_alignment(self, al: Alignment, options: TrajectoryOptions) -> Score:
        pairs = lcs_pairs(al.compat, al.m)
        p, r, f1, arithmetic = prf(len(pairs), al.n, al.m, options.both_empty_score)
        details = al.diagnostics(pairs)
        details.update(precision=p, recall=r)
        return Score(f1, f"LCS={len(pairs)}, {arithmetic}", details)


class TrajectorySubsequence(TrajectoryMetric):
    """Music-store partial credit (LangSmith tutorial `trajectory_subsequence`), reproduced exactly:
    0 when n < m; else walk the actual steps left to right, advancing through the reference on each match;
    score = matched/m. Empty reference → 1.0. Over steps by default (tool calls when only those are
    expected)."""

    name = "trajectory_subsequence"
    description = "music-store partial credit: reference steps found in order / m (0 if n < m)"
    prefer = "steps"

    def score_alignment(self, al: Alignment, options: TrajectoryOptions) -> Score:
        if al.m == 0:
            return Score(1.0, "empty reference → 1.000 (nothing expected)", al.diagnostics([]))
        if al.n < al.m:
            details = al.diagnostics(subsequence_pairs(al.compat, al.m))
            return Score(0.0, f"actual has n={al.n} < m={al.m} reference items → 0", details)
        pairs = subsequence_pairs(al.compat, al.m)
        return Score(len(pairs) / al.m, f"subsequence: {ratio(len(pairs), al.m)}", al.diagnostics(pairs))


def _num(value: float) -> str:
    """A credit or credit sum as explanations print it (three decimals)."""
    return f"{value:.3f}"


def weighted_prf(k: float, n: int, m: int, both_empty: float) -> tuple[float, float, float, str]:
    """P = k/n, R = k/m, F1 = 2PR/(P+R) for a credit sum k, under the same empty rules as `prf`."""
    if n == 0 or m == 0:
        return prf(0, n, m, both_empty)
    p, r = k / n, k / m
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f1, f"P={_num(k)}/{n}={p:.3f}, R={_num(k)}/{m}={r:.3f}, F1={f1:.3f}"


class WeightedTrajectoryMetric(TrajectoryMetric):
    """Shared pairing for the `weighted_*` metrics: maximum-weight matching, or weighted LCS when ordered."""

    options_model = WeightedTrajectoryOptions
    ordered: ClassVar[bool] = False
    part: ClassVar[Literal["precision", "recall", "f1"]] = "f1"

    def score_alignment(self, al: Alignment, options: TrajectoryOptions) -> Score:
        assert isinstance(options, WeightedTrajectoryOptions)
        weights, partial = al.weights(options.credit)
        pairs = weighted_lcs_pairs(weights, al.m) if self.ordered else max_weight_matching(weights, al.m)
        credits = [weights[i][j] for i, j in pairs]
        k = sum(credits)
        p, r, f1, arithmetic = weighted_prf(k, al.n, al.m, options.both_empty_score)
        value = {"precision": p, "recall": r, "f1": f1}[self.part]
        details = al.diagnostics(pairs)
        details.update(
            precision=p,
            recall=r,
            credit_mode=options.credit,
            weighted_k=k,
            credits=[
                {
                    "actual": i,
                    "expected": j,
                    "credit": weights[i][j],
                    "arithmetic": partial[(i, j)].render() if (i, j) in partial else "1.000 (match)",
                    "arg_diffs": [d.as_dict() for d in al.diff(i, j)] if (i, j) in partial else [],
                }
                for i, j in pairs
            ],
        )
        symbol = "Σcredit(LCS)" if self.ordered else "k*=Σcredit"
        total = f"{' + '.join(_num(c) for c in credits)} = {_num(k)}" if len(credits) > 1 else _num(k)
        empty = _empty_rule(al.n, al.m, value)
        if empty is not None:
            return Score(value, f"{symbol}=0, {empty}", details)
        shown = {
            "precision": f"P={_num(k)}/{al.n}={p:.3f}",
            "recall": f"R={_num(k)}/{al.m}={r:.3f}",
            "f1": arithmetic,
        }[self.part]
        return Score(value, f"{symbol}={total}, {shown}", details)


class TrajectoryWeightedPrecision(WeightedTrajectoryMetric):
    """P_w = k*_w/n, k*_w = Σ credit(a, e) over a maximum-weight bipartite matching (Hungarian algorithm);
    credit in [0, 1] (module docstring). Both empty → both_empty_score (1.0); one empty → 0."""

    name = "trajectory_weighted_precision"
    description = "P = Σcredit/n over a maximum-weight matching (partial argument credit)"
    part = "precision"


class TrajectoryWeightedRecall(WeightedTrajectoryMetric):
    """R_w = k*_w/m, k*_w = Σ credit(a, e) over a maximum-weight bipartite matching (Hungarian algorithm).
    Both empty → both_empty_score (1.0); one empty → 0."""

    name = "trajectory_weighted_recall"
    description = "R = Σcredit/m over a maximum-weight matching (partial argument credit)"
    part = "recall"


class TrajectoryWeightedF1(WeightedTrajectoryMetric):
    """F1 = 2·P_w·R_w/(P_w+R_w) with P_w = k*_w/n, R_w = k*_w/m, k*_w = Σ credit over a maximum-weight
    bipartite matching (Hungarian algorithm). Both empty → both_empty_score (1.0); one empty → 0."""

    name = "trajectory_weighted_f1"
    description = "F1 of P = Σcredit/n and R = Σcredit/m over a maximum-weight matching"


class TrajectoryWeightedOrderedF1(WeightedTrajectoryMetric):
    """P, R, F1 with k*_w = Σ credit over a maximum-weight common subsequence (weighted LCS:
    best[i][j] = max(best[i+1][j], best[i][j+1], w_ij + best[i+1][j+1])). Empty rules as F1."""

    name = "trajectory_weighted_ordered_f1"
    description = "F1 with k* replaced by the credit of a maximum-weight common subsequence"
    ordered = True


TRAJECTORY_METRICS: tuple[type[TrajectoryMetric], ...] = (
    TrajectoryExact,
    TrajectoryInOrder,
    TrajectoryAnyOrder,
    TrajectorySuperset,
    TrajectorySubset,
    TrajectorySameMultiset,
    TrajectoryPrecision,
    TrajectoryRecall,
    TrajectoryF1,
    TrajectoryOrderedF1,
    TrajectorySubsequence,
    TrajectoryWeightedPrecision,
    TrajectoryWeightedRecall,
    TrajectoryWeightedF1,
    TrajectoryWeightedOrderedF1,
)
