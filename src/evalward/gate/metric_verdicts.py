"""Step 5 of `gate.decide`, the verdict per metric: REGRESSED, PASS (only with evidence) or INCONCLUSIVE.

From a metric's paired data and its test of record (`gate.metric_tests`): the percentile paired bootstrap for L
and U (docs/gate.md §5), the rules of docs/gate.md §6, the minimum detectable effect and the cases needed
(docs/gate.md §10), the explanation with its arithmetic, and the metric's findings.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from evalward.gate import stats
from evalward.gate.context import GateContext, sub_seed
from evalward.gate.findings import finding, fmt_num, fmt_p, fmt_signed, plural
from evalward.gate.metric_tests import OneSidedTest
from evalward.gate.pairing import PairedMetric
from evalward.gate.policy import CASE_PASS_METRIC
from evalward.model.verdict import Finding, FindingKind, MetricComparison, MetricVerdict, Severity

MIN_UNITS = 5
"""Independent cases (or clusters) a gated metric needs before it can pass: with four, even a sign-flip test
whose every difference points down reaches only p = 2⁻⁴ = 0.0625 ≥ α, and a bootstrap of four units cannot
bound a drop either."""

RULE_OF_THREE = 3.0
"""When no case got worse, a drop affecting a share q of cases goes unseen with probability (1 − q)ⁿ ≈ e^{−qn},
below 5% only once qn ≥ 3: n ≥ 3/δ_ni cases are needed before "no case got worse" shows non-inferiority."""

FLOAT_SLACK = 1e-12
"""Comparisons of Δ̂ with margins tolerate float rounding (e.g. 0.9 − 0.88 vs 0.02)."""


def judge_metric(
    ctx: GateContext,
    name: str,
    paired: PairedMetric,
    test: OneSidedTest | None,
    *,
    gated: bool,
    gated_names: Sequence[str],
    p_adjusted: float | None,
    family_size: int,
) -> tuple[MetricComparison, list[Finding]]:
    """One metric's comparison and findings. `test` is None when no case has a score on both sides; `p_adjusted`
    is its p-value adjusted over the `family_size` tests that share α (None when it is not one of them)."""
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
            explanation=message,
        )
        return comparison, [finding("inconclusive", "warning", message, metric=name)] if gated else []
    p, test_name, how = test.p_value, test.test, test.how
    diffs = paired.oriented()
    delta_oriented = statistics.fmean(diffs)
    clusters = paired.clusters(diffs)
    boot_seed = sub_seed(ctx.seed, f"bootstrap:{name}")
    if clusters is not None:
        low_o, high_o = stats.bootstrap_cluster_mean_bounds(
            clusters.sums, clusters.sizes, alpha=policy.alpha, seed=boot_seed, resamples=policy.resamples
        )
    else:
        low_o, high_o = stats.bootstrap_mean_bounds(
            diffs, alpha=policy.alpha, seed=boot_seed, resamples=policy.resamples
        )
    base_mean, cur_mean = statistics.fmean(paired.b), statistics.fmean(paired.c)
    delta = cur_mean - base_mean
    ci_low, ci_high = (low_o, high_o) if higher else (-high_o, -low_o)
    p_used = p_adjusted if p_adjusted is not None else p
    significant = p_used < policy.alpha
    big_enough = delta_oriented <= -delta_block + FLOAT_SLACK
    non_inferior = low_o >= -delta_ni - FLOAT_SLACK
    short = _evidence_short(n, clusters.count if clusters is not None else None, diffs, delta_ni)
    verdict: MetricVerdict
    if significant and big_enough:
        verdict = "regressed"
    elif non_inferior and short is None:
        verdict = "pass"
    else:
        verdict = "inconclusive"
    sd = stats.paired_sd(diffs)
    se = sd / math.sqrt(n) if sd is not None else None
    if paired.groups is not None:
        # The planning formulas take a per-case SD; SE_cl·√n is the one that reproduces SE_cl, so the MDE is
        # (z_{1−α} + z_power)·SE_cl and the advice assumes more cases come in clusters like these.
        se = stats.clustered_se(diffs, paired.groups)
        sd = se * math.sqrt(n) if se is not None else None
    usable_sd = sd is not None and sd > 0
    mde = (
        stats.minimum_detectable_effect(sd, n, alpha=policy.alpha, power=policy.power)
        if sd is not None and usable_sd
        else None
    )
    n_needed = (
        stats.cases_needed(sd, delta_block, alpha=policy.alpha, power=policy.power)
        if sd is not None and usable_sd
        else None
    )
    level = round(100 * (1 - policy.alpha))
    worse = "" if higher else " (lower is better: rules use −Δ)"
    if p_adjusted is not None and policy.correction == "holm":
        p_text = f"weighted Holm over {family_size} gate test(s): p_adj = {fmt_p(p_adjusted)}"
    else:
        p_text = f"p = {fmt_p(p_used)}"
    in_clusters = f" in G={clusters.count} clusters" if clusters is not None else ""
    resampled = "whole clusters, " if clusters is not None else ""
    steps = [
        f"{name} ({role}){worse}: n={n} paired cases{in_clusters}, k={paired.k_baseline}/{paired.k_current} "
        f"(baseline/current); mean {fmt_num(base_mean)} → {fmt_num(cur_mean)}, Δ̂ = {fmt_signed(delta)}",
        how,
        f"{p_text} {'<' if significant else '≥'} α = {policy.alpha:g}",
        f"paired bootstrap (S={policy.resamples}, {resampled}percentile): L = {fmt_signed(ci_low)}, "
        f"U = {fmt_signed(ci_high)} (one-sided {level}% bounds)",
    ]
    if verdict == "regressed":
        steps.append(f"significant and Δ̂ ≤ −δ_block = {-delta_block:+.3f} → REGRESSED")
    elif verdict == "pass":
        steps.append(f"L ≥ −δ_ni = {-delta_ni:+.3f} (non-inferior) → PASS")
    elif short is not None:
        steps.append(f"{short} → INCONCLUSIVE")
    else:
        steps.append(
            f"not a significant drop of ≥ δ_block and L < −δ_ni = {-delta_ni:+.3f}, so non-inferiority is "
            "not shown → INCONCLUSIVE"
        )
    if mde is not None and clusters is not None and se is not None:
        steps.append(
            f"SE_cl = (1/n)·√(G/(G−1)·Σ_g(D_g − n_g·Δ̂)²) = {se:.3f}; minimum detectable effect {mde:.3f}; "
            f"≈{n_needed} cases (clustered alike) to detect a {delta_block:g} drop at "
            f"{round(policy.power * 100)}% power"
        )
    elif mde is not None:
        steps.append(
            f"s_d = {sd:.3f}; minimum detectable effect {mde:.3f}; ≈{n_needed} cases to detect a "
            f"{delta_block:g} drop at {round(policy.power * 100)}% power"
        )
    elif sd is not None:
        steps.append("every paired difference is the same (s_d = 0): the detectable effect cannot be estimated")
    explanation = "; ".join(steps) + "."
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
        test=test_name,
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
        explanation=explanation,
    )
    findings = _metric_findings(ctx, comparison, p_used, gated, short)
    if gated and clusters is not None and 2.0 ** (-clusters.count) >= policy.alpha:
        findings.append(
            finding(
                "inconclusive",
                "warning",
                f"{name}: only G={clusters.count} clusters, and one sign per cluster can reach at best "
                f"p = 2^-{clusters.count} = {2.0 ** (-clusters.count):.4g} ≥ α = {policy.alpha:g}: this analysis "
                "can neither block nor show non-inferiority. Label cases with more, smaller clusters, or add cases.",
                metric=name,
            )
        )
    return comparison, findings


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

    alpha = ctx.policy.alpha
    head = (
        f"{m.metric} {fmt_num(m.baseline_mean)} → {fmt_num(m.current_mean)} (Δ̂ = {fmt_signed(m.delta)}, n={m.n_cases})"
    )
    if m.verdict == "regressed":
        why = (
            f"{head}: p = {fmt_p(p_used)} < α = {alpha:g} and the drop is at least δ_block = {m.delta_block:g}, "
            "so it is unlikely to be noise"
        )
        if gated:
            return one("regression", "blocking", why + ".")
        return one("regression", "warning", why + " (reported only, not gated).")
    if m.verdict == "inconclusive":
        if short is not None and p_used >= alpha:
            why = f"{head}: {short}"
        else:
            why = (
                f"{head}: p = {fmt_p(p_used)} ≥ α = {alpha:g}, so the drop may be noise, but "
                f"L = {fmt_signed(m.ci_low)} does not show non-inferiority within δ_ni = {m.delta_ni:g}"
            )
        if m.n_needed is not None and m.mde is not None:
            why += (
                f"; this run detects drops of {m.mde:.3f} or more, ≈{m.n_needed} cases would detect "
                f"{m.delta_block:g}. Rerun the discordant or flaky cases with more repetitions"
            )
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
