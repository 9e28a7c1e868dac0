"""Step 5 of `gate.decide`, the tests: which metrics are gated, each one's test of record, and how the tests share α.

Tests of record (one-sided, H1: worse; docs/gate.md §4): `case_pass` by the stratified permutation test of
`gate.stratified`; other binary metrics at k = 1 by exact McNemar; the rest by the paired sign-flip test, one sign
per cluster sum D_g when the cases are clustered. The tests share α by weighted Holm, with Tarone's rule
(docs/gate.md §6).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from evalward.gate import stats
from evalward.gate.findings import fmt_p, plural
from evalward.gate.gate_context import GateContext, sub_seed
from evalward.gate.pairing import PairedMetric, case_scores
from evalward.gate.policy import CASE_PASS_METRIC, GatePolicy
from evalward.gate.scores import ScoredResult
from evalward.gate.stratified import PassRateResult, Stratum, pass_rate_test, weighted_holm
from evalward.model.cases import CaseKey
from evalward.model.verdict import TestName


def metric_names(ctx: GateContext) -> tuple[list[str], list[str]]:
    """(gated, reported only), step 5's rule (docs/gate.md §1)."""
    reported: list[str] = []
    if ctx.policy.metrics is not None:
        gated = list(dict.fromkeys(ctx.policy.metrics))
    else:
        with_threshold = {
            m.name
            for r in ctx.current_results
            for m in r.metric_results
            if m.threshold is not None or m.status in ("passed", "failed")
        }
        for info in ctx.current.eval_sets:
            with_threshold.update(m.name for m in info.criteria if m.threshold is not None)
        if with_threshold:
            gated, reported = [CASE_PASS_METRIC], sorted(with_threshold)
        else:
            assert ctx.baseline is not None
            gated = sorted(_score_like(ctx.current_results) & _score_like(ctx.baseline_results)) or [CASE_PASS_METRIC]
    primary = ctx.policy.primary()
    if primary is not None:
        reported = [name for name in dict.fromkeys([*gated, *reported]) if name != primary]
        gated = [primary]
    return gated, reported


def has_thresholds(ctx: GateContext) -> bool:
    """Whether the current run's statuses mean pass/fail: some metric has a threshold, or gives a pass/fail verdict
    without one (a boolean evaluator) (docs/gate.md §2)."""
    if any(
        m.threshold is not None or m.status in ("passed", "failed")
        for r in ctx.current_results
        for m in r.metric_results
    ):
        return True
    return any(m.threshold is not None for info in ctx.current.eval_sets for m in info.criteria)


def _score_like(results: Sequence[ScoredResult]) -> set[str]:
    """Metrics of a run's `results` that read as scores: higher is better and every score lies in [0, 1]
    (docs/gate.md §1).

    The fallback of step 5 gates only these. Latency, tokens, cost, ADK's efficiency counts and other
    lower-is-better counts are informational unless the policy names them: a longer answer or one more model
    call is not a regression by default, and the tests assume s ∈ [0, 1]."""
    score_like: set[str] = set()
    excluded: set[str] = set()
    for result in results:
        for metric in result.metric_results:
            if metric.score is None:
                continue
            if metric.higher_is_better and 0.0 <= metric.score <= 1.0:
                score_like.add(metric.name)
            else:
                excluded.add(metric.name)
    return score_like - excluded


# ----------------------------------------------------------------------------------- the tests of record


@dataclass(frozen=True)
class OneSidedTest:
    """A metric's one-sided test: its p-value, its name and the arithmetic behind it, for the explanation."""

    p_value: float
    test: TestName
    how: str


def one_sided_test(ctx: GateContext, name: str, paired: PairedMetric) -> OneSidedTest:
    """The test of H0: Δ ≥ 0 vs H1: Δ < 0 on the oriented differences."""
    diffs = paired.oriented()
    clusters = paired.clusters(diffs)
    if clusters is not None:
        return _clustered_test(ctx, name, clusters, len(diffs))
    if name == CASE_PASS_METRIC:
        strata = _pass_strata(ctx, paired.keys)
        result = pass_rate_test(strata, seed=sub_seed(ctx.seed, f"stratified:{name}"), resamples=ctx.policy.resamples)
        return OneSidedTest(result.p_value, result.test, stratified_how(result, len(strata)))
    if paired.binary:
        n10 = sum(d < 0 for d in diffs)
        n01 = sum(d > 0 for d in diffs)
        m = n10 + n01
        p = stats.mcnemar_exact_p(n10, n01)
        tail = sum(math.comb(m, j) for j in range(n10, m + 1))
        how = (
            f"exact McNemar: n10={n10} worse, n01={n01} better; p = P[Bin({m}, ½) ≥ {n10}] = {tail}/{2**m} = {fmt_p(p)}"
            if m
            else "exact McNemar: no discordant case, p = 1"
        )
        return OneSidedTest(p, "mcnemar_exact", how)
    result_sf = stats.sign_flip_test(
        diffs,
        seed=sub_seed(ctx.seed, f"sign_flip:{name}"),
        resamples=ctx.policy.resamples,
        exact_max_n=ctx.policy.exact_enumeration_max_n,
    )
    if result_sf.test == "sign_flip_exact":
        how = (
            f"exact sign-flip over the 2^{result_sf.nonzero} = {result_sf.draws} sign vectors of the "
            f"{result_sf.nonzero} non-zero d_i: {result_sf.at_least_as_extreme} with Σσd ≤ Σd → "
            f"p = {result_sf.at_least_as_extreme}/{result_sf.draws} = {fmt_p(result_sf.p_value)}"
        )
    else:
        how = (
            f"Monte Carlo sign-flip, S={result_sf.draws} over {result_sf.nonzero} non-zero d_i: "
            f"p = (1 + {result_sf.at_least_as_extreme})/(1 + {result_sf.draws}) = {fmt_p(result_sf.p_value)}"
        )
    return OneSidedTest(result_sf.p_value, result_sf.test, how)


def _clustered_test(ctx: GateContext, name: str, clusters: stats.Clusters, n: int) -> OneSidedTest:
    """The sign-flip test on the cluster sums D_g: one sign per cluster, T(σ) = Σ_g σ_g D_g ≤ Σ_g D_g."""
    result = stats.sign_flip_test(
        clusters.sums,
        seed=sub_seed(ctx.seed, f"sign_flip:{name}"),
        resamples=ctx.policy.resamples,
        exact_max_n=ctx.policy.exact_enumeration_max_n,
    )
    head = f"clustered sign-flip (one sign per cluster sum D_g, G={clusters.count} clusters of n={n} cases)"
    if result.test == "sign_flip_exact":
        how = (
            f"{head}: exact over the 2^{result.nonzero} = {result.draws} sign vectors of the {result.nonzero} "
            f"non-zero D_g: {result.at_least_as_extreme} with Σσ_gD_g ≤ ΣD_g → "
            f"p = {result.at_least_as_extreme}/{result.draws} = {fmt_p(result.p_value)}"
        )
    else:
        how = (
            f"{head}: Monte Carlo, S={result.draws} over {result.nonzero} non-zero D_g: "
            f"p = (1 + {result.at_least_as_extreme})/(1 + {result.draws}) = {fmt_p(result.p_value)}"
        )
    return OneSidedTest(result.p_value, result.test, how)


def _pass_strata(ctx: GateContext, keys: Sequence[CaseKey]) -> list[Stratum]:
    """Each case's case_pass scores as counts (errors per policy, as `case_scores`); cases scored on both sides."""
    strata: list[Stratum] = []
    for key in keys:
        before = case_scores(ctx, ctx.base[key], CASE_PASS_METRIC)
        after = case_scores(ctx, ctx.cur[key], CASE_PASS_METRIC)
        if before and after:
            strata.append(Stratum(len(before), len(after), int(sum(before)), int(sum(after))))
    return strata


def stratified_how(result: PassRateResult, n: int, *, what: str = "passing repetitions") -> str:
    """The arithmetic of a stratified test, for the explanation."""
    head = (
        f"stratified permutation test ({what} exchanged within each case, weights 1/(p̂(1−p̂)) with p̂ the case's "
        f"pooled rate): {result.informative} of {n} cases could move, T = {result.statistic:.2f} against "
        f"{result.expected:.2f} expected"
    )
    if result.informative == 0:
        return f"{head}; no case could move, p = 1"
    if result.test == "stratified_exact":
        return f"{head}; exact over {plural(result.types, 'case type')}: p = {fmt_p(result.p_value)}"
    return (
        f"{head}; Monte Carlo over {plural(result.types, 'case type')}, S={result.draws}: "
        f"p = (1 + {result.at_least_as_extreme})/(1 + {result.draws}) = {fmt_p(result.p_value)}"
    )


# ----------------------------------------------------------------------------------------- sharing α


@dataclass(frozen=True)
class AlphaShares:
    """The tests that share α and their adjusted p-values."""

    p_adjusted: Mapping[str, float]
    """Member (a gated metric, `NEWLY_BROKEN_TEST` or `error_rate`) → its p-value adjusted for the family."""
    size: int
    """How many tests share α."""


def share_alpha(
    policy: GatePolicy,
    gated: Sequence[tuple[str, float]],
    extra: Sequence[tuple[str, float, float]],
) -> AlphaShares:
    """The family that shares α (weighted Holm): the gated metrics' tests `gated` as (metric, p), splitting what
    the `extra` tests (member, p, share) leave; `extra` holds only the tests that can reach their share of α (the
    caller applies Tarone's rule: a test whose most extreme outcome cannot reach its share is left out and its
    share goes to the rest). Without correction the raw p-values are used."""
    family: list[tuple[str, float, float]] = []  # (member, p, weight)
    main = 1.0
    for _, _, share in extra:
        main -= share
    if gated:
        family.extend((name, p, main / len(gated)) for name, p in gated)
    family.extend(extra)
    raw = [p for _, p, _ in family]
    holm = policy.correction == "holm" and bool(family)
    adjusted = weighted_holm(raw, [w for _, _, w in family]) if holm else list(raw)
    return AlphaShares(
        p_adjusted={member: p for (member, _, _), p in zip(family, adjusted, strict=True)}, size=len(family)
    )
