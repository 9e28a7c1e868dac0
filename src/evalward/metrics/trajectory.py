"""Native trajectory metrics: match modes over tool calls or step names (docs/metrics.md §1–§2).

Notation: A and E are the actual and expected items (n = |A|, m = |E|) and M the match predicate, as built
by `trajectory_alignment` (which also filters the calls and writes the diagnostics every score carries);
k* = size of a maximum bipartite matching under M; LCS = longest common subsequence under M. Duplicates
always count. The options are `trajectory_options`'; the `weighted_*` metrics, which replace M by a partial
credit, are in `trajectory_weighted`.

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

Empty rules: P, R, F1 = `both_empty_score` (default 1.0) when n = m = 0, and 0.0 when exactly one side
is empty. Boolean modes: empty E passes in_order / any_order (and subset iff A is empty too); exact
passes only if A is empty too. `trajectory_subsequence` with an empty reference scores 1.0 (nothing was
expected; the seed divides by zero there).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from evalward.metrics.base import Metric, Score, TurnContext
from evalward.metrics.matching import Pair, first_divergence, lcs_pairs, maximum_matching, subsequence_pairs
from evalward.metrics.registry import register_metric
from evalward.metrics.trajectory_alignment import Alignment, align
from evalward.metrics.trajectory_options import ExactTrajectoryOptions, Over, TrajectoryOptions
from evalward.model.text import ratio


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
    """Shared alignment for the trajectory family."""

    scope: ClassVar[Literal["turn", "case"]] = "turn"
    prefer: ClassVar[Over] = "tool_calls"
    Options: ClassVar[type[TrajectoryOptions]] = TrajectoryOptions

    def score_turn(self, ctx: TurnContext[TrajectoryOptions]) -> Score | None:
        options = ctx.options
        alignment = align(ctx, options, prefer=self.prefer)
        if alignment is None:
            return None
        return self.score_alignment(alignment, options)

    def score_alignment(self, al: Alignment, options: TrajectoryOptions) -> Score:
        raise NotImplementedError


@register_metric
class TrajectoryExact(TrajectoryMetric):
    """1 iff n = m and M(a_i, e_i) for every i; with `parallel_unordered`, calls sharing a `step` are
    compared as a multiset (each step group matched by maximum matching). Both empty → 1."""

    name = "trajectory_exact"
    description = "same calls in the same order (n = m, M(a_i, e_i) for all i); 1/0"
    Options = ExactTrajectoryOptions

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


@register_metric
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


@register_metric
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


@register_metric
class TrajectorySuperset(TrajectoryAnyOrder):
    """Alias of `trajectory_any_order`: 1 iff k* = m."""

    name = "trajectory_superset"
    description = "alias of trajectory_any_order (k* = m); 1/0"


@register_metric
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


@register_metric
class TrajectorySameMultiset(TrajectoryMetric):
    """1 iff k* = n = m (same multiset of items, any order). Both empty → 1."""

    name = "trajectory_same_multiset"
    description = "same multiset of calls in any order (k* = n = m); 1/0"

    def score_alignment(self, al: Alignment, options: TrajectoryOptions) -> Score:
        pairs = maximum_matching(al.compat, al.m)
        passed = len(pairs) == al.n == al.m
        explanation = f"same_multiset: k*={len(pairs)}, n={al.n}, m={al.m} → {_boolean(passed):g}"
        return Score(_boolean(passed), explanation, al.diagnostics(pairs))


@register_metric
class TrajectoryPrecision(TrajectoryMetric):
    """P = k*/n (k* = maximum matching under M). Both empty → both_empty_score (1.0); one empty → 0."""

    name = "trajectory_precision"
    description = "P = k*/n over a maximum matching of calls"

    def score_alignment(self, al: Alignment, options: TrajectoryOptions) -> Score:
        pairs = maximum_matching(al.compat, al.m)
        p, _, _, _ = prf(len(pairs), al.n, al.m, options.both_empty_score)
        arithmetic = empty_rule(al.n, al.m, p) or f"P={ratio(len(pairs), al.n)}"
        return Score(p, f"k*={len(pairs)}, {arithmetic}", al.diagnostics(pairs))


@register_metric
class TrajectoryRecall(TrajectoryMetric):
    """R = k*/m (k* = maximum matching under M). Both empty → both_empty_score (1.0); one empty → 0."""

    name = "trajectory_recall"
    description = "R = k*/m over a maximum matching of calls"

    def score_alignment(self, al: Alignment, options: TrajectoryOptions) -> Score:
        pairs = maximum_matching(al.compat, al.m)
        _, r, _, _ = prf(len(pairs), al.n, al.m, options.both_empty_score)
        arithmetic = empty_rule(al.n, al.m, r) or f"R={ratio(len(pairs), al.m)}"
        return Score(r, f"k*={len(pairs)}, {arithmetic}", al.diagnostics(pairs))


def empty_rule(n: int, m: int, value: float) -> str | None:
    """The arithmetic of a score decided by an empty side (the empty rules above); None when neither is empty."""
    if n == 0 and m == 0:
        return f"n=m=0 (both empty) → {value:.3f}"
    if n == 0 or m == 0:
        return f"n={n}, m={m} ({'actual' if n == 0 else 'expected'} empty) → 0.000"
    return None


@register_metric
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


@register_metric
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


@register_metric
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
)
