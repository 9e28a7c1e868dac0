"""Weighted trajectory metrics: partial credit for near-miss tool calls (docs/metrics.md §2, §4).

Notation as in `trajectory` (A, E, n, m, the predicate M, k*, LCS).

| metric | score |
| --- | --- |
| `trajectory_weighted_precision` | P_w = k*_w/n, k*_w = Σ credit over a maximum-weight matching (Hungarian) |
| `trajectory_weighted_recall` | R_w = k*_w/m |
| `trajectory_weighted_f1` | 2·P_w·R_w/(P_w+R_w) |
| `trajectory_weighted_ordered_f1` | P, R, F1 with k*_w = Σ credit over a maximum-weight common subsequence |

Weighted (`weighted_*`) metrics replace the 0/1 predicate M by a credit in [0, 1] (docs/metrics.md §4 partial
credit, `args.args_credit`): 0 when the names (or the named agent) differ, 1 when M holds, else the share of
matching argument leaves, `#{p ∈ leaves(e) : a[p] matches} ÷ #(leaves(e) ∪ leaves(a))` (option
`credit: symmetric`, default) or `÷ #leaves(e)` (`credit: recall`). Over steps the credit is 0/1 equality.
The credit of each pair is `trajectory_alignment.call_credit`, its matrix `Alignment.weights`.

Empty rules as the unweighted P, R and F1: `both_empty_score` (default 1.0) when n = m = 0, and 0.0 when
exactly one side is empty.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from evalward.metrics.args import CreditMode
from evalward.metrics.base import Score
from evalward.metrics.matching import max_weight_matching, weighted_lcs_pairs
from evalward.metrics.registry import register_metric
from evalward.metrics.trajectory import TrajectoryMetric, empty_rule, prf
from evalward.metrics.trajectory_alignment import Alignment
from evalward.metrics.trajectory_options import TrajectoryOptions


class WeightedTrajectoryOptions(TrajectoryOptions):
    """Options of the weighted trajectory metrics: the trajectory options plus the credit formula."""

    credit: CreditMode = Field(
        default="symmetric",
        description="`symmetric`: matching leaves ÷ #(leaves(e) ∪ leaves(a)); `recall`: ÷ #leaves(e).",
    )


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

    Options = WeightedTrajectoryOptions
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
        empty = empty_rule(al.n, al.m, value)
        if empty is not None:
            return Score(value, f"{symbol}=0, {empty}", details)
        shown = {
            "precision": f"P={_num(k)}/{al.n}={p:.3f}",
            "recall": f"R={_num(k)}/{al.m}={r:.3f}",
            "f1": arithmetic,
        }[self.part]
        return Score(value, f"{symbol}={total}, {shown}", details)


@register_metric
class TrajectoryWeightedPrecision(WeightedTrajectoryMetric):
    """P_w = k*_w/n, k*_w = Σ credit(a, e) over a maximum-weight bipartite matching (Hungarian algorithm);
    credit in [0, 1] (module docstring). Both empty → both_empty_score (1.0); one empty → 0."""

    name = "trajectory_weighted_precision"
    description = "P = Σcredit/n over a maximum-weight matching (partial argument credit)"
    part = "precision"


@register_metric
class TrajectoryWeightedRecall(WeightedTrajectoryMetric):
    """R_w = k*_w/m, k*_w = Σ credit(a, e) over a maximum-weight bipartite matching (Hungarian algorithm).
    Both empty → both_empty_score (1.0); one empty → 0."""

    name = "trajectory_weighted_recall"
    description = "R = Σcredit/m over a maximum-weight matching (partial argument credit)"
    part = "recall"


@register_metric
class TrajectoryWeightedF1(WeightedTrajectoryMetric):
    """F1 = 2·P_w·R_w/(P_w+R_w) with P_w = k*_w/n, R_w = k*_w/m, k*_w = Σ credit over a maximum-weight
    bipartite matching (Hungarian algorithm). Both empty → both_empty_score (1.0); one empty → 0."""

    name = "trajectory_weighted_f1"
    description = "F1 of P = Σcredit/n and R = Σcredit/m over a maximum-weight matching"


@register_metric
class TrajectoryWeightedOrderedF1(WeightedTrajectoryMetric):
    """P, R, F1 with k*_w = Σ credit over a maximum-weight common subsequence (weighted LCS:
    best[i][j] = max(best[i+1][j], best[i][j+1], w_ij + best[i+1][j+1])). Empty rules as F1."""

    name = "trajectory_weighted_ordered_f1"
    description = "F1 with k* replaced by the credit of a maximum-weight common subsequence"
    ordered = True


WEIGHTED_TRAJECTORY_METRICS: tuple[type[WeightedTrajectoryMetric], ...] = (
    TrajectoryWeightedPrecision,
    TrajectoryWeightedRecall,
    TrajectoryWeightedF1,
    TrajectoryWeightedOrderedF1,
)
