"""The two tests of step 5 that can only block: newly broken cases and the error rate (docs/gate.md §4).

Each spends its own share of α in the weighted Holm family (`metric_tests.share_alpha`, docs/gate.md §6) and
never makes the outcome inconclusive. **Newly broken** (`gate.stratified.newly_broken_test`, k ≥ 3 on both
sides): cases that passed every repetition at the baseline and fail every one now, against the count chance
gives. **Error rate** (`errors="compare"`): the stratified test on errored vs not; blocks when significant and
the rise is ≥ δ_block.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from evalward.gate import stats
from evalward.gate.findings import case_name, finding, fmt_p, fmt_signed, plural
from evalward.gate.gate_context import GateContext, sub_seed
from evalward.gate.metric_tests import stratified_how
from evalward.gate.metric_verdicts import FLOAT_SLACK
from evalward.gate.policy import ERROR_RATE_METRIC
from evalward.gate.stratified import NewlyBrokenResult, PassRateResult, Stratum, newly_broken_test, pass_rate_test
from evalward.model import RunResult
from evalward.model.cases import CaseKey
from evalward.model.verdict import Confirmation, Finding, MetricComparison, NewlyBroken

NEWLY_BROKEN_TEST = "newly_broken"
"""The newly-broken test's name in the weighted Holm family."""


@dataclass(frozen=True)
class NewlyBrokenCases:
    """The newly-broken test over the compared cases."""

    result: NewlyBrokenResult
    broken: list[CaseKey]
    clustered: bool
    """Counted once per cluster (some compared case carries a cluster label)."""


def newly_broken(ctx: GateContext, compared: Sequence[CaseKey]) -> NewlyBrokenCases | None:
    """The newly-broken test over the compared cases; every repetition counts and an error is not a pass."""
    strata: list[tuple[CaseKey, Stratum]] = []
    for key in compared:
        before, after = ctx.base[key], ctx.cur[key]
        strata.append(
            (
                key,
                Stratum(
                    len(before),
                    len(after),
                    sum(r.status == "passed" for r in before),
                    sum(r.status == "passed" for r in after),
                ),
            )
        )
    if not strata:
        return None
    groups = ctx.cluster_groups([key for key, _ in strata])
    result = newly_broken_test([s for _, s in strata], groups=groups)
    if result.eligible == 0:
        return None
    broken = [strata[index][0] for index in result.broken_at]
    return NewlyBrokenCases(result, broken, groups is not None)


def report_newly_broken(
    ctx: GateContext, cases: NewlyBrokenCases, p_adjusted: float | None, tested: bool
) -> tuple[NewlyBroken, list[Finding]]:
    """The verdict's summary of the test and its finding: blocking when significant, else a warning.
    `tested`: the test was in the α family (it could reach its share)."""
    result, broken, clustered = cases.result, cases.broken, cases.clustered
    alpha = ctx.level
    p_used = p_adjusted if p_adjusted is not None else result.p_value
    summary = _summary(ctx, result, broken, p_adjusted, tested, "cluster" if clustered else "case")
    significant = summary.significant
    if not broken:
        return summary, []
    names = ", ".join(case_name(key) for key in broken[:10])
    more = f" and {len(broken) - 10} more" if len(broken) > 10 else ""
    unit = "cluster" if clustered else "case"
    chance = (
        f"by chance alone about {result.expected:.2f} {unit}s would (over the {plural(result.eligible, unit)} "
        f"whose passes could all have moved{'; correlated cases count once per cluster' if clustered else ''}); "
        f"p = {fmt_p(result.p_value)} (exact)"
    )
    if significant:
        why = f"p_adj = {fmt_p(p_used)} < {alpha:.4g} (this look's level): newly broken, not noise"
    elif tested:
        why = f"p_adj = {fmt_p(p_used)} ≥ {alpha:.4g} (this look's level): could be noise, shown, not blocking"
    else:
        why = "too few cases could flip this way for the test to reach its share of α: shown, not blocking"
    runs = {(len(ctx.base[key]), len(ctx.cur[key])) for key in broken}
    if len(runs) == 1:
        ((k_base, k_now),) = runs
        moved = f"passed {k_base} of {k_base} at the baseline, now 0 of {k_now}"
    else:
        moved = "passed every repetition at the baseline, now none"
    return summary, [
        finding(
            "newly_broken",
            "blocking" if significant else "warning",
            f"{plural(len(broken), 'case')} {moved}: {names}{more}; {chance}; {why}.",
            current_value=float(len(broken)),
            baseline_value=result.expected,
            p_value=p_used,
            test="newly_broken_exact",
        )
    ]


def _summary(
    ctx: GateContext,
    result: NewlyBrokenResult,
    broken: Sequence[CaseKey],
    p_adjusted: float | None,
    tested: bool,
    unit: Literal["case", "cluster"],
) -> NewlyBroken:
    """The verdict's newly-broken record: significant when the test shared this look's level and its p_adj is below
    it."""
    p_used = p_adjusted if p_adjusted is not None else result.p_value
    return NewlyBroken(
        cases=[case_name(key) for key in broken],
        eligible=result.eligible,
        expected=result.expected,
        p_value=result.p_value,
        p_adjusted=p_adjusted,
        alpha_share=ctx.policy.newly_broken_share if tested else 0.0,
        significant=tested and p_used < ctx.level,
        unit=unit,
    )


@dataclass(frozen=True)
class ErrorRates:
    """The error-rate test over the compared cases, with each case's counts of repetitions that did not error."""

    result: PassRateResult
    strata: list[tuple[CaseKey, Stratum]]


def error_rate(ctx: GateContext, compared: Sequence[CaseKey]) -> ErrorRates | None:
    """The stratified test on "not errored" over the compared cases, when any of them errored."""
    strata: list[tuple[CaseKey, Stratum]] = []
    any_error = False
    for key in compared:
        before, after = ctx.base[key], ctx.cur[key]
        ok_before = sum(r.status != "error" for r in before)
        ok_after = sum(r.status != "error" for r in after)
        any_error = any_error or ok_before < len(before) or ok_after < len(after)
        strata.append((key, Stratum(len(before), len(after), ok_before, ok_after)))
    if not any_error:
        return None
    result = pass_rate_test(
        [s for _, s in strata], seed=sub_seed(ctx.seed, "error_rate"), resamples=ctx.policy.resamples
    )
    return ErrorRates(result, strata)


def judge_error_rate(
    ctx: GateContext, rates: ErrorRates, p_value: float, p_adjusted: float | None
) -> tuple[MetricComparison, list[Finding]]:
    """The error rate as a guard (step 5): blocks when it rose beyond noise by ≥ δ_block, never inconclusive.
    `p_value`: the test's p of record at this look (at a second look, the combination); `p_adjusted`: its
    adjustment in the family, None when it did not share the level."""
    result, strata = rates.result, rates.strata
    policy = ctx.policy
    delta_block, delta_ni = policy.margins(ERROR_RATE_METRIC)
    b = [1 - s.baseline_passes / s.baseline_runs for _, s in strata]
    c = [1 - s.current_passes / s.current_runs for _, s in strata]
    n = len(strata)
    base_mean, cur_mean = statistics.fmean(b), statistics.fmean(c)
    delta = cur_mean - base_mean
    oriented = [bi - ci for bi, ci in zip(b, c, strict=True)]
    low_o, high_o = stats.bootstrap_mean_bounds(
        oriented, alpha=policy.alpha_pass, seed=sub_seed(ctx.seed, "bootstrap:error_rate"), resamples=policy.resamples
    )
    p_used = p_adjusted if p_adjusted is not None else p_value
    significant = p_adjusted is not None and p_used < ctx.level
    regressed = significant and delta >= delta_block - FLOAT_SLACK
    how = stratified_how(result, n, what="repetitions that did not error")
    explanation = (
        f"{ERROR_RATE_METRIC} (a guard: blocks on a rise, needs no evidence to pass; errors=compare): n={n} "
        f"compared cases; share of repetitions that errored {base_mean:.1%} → {cur_mean:.1%}, Δ̂ = {fmt_signed(delta)}; "
        f"{how}; p used = {fmt_p(p_used)} {'<' if significant else '≥'} {ctx.level:.4g} (this look's level); "
        + (
            f"significant and Δ̂ ≥ δ_block = {delta_block:g} → REGRESSED."
            if regressed
            else "not a significant rise of ≥ δ_block → not blocking."
        )
    )
    comparison = MetricComparison(
        metric=ERROR_RATE_METRIC,
        gated=True,
        guard=True,
        higher_is_better=False,
        baseline_mean=base_mean,
        current_mean=cur_mean,
        delta=delta,
        ci_low=-high_o,
        ci_high=-low_o,
        p_value=p_value,
        p_adjusted=p_adjusted,
        test=result.test,
        level=ctx.level,
        n_cases=n,
        k_baseline=max(s.baseline_runs for _, s in strata),
        k_current=max(s.current_runs for _, s in strata),
        delta_block=delta_block,
        delta_ni=delta_ni,
        verdict="regressed" if regressed else "pass",
        explanation=explanation,
    )
    if regressed:
        return comparison, [
            finding(
                "error",
                "blocking",
                f"Errors rose: {base_mean:.1%} → {cur_mean:.1%} of repetitions errored over "
                f"{plural(n, 'compared case')} (Δ̂ = {fmt_signed(delta)}; p = {fmt_p(p_used)} < {ctx.level:.4g}): "
                "more than the baseline's errors explain (errors=compare).",
                metric=ERROR_RATE_METRIC,
                baseline_value=base_mean,
                current_value=cur_mean,
                effect=delta,
                ci=(comparison.ci_low, comparison.ci_high),
                p_value=p_used,
                test=result.test,
            )
        ]
    if delta > 0:
        return comparison, [
            finding(
                "error",
                "info",
                f"Errors {base_mean:.1%} → {cur_mean:.1%} of repetitions (Δ̂ = {fmt_signed(delta)}; "
                f"p = {fmt_p(p_used)}): within what the baseline's own errors explain, so not blocking "
                "(errors=compare).",
                metric=ERROR_RATE_METRIC,
                baseline_value=base_mean,
                current_value=cur_mean,
                effect=delta,
                p_value=p_used,
                test=result.test,
            )
        ]
    return comparison, []


@dataclass(frozen=True)
class Confirmed:
    """The suspects' fresh repetitions, tested alone (docs/gate.md §6): the newly-broken count test on them."""

    result: NewlyBrokenResult
    suspects: list[CaseKey]
    strata: list[Stratum]
    still_broken: list[CaseKey]
    recovered: list[CaseKey]
    repetitions: int


def confirm_suspects(ctx: GateContext, runs: tuple[RunResult, RunResult], suspects: Sequence[CaseKey]) -> Confirmed:
    """The newly-broken count test on the suspects' fresh repetitions only: a suspect counts as eligible when its
    fresh passes could all have fallen on the baseline side, and as broken again when they did. Testing on fresh
    repetitions keeps the test valid although the suspects were chosen by the first look's outcome."""
    current, baseline = runs
    fresh = GateContext.read(current, baseline, ctx.policy, {}, ctx.today, absolute_checks=False, absence=None)
    keys: list[CaseKey] = []
    strata: list[Stratum] = []
    for key in suspects:
        before, after = fresh.base.get(key, ()), fresh.cur.get(key, ())
        if not before or not after:
            continue
        keys.append(key)
        strata.append(
            Stratum(
                len(before),
                len(after),
                sum(r.status == "passed" for r in before),
                sum(r.status == "passed" for r in after),
            )
        )
    result = newly_broken_test(strata)
    still = [keys[i] for i in result.broken_at]
    recovered = [key for key, stratum in zip(keys, strata, strict=True) if stratum.current_passes > 0]
    repetitions = max((s.current_runs for s in strata), default=0)
    return Confirmed(result, keys, strata, still, recovered, repetitions)


def report_confirmation(
    ctx: GateContext, confirmed: Confirmed, p_adjusted: float | None, tested: bool
) -> tuple[NewlyBroken, Confirmation, list[Finding]]:
    """The second look's newly-broken summary, the confirmation record and its findings: blocking when the cases
    that broke again are significant at this look's level; the suspects that recovered are named, not blamed."""
    result = confirmed.result
    level = ctx.level
    p_used = p_adjusted if p_adjusted is not None else result.p_value
    summary = _summary(ctx, result, confirmed.still_broken, p_adjusted, tested, "case")
    significant = summary.significant
    still = summary.cases
    recovered = [case_name(key) for key in confirmed.recovered]
    r = confirmed.repetitions
    record = Confirmation(
        cases=[case_name(key) for key in confirmed.suspects],
        repetitions=r,
        still_broken=still,
        recovered=recovered,
        p_value=result.p_value,
        p_adjusted=p_adjusted,
        significant=significant,
    )
    findings: list[Finding] = []
    if still:
        names = ", ".join(still[:10]) + (f" and {len(still) - 10} more" if len(still) > 10 else "")
        chance = (
            f"by chance alone about {result.expected:.3g} would (over the {plural(result.eligible, 'case')} whose fresh "
            f"passes could all have fallen on the baseline side); p = {fmt_p(result.p_value)} (exact, on the fresh "
            "repetitions alone)"
        )
        if significant:
            why = f"p_adj = {fmt_p(p_used)} < {level:.4g} (the second look's level): broken, not noise"
        elif tested:
            why = (
                f"p_adj = {fmt_p(p_used)} ≥ {level:.4g} (the second look's level): could be noise, shown, not blocking"
            )
        else:
            why = "too few suspects could show this for the test to reach its share: shown, not blocking"
        findings.append(
            finding(
                "newly_broken",
                "blocking" if significant else "warning",
                f"{plural(len(still), 'case')} that passed every baseline repetition and failed every current one "
                f"{'was' if len(still) == 1 else 'were'} re-run {r} times on each side: "
                f"{'it' if len(still) == 1 else 'they'} passed {r} of {r} on the base side and 0 of {r} now "
                f"again: {names}; {chance}; {why}.",
                current_value=float(len(still)),
                baseline_value=result.expected,
                p_value=p_used,
                test="newly_broken_exact",
            )
        )
    if recovered:
        names = ", ".join(recovered[:10]) + (f" and {len(recovered) - 10} more" if len(recovered) > 10 else "")
        findings.append(
            finding(
                "flaky",
                "info",
                f"{plural(len(recovered), 'case')} that failed every current repetition at first passed again when "
                f"re-run {r} times: {names}. Flaky, not broken: not blamed.",
            )
        )
    return summary, record, findings
