"""Step 5 of `gate.decide`, the verdict per metric: REGRESSED, PASS (only with evidence) or INCONCLUSIVE.

From a metric's paired data and its test of record (`gate.metric_tests`): the percentile paired bootstrap for L
and U (docs/gate.md §5), the rules of docs/gate.md §6, the minimum detectable effect and the cases needed
(docs/gate.md §10), the explanation with its arithmetic, and the metric's findings.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from evalward.gate import stats
from evalward.gate.findings import finding, fmt_num, fmt_p, fmt_signed, plural
from evalward.gate.gate_context import GateContext, sub_seed
from evalward.gate.metric_tests import OneSidedTest
from evalward.gate.pairing import PairedMetric
from evalward.gate.policy import CASE_PASS_METRIC
from evalward.gate.suite import CaseScores, describe, projected_bound, suite_bound
from evalward.model.verdict import (
    Finding,
    FindingKind,
    InferenceFrame,
    MetricComparison,
    MetricVerdict,
    Severity,
    SuiteBound,
)

MIN_UNITS = 5
"""Independent cases (or clusters) a gated metric needs before it can pass: with four, even a sign-flip test
whose every difference points down reaches only p = 2⁻⁴ = 0.0625 ≥ α, and a bootstrap of four units cannot
bound a drop either."""

RULE_OF_THREE = 3.0
"""When no case got worse, a drop affecting a share q of cases goes unseen with probability (1 − q)ⁿ ≈ e^{−qn},
below 5% only once qn ≥ 3: n ≥ 3/δ_ni cases are needed before "no case got worse" shows non-inferiority."""

MAX_ADVISED_REPETITIONS = 50
"""The most repetitions per case the inconclusive advice names; beyond that it says only more cases help."""

FLOAT_SLACK = 1e-12
"""Comparisons of Δ̂ with margins tolerate float rounding (e.g. 0.9 − 0.88 vs 0.02)."""


@dataclass(frozen=True)
class JudgedTest:
    """What the tests that share α decided for one metric at this look."""

    p_value: float
    """The p-value of record: the test's at the first look; at the second, the combination of the first look's and
    the top-up's (or the first look's alone when the top-up did not test it again)."""
    p_adjusted: float | None = None
    """Adjusted across the tests that share the look's level (None until the family is formed, or when the test is
    not one of its members)."""
    family_size: int = 0
    p_first: float | None = None
    p_top_up: float | None = None
    retested: bool = True
    """False at a second look that could not test the metric again (no top-up repetitions on both sides)."""


def judge_metric(
    ctx: GateContext,
    name: str,
    paired: PairedMetric,
    test: OneSidedTest | None,
    judged: JudgedTest | None,
    *,
    gated: bool,
    gated_names: Sequence[str],
) -> tuple[MetricComparison, list[Finding]]:
    """One metric's comparison and findings. `test` is None when no case has a score on both sides; `judged` holds
    the p-values of record and their adjustment (None when the metric does not share α)."""
    policy = ctx.policy
    delta_block, delta_ni = policy.margins(name)
    higher = paired.higher_is_better
    n = len(paired.keys)
    if gated:
        role = "gated"
    elif CASE_PASS_METRIC in gated_names:
        role = "reported only: thresholds decide each case's pass/fail, and the gate compares pass rates"
    else:
        role = f"reported only (gated: {', '.join(gated_names)})"
    if test is None:
        message = f"{name}: no case has a score on both sides, so it could not be compared."
        comparison = MetricComparison(
            metric=name,
            gated=gated,
            higher_is_better=higher,
            baseline_mean=None,
            current_mean=None,
            delta=None,
            n_cases=0,
            k_baseline=0,
            k_current=0,
            delta_block=delta_block,
            delta_ni=delta_ni,
            verdict="inconclusive",
            frame=policy.inference,
            level=ctx.level,
            explanation=message,
        )
        return comparison, [finding("inconclusive", "warning", message, metric=name)] if gated else []
    diffs = paired.oriented()
    delta_oriented = statistics.fmean(diffs)
    clusters = paired.clusters(diffs)
    base_mean, cur_mean = statistics.fmean(paired.b), statistics.fmean(paired.c)
    delta = cur_mean - base_mean
    bound = _suite_bound(ctx, name, paired) if policy.inference == "suite" else None
    frame: InferenceFrame = "suite" if bound is not None else "population"
    if bound is not None:
        # L = −(upper bound on the drop); U mirrors it around Δ̂ (docs/gate.md §6a).
        low_o = -bound.upper
        high_o = delta_oriented + (bound.upper - bound.drop)
    else:
        low_o, high_o = _bootstrap_bounds(ctx, name, diffs, clusters)
    ci_low, ci_high = (low_o, high_o) if higher else (-high_o, -low_o)
    p = judged.p_value if judged is not None else test.p_value
    retested = judged is None or judged.retested
    # A metric a second look could not test again keeps its first look's p, unadjusted at this look.
    p_adjusted = judged.p_adjusted if judged is not None and retested else None
    p_used = p_adjusted if p_adjusted is not None else p
    level = ctx.level
    significant = retested and p_used < level
    big_enough = delta_oriented <= -delta_block + FLOAT_SLACK
    non_inferior = low_o >= -delta_ni - FLOAT_SLACK
    short = (
        None
        if bound is not None
        else _evidence_short(n, clusters.count if clusters is not None else None, diffs, delta_ni)
    )
    verdict: MetricVerdict
    if significant and big_enough:
        verdict = "regressed"
    elif non_inferior and short is None:
        verdict = "pass"
    else:
        verdict = "inconclusive"
    sd, se = _spread(paired, diffs, bound)
    usable_sd = sd is not None and sd > 0
    mde = (
        stats.minimum_detectable_effect(sd, n, alpha=ctx.look.alpha, power=policy.power)
        if sd is not None and usable_sd
        else None
    )
    n_needed = (
        stats.cases_needed(sd, delta_block, alpha=ctx.look.alpha, power=policy.power)
        if sd is not None and usable_sd and bound is None
        else None
    )
    repetitions_needed = (
        _repetitions_needed(bound, paired, delta_ni) if bound is not None and verdict == "inconclusive" else None
    )
    steps = [
        _head(name, role, higher, n, clusters, paired, base_mean, cur_mean, delta),
        _test_step(test, judged),
        _significance_step(ctx, p_used, significant, judged, level),
        _bound_step(ctx, bound, ci_low, ci_high, clusters),
        _rule_step(ctx, verdict, delta_block, delta_ni, short),
    ]
    advice = _advice_step(se, mde, n_needed, repetitions_needed, clusters, delta_block, delta_ni, policy.power)
    if advice:
        steps.append(advice)
    comparison = MetricComparison(
        metric=name,
        gated=gated,
        higher_is_better=higher,
        baseline_mean=base_mean,
        current_mean=cur_mean,
        delta=delta,
        ci_low=ci_low,
        ci_high=ci_high,
        p_value=p,
        p_adjusted=p_adjusted,
        test=test.test,
        n_cases=n,
        n_clusters=clusters.count if clusters is not None else None,
        se=se,
        k_baseline=paired.k_baseline,
        k_current=paired.k_current,
        delta_block=delta_block,
        delta_ni=delta_ni,
        verdict=verdict,
        mde=mde,
        n_needed=n_needed,
        repetitions_needed=repetitions_needed,
        frame=frame,
        bound=bound,
        level=level,
        p_first=judged.p_first if judged is not None else None,
        p_top_up=judged.p_top_up if judged is not None else None,
        explanation="; ".join(steps) + ".",
    )
    if verdict == "inconclusive":
        comparison = comparison.model_copy(update={"advice": settle_advice(comparison)})
    findings = _metric_findings(ctx, comparison, p_used, gated, short)
    if gated and clusters is not None and 2.0 ** (-clusters.count) >= level:
        findings.append(
            finding(
                "inconclusive",
                "warning",
                f"{name}: only G={clusters.count} clusters, and one sign per cluster can reach at best "
                f"p = 2^-{clusters.count} = {2.0 ** (-clusters.count):.4g} ≥ α = {level:g}: this analysis "
                + (
                    "can neither block nor show non-inferiority"
                    if bound is None
                    else "can block no drop (the suite bound, which does not count clusters, may still pass it)"
                )
                + ". Label cases with more, smaller clusters, or add cases.",
                metric=name,
            )
        )
    return comparison, findings


def _suite_bound(ctx: GateContext, name: str, paired: PairedMetric) -> SuiteBound | None:
    """The suite bound of docs/gate.md §6a for a score-like metric (higher is better, every score in [0, 1]); None
    for other metrics, which fall back to the population bootstrap."""
    if not paired.higher_is_better or paired.b_scores is None or paired.c_scores is None:
        return None
    values = [v for side in (paired.b_scores, paired.c_scores) for case in side for v in case]
    if any(v < 0.0 or v > 1.0 for v in values):
        return None
    flips = name == CASE_PASS_METRIC
    cases = [
        CaseScores(before, after, ctx.flip_rates.get(key) if flips else None)
        for key, before, after in zip(paired.keys, paired.b_scores, paired.c_scores, strict=True)
    ]
    return suite_bound(cases, ctx.pass_level or ctx.policy.alpha_pass)


def _bootstrap_bounds(
    ctx: GateContext, name: str, diffs: Sequence[float], clusters: stats.Clusters | None
) -> tuple[float, float]:
    """The population frame's one-sided (1 − α_pass) bounds: a paired percentile bootstrap over cases (or clusters)."""
    policy = ctx.policy
    seed = sub_seed(ctx.seed, f"bootstrap:{name}")
    if clusters is not None:
        return stats.bootstrap_cluster_mean_bounds(
            clusters.sums,
            clusters.sizes,
            alpha=ctx.pass_level or policy.alpha_pass,
            seed=seed,
            resamples=policy.resamples,
        )
    return stats.bootstrap_mean_bounds(
        diffs, alpha=ctx.pass_level or policy.alpha_pass, seed=seed, resamples=policy.resamples
    )


def _spread(
    paired: PairedMetric, diffs: Sequence[float], bound: SuiteBound | None
) -> tuple[float | None, float | None]:
    """(the per-case SD the planning formulas take, the standard error of Δ̂) in the verdict's frame."""
    n = len(diffs)
    if bound is not None:
        # Suite frame: only repetition noise, SE = √(Σ s²_i(1/k_B + 1/k_C))/n; the SD that reproduces it is SE·√n.
        suite_se = math.sqrt(bound.variance_sum) / n
        return suite_se * math.sqrt(n), suite_se
    sd = stats.paired_sd(diffs)
    se = sd / math.sqrt(n) if sd is not None else None
    if paired.groups is not None:
        # The planning formulas take a per-case SD; SE_cl·√n is the one that reproduces SE_cl, so the MDE is
        # (z_{1−α} + z_power)·SE_cl and the advice assumes more cases come in clusters like these.
        se = stats.clustered_se(diffs, paired.groups)
        sd = se * math.sqrt(n) if se is not None else None
    return sd, se


def _repetitions_needed(bound: SuiteBound, paired: PairedMetric, delta_ni: float) -> int | None:
    """The fewest repetitions per case on each side with which this run's data (its means kept, its noise shrunk
    as more repetitions shrink it) would show non-inferiority; None when no number up to 50 would (the drop itself
    is larger than δ_ni, or too close to it)."""
    k = max(1, min(paired.k_baseline, paired.k_current))
    for target in range(k + 1, MAX_ADVISED_REPETITIONS + 1):
        factor = target / k
        if projected_bound(bound, baseline_factor=factor, current_factor=factor) <= delta_ni + FLOAT_SLACK:
            return target
    return None


def _head(
    name: str,
    role: str,
    higher: bool,
    n: int,
    clusters: stats.Clusters | None,
    paired: PairedMetric,
    base_mean: float,
    cur_mean: float,
    delta: float,
) -> str:
    worse = "" if higher else " (lower is better: rules use −Δ)"
    in_clusters = f" in G={clusters.count} clusters" if clusters is not None else ""
    return (
        f"{name} ({role}){worse}: n={n} paired cases{in_clusters}, k={paired.k_baseline}/{paired.k_current} "
        f"(baseline/current); mean {fmt_num(base_mean)} → {fmt_num(cur_mean)}, Δ̂ = {fmt_signed(delta)}"
    )


def _test_step(test: OneSidedTest, judged: JudgedTest | None) -> str:
    if judged is None or judged.p_first is None:
        return test.how
    if not judged.retested:
        return (
            f"second look: not tested again (the top-up did not run on both sides); the first look's p = "
            f"{fmt_p(judged.p_first)} stands"
        )
    return (
        f"second look: the same test on the top-up's own repetitions gave p₂ = {fmt_p(judged.p_top_up)} "
        f"(on all repetitions: {test.how}); inverse-normal combination with the first look's p₁ = "
        f"{fmt_p(judged.p_first)}: p = {fmt_p(judged.p_value)}"
    )


def _significance_step(
    ctx: GateContext, p_used: float, significant: bool, judged: JudgedTest | None, level: float
) -> str:
    look = ctx.look
    where = (
        f"look {look.index} of {look.planned}, level {level:.4g} of α = {look.alpha:g}"
        if look.planned > 1
        else f"α = {level:g}"
    )
    if judged is not None and judged.retested and judged.p_adjusted is not None and ctx.policy.correction == "holm":
        p_text = f"weighted Holm over {judged.family_size} gate test(s): p_adj = {fmt_p(p_used)}"
    else:
        p_text = f"p = {fmt_p(p_used)}"
    return f"{p_text} {'<' if significant else '≥'} {where}"


def _bound_step(
    ctx: GateContext, bound: SuiteBound | None, ci_low: float, ci_high: float, clusters: stats.Clusters | None
) -> str:
    level = f"{100 * (1 - (ctx.pass_level or ctx.policy.alpha_pass)):.4g}"
    if bound is not None:
        return f"{describe(bound)}: L = {fmt_signed(ci_low)}, U = {fmt_signed(ci_high)} (one-sided {level}% bounds)"
    resampled = "whole clusters, " if clusters is not None else ""
    return (
        f"paired bootstrap (S={ctx.policy.resamples}, {resampled}percentile; population frame): "
        f"L = {fmt_signed(ci_low)}, U = {fmt_signed(ci_high)} (one-sided {level}% bounds)"
    )


def _rule_step(ctx: GateContext, verdict: MetricVerdict, delta_block: float, delta_ni: float, short: str | None) -> str:
    if verdict == "regressed":
        return f"significant and Δ̂ ≤ −δ_block = {-delta_block:+.3f} → REGRESSED"
    if verdict == "pass":
        return f"L ≥ −δ_ni = {-delta_ni:+.3f} (non-inferior) → PASS"
    if short is not None:
        return f"{short} → INCONCLUSIVE"
    if ctx.pass_level <= 0:
        return (
            "not a significant drop of ≥ δ_block, and this look cannot pass: even every repetition passing would not "
            "bound the drop within δ_ni, so its share of α_pass went to the second look → INCONCLUSIVE"
        )
    return (
        f"not a significant drop of ≥ δ_block and L < −δ_ni = {-delta_ni:+.3f}, so non-inferiority is not shown "
        "→ INCONCLUSIVE"
    )


def _advice_step(
    se: float | None,
    mde: float | None,
    n_needed: int | None,
    repetitions_needed: int | None,
    clusters: stats.Clusters | None,
    delta_block: float,
    delta_ni: float,
    power: float,
) -> str:
    parts: list[str] = []
    if mde is not None and se is not None:
        what = "SE_cl = (1/n)·√(G/(G−1)·Σ_g(D_g − n_g·Δ̂)²)" if clusters is not None and n_needed is not None else "SE"
        parts.append(f"{what} = {se:.3f}; minimum detectable effect {mde:.3f}")
    if repetitions_needed is not None:
        parts.append(
            f"≈{repetitions_needed} repetitions per case on each side would show non-inferiority within {delta_ni:g}"
        )
    if n_needed is not None:
        alike = " (clustered alike)" if clusters is not None else ""
        parts.append(f"≈{n_needed} cases{alike} to detect a {delta_block:g} drop at {round(power * 100)}% power")
    return "; ".join(parts)


def settle_advice(m: MetricComparison) -> str:
    """What would settle an inconclusive metric, in the frame the gate used (docs/gate.md §6 and §6a): repetitions
    for a fixed suite, cases for population inference."""
    if m.frame == "suite":
        if m.repetitions_needed is not None:
            return (
                f"≈{m.repetitions_needed} repetitions per case on each side (`repeat`) would show whether it is "
                f"within δ_ni = {m.delta_ni:g}"
            )
        if m.delta is not None and abs(m.delta) >= m.delta_ni:
            return (
                f"the drop seen ({fmt_signed(m.delta)}) is itself beyond δ_ni = {m.delta_ni:g}: more repetitions "
                "would show it as a regression or show it was noise"
            )
        return f"no number of repetitions up to {MAX_ADVISED_REPETITIONS} would show it within δ_ni = {m.delta_ni:g}"
    if m.n_needed is not None and m.mde is not None:
        return (
            f"this run detects drops of {m.mde:.3f} or more; ≈{m.n_needed} cases (population frame) would detect "
            f"{m.delta_block:g}"
        )
    return "more cases would settle it (population frame)"


def _evidence_short(n: int, clusters: int | None, diffs: Sequence[float], delta_ni: float) -> str | None:
    """Why a non-inferior-looking interval is not yet evidence (step 5), or None when it is."""
    units = clusters if clusters is not None else n
    unit = "cluster" if clusters is not None else "case"
    if units < MIN_UNITS:
        return (
            f"only {plural(units, 'independent ' + unit)}: too few to show that nothing got worse "
            f"(at least {MIN_UNITS} are needed)"
        )
    needed = math.ceil(RULE_OF_THREE / delta_ni - 1e-9)
    if units < needed and not any(d < 0 for d in diffs):
        return (
            f"no case got worse, but with {plural(units, unit)} a drop affecting up to "
            f"{RULE_OF_THREE / units:.0%} of them would go unseen 95% of the time (rule of three), more than "
            f"δ_ni = {delta_ni:g}; ≈{needed} {unit}s would show non-inferiority"
        )
    return None


def _metric_findings(
    ctx: GateContext, m: MetricComparison, p_used: float, gated: bool, short: str | None
) -> list[Finding]:
    """The metric's finding: a regression, an inconclusive result or an improvement (none when it plainly passed)."""

    def one(kind: FindingKind, severity: Severity, message: str) -> list[Finding]:
        return [
            finding(
                kind,
                severity,
                message,
                metric=m.metric,
                baseline_value=m.baseline_mean,
                current_value=m.current_mean,
                effect=m.delta,
                ci=(m.ci_low, m.ci_high),
                p_value=p_used,
                test=m.test,
            )
        ]

    level = ctx.level
    head = (
        f"{m.metric} {fmt_num(m.baseline_mean)} → {fmt_num(m.current_mean)} (Δ̂ = {fmt_signed(m.delta)}, n={m.n_cases})"
    )
    if m.verdict == "regressed":
        why = (
            f"{head}: p = {fmt_p(p_used)} < {level:.4g} (this look's level) and the drop is at least "
            f"δ_block = {m.delta_block:g}, so it is unlikely to be noise"
        )
        if gated:
            return one("regression", "blocking", why + ".")
        return one("regression", "warning", why + " (reported only, not gated).")
    if m.verdict == "inconclusive":
        if short is not None and p_used >= level:
            why = f"{head}: {short}"
        else:
            why = (
                f"{head}: p = {fmt_p(p_used)} ≥ {level:.4g}, so the drop may be noise, but "
                f"L = {fmt_signed(m.ci_low)} does not show non-inferiority within δ_ni = {m.delta_ni:g}"
            )
        why += "; " + (m.advice or settle_advice(m))
        return one("inconclusive", "warning" if gated else "info", why + ".")
    if m.delta is not None and m.ci_low is not None and m.ci_high is not None:
        improved = m.ci_low > 0 if m.higher_is_better else m.ci_high < 0
        if improved:
            return one(
                "improvement",
                "info",
                f"{head}: the whole interval [{fmt_signed(m.ci_low)}, {fmt_signed(m.ci_high)}] is better than 0.",
            )
    return []
