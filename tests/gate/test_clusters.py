"""The clustered analysis (docs/gate.md §1, §3–§5): SE_cl, one sign flip per cluster, whole-cluster bootstrap.

Hand calculations are in the comments; the statistics are checked on their own first, then through decide().
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence

import pytest
from gate_builders import result, run

from evalward.gate import GatePolicy, compare, decide, stats
from evalward.model import CaseResult, RunResult

POLICY_M = GatePolicy(metrics=["m"], alpha=0.05, inference="population")
"""The clustered arithmetic of docs/gate.md §3 and §5 (SE_cl, whole-cluster bootstrap) is the population frame's."""


def labelled(run_id: str, scores: Mapping[str, Sequence[float]], clusters: Mapping[str, str | None]) -> RunResult:
    """A run of metric `m`: per case its scores over repetitions, each result carrying the case's label."""
    cases: list[CaseResult] = []
    for case_id, values in scores.items():
        for repetition, value in enumerate(values):
            one = result(case_id, {"m": value}, repetition=repetition)
            cases.append(one.model_copy(update={"cluster": clusters.get(case_id)}))
    return run(run_id, cases, repetitions=max(len(v) for v in scores.values()))


# Six cases at k = 1 in three clusters; cluster A loses both cases, B one, C none:
#   d = (−1, −1 | −1, 0 | 0, 0), Δ̂ = −3/6 = −0.5.
SIX = {"a1": "A", "a2": "A", "b1": "B", "b2": "B", "c1": "C", "c2": "C"}
SIX_BEFORE = {case: [1.0] for case in SIX}
SIX_AFTER = {"a1": [0.0], "a2": [0.0], "b1": [0.0], "b2": [1.0], "c1": [1.0], "c2": [1.0]}


class TestClusteredStandardError:
    def test_hand_example(self) -> None:
        # Δ̂ = −0.5. Σ_{i∈g}(d_i − Δ̂): A (−0.5) + (−0.5) = −1; B (−0.5) + (+0.5) = 0; C 0.5 + 0.5 = 1.
        # SE_cl = (1/6) · √(3/2 · (1 + 0 + 1)) = √3/6 = 0.288675…
        se = stats.clustered_se([-1, -1, -1, 0, 0, 0], ["A", "A", "B", "B", "C", "C"])
        assert se == pytest.approx(math.sqrt(3) / 6, abs=1e-15)
        # unclustered for contrast: s_d = √(Σ(d − Δ̂)²/5) = √(1.5/5), s_d/√6 = 0.2236 — the clusters widen it
        assert statistics.stdev([-1, -1, -1, 0, 0, 0]) / math.sqrt(6) == pytest.approx(math.sqrt(0.3 / 6))

    def test_singleton_clusters_give_the_paired_se(self) -> None:
        # G = n: (1/n)·√(n/(n−1)·Σ(d_i − Δ̂)²) = √(Σ(d_i − Δ̂)²/(n−1))/√n = s_d/√n.
        # d = (0.5, −0.25, 1, 0): Δ̂ = 0.3125, Σ(d − Δ̂)² = 0.921875 → √(0.921875/3)/2 = 0.277170…
        se = stats.clustered_se([0.5, -0.25, 1.0, 0.0], ["w", "x", "y", "z"])
        assert se == pytest.approx(math.sqrt(0.921875 / 3) / 2, abs=1e-15)

    def test_one_cluster_has_no_standard_error(self) -> None:
        assert stats.clustered_se([-1.0, 0.0, 0.5], ["A", "A", "A"]) is None

    def test_grouping_keeps_first_appearance_order(self) -> None:
        grouped = stats.group_by_cluster([0.5, -1.0, 0.25, -0.5], ["B", "A", "B", "C"])
        assert (grouped.sums, grouped.sizes, grouped.count) == ([0.75, -1.0, -0.5], [2, 1, 1], 3)


class TestClusterBootstrap:
    def test_singleton_clusters_are_the_case_bootstrap_exactly(self) -> None:
        values = [-1.0, 0.0, 0.5, -0.25, 1.0, -0.75, 0.0]
        plain = stats.bootstrap_mean_bounds(values, alpha=0.05, seed=11, resamples=2000)
        clustered = stats.bootstrap_cluster_mean_bounds(values, [1] * 7, alpha=0.05, seed=11, resamples=2000)
        assert clustered == plain

    def test_whole_clusters_are_resampled(self) -> None:
        # Two clusters of two cases: A sums to −2, B to 0. A resample of two clusters is AA (mean −4/4 = −1),
        # AB or BA (−2/4 = −0.5) or BB (0); AA and BB each have probability ¼ > α, so L = −1 and U = 0.
        low, high = stats.bootstrap_cluster_mean_bounds([-2.0, 0.0], [2, 2], alpha=0.05, seed=3, resamples=4000)
        assert (low, high) == (-1.0, 0.0)

    def test_unequal_cluster_sizes_weight_by_cases(self) -> None:
        # One cluster of 3 cases summing to −3 and one of 1 case at 0: AB has mean (−3 + 0)/(3 + 1) = −0.75,
        # not the mean of the two cluster means (−0.5); AA is −1 and BB is 0.
        low, high = stats.bootstrap_cluster_mean_bounds([-3.0, 0.0], [3, 1], alpha=0.2, seed=5, resamples=4000)
        assert (low, high) == (-1.0, 0.0)
        low, high = stats.bootstrap_cluster_mean_bounds([-3.0, 0.0], [3, 1], alpha=0.3, seed=5, resamples=4000)
        assert low == high == -0.75

    def test_bad_input(self) -> None:
        with pytest.raises(ValueError, match="one entry per cluster"):
            stats.bootstrap_cluster_mean_bounds([1.0], [1, 2], alpha=0.05, seed=1)
        with pytest.raises(ValueError, match="at least one case"):
            stats.bootstrap_cluster_mean_bounds([1.0], [0], alpha=0.05, seed=1)


class TestDecideClustered:
    def test_hand_example_through_decide(self) -> None:
        base = labelled("base", SIX_BEFORE, SIX)
        head = labelled("head", SIX_AFTER, SIX)
        (metric,) = decide(head, base, POLICY_M).metrics
        # Cluster sums D = (A −2, B −1, C 0); C never changes under a flip, so enumerate 2² = 4 vectors over
        # (−2, −1): sums −3 (identity), +1, −1, +3 → only the identity is ≤ −3 → p = 1/4.
        assert (metric.test, metric.p_value, metric.n_clusters) == ("sign_flip_exact", 0.25, 3)
        assert metric.se == pytest.approx(math.sqrt(3) / 6, abs=1e-15)
        assert metric.delta == -0.5
        # MDE = (z_0.95 + z_0.8) · SE_cl = (1.644854 + 0.841621) · 0.288675 = 0.717783
        assert metric.mde == pytest.approx(2.486475 * math.sqrt(3) / 6, abs=1e-6)
        assert "n=6 paired cases in G=3 clusters" in metric.explanation
        assert (
            "clustered sign-flip (one sign per cluster sum D_g, G=3 clusters of n=6 cases): exact over the "
            "2^2 = 4 sign vectors of the 2 non-zero D_g: 1 with Σσ_gD_g ≤ ΣD_g → p = 1/4 = 0.25"
        ) in metric.explanation
        assert "paired bootstrap (S=10000, whole clusters, percentile; population frame)" in metric.explanation
        assert "SE_cl = (1/n)·√(G/(G−1)·Σ_g(D_g − n_g·Δ̂)²) = 0.289" in metric.explanation

    def test_without_labels_nothing_changes(self) -> None:
        # The same scores unlabelled: binary k = 1 → exact McNemar, n10 = 3, n01 = 0 → p = 1/2³ = 1/8.
        base = labelled("base", SIX_BEFORE, {})
        head = labelled("head", SIX_AFTER, {})
        (metric,) = decide(head, base, POLICY_M).metrics
        assert (metric.test, metric.p_value, metric.n_clusters) == ("mcnemar_exact", 0.125, None)
        # se is s_d/√n: √(1.5/5)/√6
        assert metric.se == pytest.approx(math.sqrt(0.3 / 6))
        assert "cluster" not in metric.explanation

    def test_eight_drops_from_two_documents_are_two_pieces_of_evidence(self) -> None:
        # 8 cases from 2 documents all go pass → fail. Unclustered: McNemar n10 = 8 → p = 1/256 → REGRESSED.
        # Clustered: D = (−4, −4), 4 sign vectors, only the identity reaches −8 → p = 1/4: not significant;
        # every cluster resample has mean −1, so L = −1 < −δ_ni → INCONCLUSIVE, not a blocking regression.
        clusters = {f"c{i}": ("doc-1" if i < 4 else "doc-2") for i in range(8)}
        before = {case: [1.0] for case in clusters}
        after = {case: [0.0] for case in clusters}
        flat = decide(labelled("head", after, {}), labelled("base", before, {}), POLICY_M)
        assert (flat.metrics[0].p_value, flat.metrics[0].verdict, flat.outcome) == (1 / 256, "regressed", "fail")
        grouped = decide(labelled("head", after, clusters), labelled("base", before, clusters), POLICY_M)
        (metric,) = grouped.metrics
        assert (metric.p_value, metric.n_clusters, metric.ci_low, metric.ci_high) == (0.25, 2, -1.0, -1.0)
        assert (metric.verdict, grouped.outcome) == ("inconclusive", "inconclusive")
        # G = 2 leaves one degree of freedom: SE_cl = (1/8)·√(2/1 · ((−4 + 4)² + (−4 + 4)²)) = 0
        assert metric.se == 0.0

    def test_unlabelled_cases_are_clusters_of_one(self) -> None:
        # a1, a2 share "A"; b1 … c2 have no label → G = 1 + 4 = 5
        clusters: dict[str, str | None] = {"a1": "A", "a2": "A"}
        (metric,) = decide(
            labelled("head", SIX_AFTER, clusters), labelled("base", SIX_BEFORE, clusters), POLICY_M
        ).metrics
        # D = (A −2, b1 −1, b2 0, c1 0, c2 0): non-zero (−2, −1) → p = 1/4 again, G = 5
        assert (metric.n_clusters, metric.p_value) == (5, 0.25)
        # SE_cl: Δ̂ = −0.5; residual sums A −1, b1 −0.5, b2 +0.5, c1 +0.5, c2 +0.5; Σ² = 1 + 4·0.25 = 2;
        # (1/6)·√(5/4 · 2) = √2.5/6
        assert metric.se == pytest.approx(math.sqrt(2.5) / 6, abs=1e-15)

    def test_a_label_equal_to_a_case_id_does_not_merge_them(self) -> None:
        # c1 is labelled "b2" and b2 is unlabelled: they stay two clusters (labels and case ids never mix).
        clusters: dict[str, str | None] = {"c1": "b2"}
        (metric,) = decide(
            labelled("head", SIX_AFTER, clusters), labelled("base", SIX_BEFORE, clusters), POLICY_M
        ).metrics
        assert metric.n_clusters == 6

    def test_labels_come_from_the_current_run_else_the_baseline(self) -> None:
        base = labelled("base", SIX_BEFORE, SIX)
        head_unlabelled = labelled("head", SIX_AFTER, {})
        verdict = decide(head_unlabelled, base, POLICY_M)
        assert verdict.metrics[0].n_clusters == 3
        assert [d.cluster for d in verdict.cases] == ["A", "A", "B", "B", "C", "C"]
        # the current run's labels win: relabelled into two clusters, G = 2
        head_relabelled = labelled("head", SIX_AFTER, dict.fromkeys(SIX, "X") | {"c1": "Y", "c2": "Y"})
        assert decide(head_relabelled, base, POLICY_M).metrics[0].n_clusters == 2

    def test_many_clusters_use_monte_carlo(self) -> None:
        # 20 clusters of one non-zero d each: m = 20 > 16 → Monte Carlo over cluster signs.
        clusters = {f"c{i:02d}": f"doc-{i}" for i in range(20)}
        before = {case: [1.0] for case in clusters}
        after = {case: [0.0] for case in clusters}
        (metric,) = decide(labelled("head", after, clusters), labelled("base", before, clusters), POLICY_M).metrics
        # P(a random vector reaches −20) = 2^−20: no draw does, p = 1/(1 + 10000)
        assert (metric.test, metric.p_value, metric.n_clusters) == ("sign_flip_mc", 1 / 10_001, 20)
        assert "Monte Carlo, S=10000 over 20 non-zero D_g" in metric.explanation

    def test_graded_scores_over_repetitions(self) -> None:
        # k = 2, graded: b_i = 1 everywhere; c_i = means (0.5, 0.75 | 1, 0.25). Clusters P = {p1, p2},
        # Q = {q1, q2}: d = (−0.5, −0.25 | 0, −0.75), D = (−0.75, −0.75), Δ̂ = −1.5/4 = −0.375.
        # Flips: −1.5 (identity), 0, 0, +1.5 → p = 1/4. Residual sums: P −0.75 + 0.75 = 0, Q 0 → SE_cl = 0.
        clusters = {"p1": "P", "p2": "P", "q1": "Q", "q2": "Q"}
        before = {case: [1.0, 1.0] for case in clusters}
        after = {"p1": [0.5, 0.5], "p2": [1.0, 0.5], "q1": [1.0, 1.0], "q2": [0.5, 0.0]}
        (metric,) = decide(labelled("head", after, clusters), labelled("base", before, clusters), POLICY_M).metrics
        assert (metric.p_value, metric.n_clusters, metric.delta, metric.se) == (0.25, 2, -0.375, 0.0)
        assert (metric.k_baseline, metric.k_current) == (2, 2)

    def test_compare_is_clustered_too_and_deterministic(self) -> None:
        base = labelled("base", SIX_BEFORE, SIX)
        head = labelled("head", SIX_AFTER, SIX)
        first = compare(base, head, POLICY_M)
        assert first.metrics[0].n_clusters == 3
        assert first.model_dump_json() == compare(base, head, POLICY_M).model_dump_json()
