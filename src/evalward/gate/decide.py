"""`decide(current, baseline, policy) -> Verdict`: a real regression or noise?

Pure and deterministic: no I/O, no clock (the quarantine date defaults to the day the current run
started), resampling seeded from the two run ids, so the same inputs give byte-identical Verdict JSON.
The method and its defaults are docs/gate.md's. **The agent is the treatment; the eval set, the metrics and the
grader are the instrument**: the caller hands over a baseline measured with the current run's instrument
(re-scored from its recorded outputs, or run on demand on the base side), and this function compares.
The policy, evaluated in this order:

0. Completeness (fail-closed). A run whose status is not `complete`, or that has no case results at all,
   is a blocking `error`. Errors are never a silent zero and never a silent pass; how an errored
   repetition counts is the policy's `errors`:
   - `compare` (default): errored repetitions are left out of every score on both sides alike, each
     errored case is listed (info; the baseline's too), and the *error rate* is compared with the baseline's
     in step 5 — routine timeouts on both sides do not fail an unchanged agent, a jump in errors does;
   - `fail`: each case of the current run with an errored repetition is a blocking `error`;
   - `count_as_failure`: a warning, and an errored repetition scores the worst value (step 5);
   - `ignore`: info, errored repetitions left out.
   A case listed in the current run's eval sets with fewer results than the run's repetitions is a
   `missing_case` (blocking under `missing_cases="fail"`, else a warning).
1. Thresholds (ADK semantics: they decide each case's pass/fail), by `thresholds`:
   - `change` (default): with a baseline, passing is compared (step 5) and a case that misses its
     thresholds now and did so at the baseline too is `still_failing` (warning), never blocking on its own.
     With no base side at all (`NoBaseline.kind == "no_base"`, or `on_missing_baseline = "absolute"`), the
     thresholds alone judge, as below;
   - `block`: a case fails a metric when any repetition has status `failed` (`pass_rule="per_run"`) or its
     mean over repetitions misses the threshold (`mean_over_runs`); each such case × metric is a blocking
     `threshold` finding (ADK's absolute rule: one missed repetition of one flaky case blocks);
   - `warn`: the same findings as warnings; `off`: none. Not applied by `compare`.
2. Hard gates: a `must_pass` case that fails (or errors in) more than `must_pass_allowed_failures` of its
   repetitions is a blocking `must_pass` finding (default 0: pass^k). Not applied by `compare`.
3. No baseline (`baseline is None`): a `no_baseline` finding with the caller's reason. `no_base`: a warning,
   the thresholds judge (step 1). `unavailable`: by `on_missing_baseline` — `error` (default): outcome
   `error` unless something else blocks; `absolute`: as `no_base`; `neutral`: inconclusive; `fail`:
   blocking. Steps 4–6 are skipped.
4. Pairing: cases are paired by (eval_set_id, case_id) **and** identical content hash (the caller re-scores
   a baseline whose expectations or criteria differ, so a hash still differing means it could not be).
   Cases only in the current run (`added_case`, info), only in the baseline (`removed_case`, warning — named
   prominently when they were failing there) or with a different hash (`changed_case`, warning) are listed
   and excluded. Zero comparable cases is `inconclusive`, never "no regressions".
5. Paired comparison. Gated metrics: the policy's list; else, when the criteria have thresholds,
   `case_pass` (the case status as 0/1: did passing get worse?), the thresholded metrics being compared and
   reported only; else every score-like metric scored in both runs; else `case_pass`. Per case the means
   b_i, c_i over its scored repetitions and d_i = c_i − b_i (sign reversed for lower-is-better metrics).
   Tests of record (one-sided, H1: worse):
   - `case_pass`: the stratified permutation test of `gate.stratified` (pass/fail labels exchanged within
     each case, inverse-variance weights; exact McNemar at k = 1);
   - other binary metrics at k = 1: exact McNemar; otherwise the paired sign-flip test (exact for ≤
     `exact_enumeration_max_n` non-zero d_i, Monte Carlo otherwise);
   - clustered (some paired case carries a cluster label; unlabelled cases are clusters of one): D_g =
     Σ_{i∈g} d_i over G clusters, one sign per cluster, the bootstrap resamples whole clusters, and the
     standard error is SE_cl = (1/n)·√(G/(G−1)·Σ_g(D_g − n_g·Δ̂)²);
   - **newly broken** cases (`gate.stratified.newly_broken_test`, k ≥ 3 on both sides): cases that passed
     every repetition at the baseline and fail every one now, against the count chance gives; spends
     `newly_broken_share` of α; significant → a blocking `newly_broken` finding, since a handful of cases
     dying is the commonest real regression and invisible in a mean over 100 cases;
   - **error rate** (`errors="compare"`, when a compared case errored on either side): the same stratified
     test on errored vs not, spends `error_rate_share` of α; significant and a rise ≥ δ_block → blocking.
   The tests share α by weighted Holm (`correction="holm"`); a test that cannot reach its share even at its
   most extreme outcome is left out and its share goes back to the others (Tarone). Percentile paired
   bootstrap for L and U. Verdict per gated metric: REGRESSED if p_adj < α and Δ̂ ≤ −δ_block (blocking
   `regression`); else PASS only with evidence: L ≥ −δ_ni, at least `MIN_UNITS` independent cases (or
   clusters), and — when no case got worse, so the bootstrap cannot see a drop — enough cases that one
   affecting δ_ni of them would have shown (rule of three: n ≥ 3/δ_ni); else INCONCLUSIVE (warning with the
   minimum detectable effect and the cases needed). The error rate only blocks; it never makes the outcome
   inconclusive. Metrics other than the gated ones are reported with warnings/info only.
6. Cost and latency: the log-ratio rule on per-case mean cost (`usage.cost_usd`) and median latency
   (`latency_s`); regressed when exp(L) > 1 + τ. A warning unless the policy sets `gate: true`, then
   blocking. Cases with a zero or missing value on either side are excluded and counted.
7. Per-case diagnostics: each case labelled from its pass rates (regressed/improved when they moved by
   ≥ 0.5, flaky when mixed on a side or its base-branch flip rate ≥ `flaky_flip_rate`, stable_pass,
   stable_fail, new, removed, changed). A case with b_i − c_i ≥ 0.5 on a gated metric gets an info
   `regression` finding ("likely regressed", not gating), or an info `flaky` finding when it is known to
   flip. Quarantined cases (entry not expired on `today`) get a `quarantined` finding and are left out of
   steps 1, 2, 5 and 6 (their errors still count in step 0); expired entries give a warning.
   Per-case tests (docs/gate.md §8): every compared case with ≥ 5 repetitions on both sides gets a one-sided
   Fisher exact test of its baseline passes against its current passes (an errored repetition is not a
   pass); Benjamini–Hochberg q across those cases; q < 0.1 labels it "regressed (per-case test)" with an
   info `regression` finding. Diagnostic only: never blocking.

Outcome: `fail` if any finding is blocking (other than a missing baseline under `error`); else `error` when
the baseline is missing under `on_missing_baseline="error"`; else `inconclusive` if a gated metric is
inconclusive, there is no baseline (neutral policy) or nothing was comparable; else `pass`. With `strict`,
inconclusive fails. `Verdict.headline` says what happened in plain words (`gate.headline`); `reason` gives the
deciding statistics.

Where the steps live (each takes the frozen `GateContext` of `gate.gate_context` and returns its findings and
results; `_evaluate` below runs them in this order and assembles the Verdict): `gate.rule_checks` (steps 0–3 and
`still_failing`), `gate.pairing` (step 4 and the paired data), `gate.metric_tests`, `gate.guards` and
`gate.metric_verdicts` (step 5), `gate.resources` (step 6), `gate.diagnostics` (step 7), `gate.conclusion`
(the outcome).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import date

from evalward.gate.conclusion import baseline_info, conclude
from evalward.gate.diagnostics import diagnose_cases, per_case_tests
from evalward.gate.gate_context import GateContext, sub_seed
from evalward.gate.guards import (
    NEWLY_BROKEN_TEST,
    Confirmed,
    ErrorRates,
    NewlyBrokenCases,
    confirm_suspects,
    error_rate,
    judge_error_rate,
    newly_broken,
    report_confirmation,
    report_newly_broken,
)
from evalward.gate.headline import headline
from evalward.gate.metric_tests import OneSidedTest, has_thresholds, metric_names, one_sided_test, share_alpha
from evalward.gate.metric_verdicts import JudgedTest, judge_metric
from evalward.gate.pairing import PairedMetric, direction, pair_cases, pair_metric
from evalward.gate.policy import ERROR_RATE_METRIC, GatePolicy
from evalward.gate.resources import resource_findings
from evalward.gate.rule_checks import (
    completeness_findings,
    missing_baseline_findings,
    must_pass_findings,
    quarantine_findings,
    still_failing,
    threshold_findings,
    threshold_mode,
)
from evalward.gate.sequential import SecondLookInputs, combine_p, suspects_of
from evalward.model import RunResult
from evalward.model.cases import CaseKey
from evalward.model.verdict import (
    Confirmation,
    Finding,
    Look,
    MetricComparison,
    NewlyBroken,
    NoBaseline,
    Severity,
    Verdict,
    VerdictCounts,
)

_SEVERITY_ORDER: dict[Severity, int] = {"blocking": 0, "warning": 1, "info": 2}


def decide(
    current: RunResult,
    baseline: RunResult | None,
    policy: GatePolicy,
    *,
    flip_rates: Mapping[CaseKey, float] | None = None,
    today: date | None = None,
    no_baseline: NoBaseline | None = None,
    look: Look | None = None,
    second: SecondLookInputs | None = None,
) -> Verdict:
    """Judge `current` against `baseline` under `policy` (steps 0–7 of this module's docstring).

    `flip_rates` maps (eval_set_id, case_id) to the case's flip rate on the base branch (history).
    `today` dates the quarantine check; default: the day the current run started or finished (a run
    with neither timestamp treats every quarantine entry as active), never the clock.
    `no_baseline` says why `baseline` is None (default: unavailable, reason unknown).
    `look`: which look this is and the levels of both (`gate.sequential.plan_looks`); default one look at the
    whole α. At a second look `current` and `baseline` hold the first look's repetitions and the even top-up's, and
    `second` the first verdict, the top-up's own repetitions and the suspects' confirmations.
    """
    absence = None
    if baseline is None:
        absence = no_baseline or NoBaseline(kind="unavailable", reason="no baseline run was given")
    ctx = GateContext.read(
        current,
        baseline,
        policy,
        flip_rates or {},
        today,
        absolute_checks=True,
        absence=absence,
        look=look,
        second=second,
    )
    return _evaluate(ctx)


def compare(a: RunResult, b: RunResult, policy: GatePolicy) -> Verdict:
    """Paired comparison only (`evalward compare A B`): `a` is the reference, `b` the candidate.

    Same as `decide(b, a, policy)` without the absolute checks (steps 1 and 2); completeness (step 0)
    still applies because an errored candidate is not comparable evidence.
    """
    return _evaluate(GateContext.read(b, a, policy, {}, None, absolute_checks=False, absence=None))


def _evaluate(ctx: GateContext) -> Verdict:
    """The steps in the docstring's order; their findings are concatenated in that order, then sorted by
    severity (stable, so each severity keeps the steps' order)."""
    findings: list[Finding] = [*quarantine_findings(ctx), *completeness_findings(ctx)]
    mode = threshold_mode(ctx)
    if ctx.absolute_checks:
        findings += threshold_findings(ctx, mode)
        findings += must_pass_findings(ctx)
    compared: tuple[CaseKey, ...] = ()
    changed: frozenset[CaseKey] = frozenset()
    still: list[CaseKey] = []
    metrics = _MetricsStep(comparisons=[], findings=[], paired={}, newly_broken=None)
    if ctx.baseline is None:
        findings += missing_baseline_findings(ctx)
    else:
        pairing = pair_cases(ctx)
        compared, changed = pairing.compared, pairing.changed
        findings += pairing.findings
        if ctx.absolute_checks and mode == "change":
            still, still_findings = still_failing(ctx, compared)
            findings += still_findings
        metrics = _compare_metrics(ctx, compared)
        findings += metrics.findings
        findings += resource_findings(ctx, compared)
    per_case = per_case_tests(ctx, compared)
    diagnostics, case_findings = diagnose_cases(ctx, compared, changed, metrics.paired, per_case)
    findings += case_findings
    conclusion = conclude(ctx, metrics.comparisons, findings, compared)
    findings += conclusion.findings
    labels = [d.label for d in diagnostics]
    verdict = Verdict(
        outcome=conclusion.outcome,
        reason=conclusion.reason,
        current_run_id=ctx.current.run_id,
        findings=sorted(findings, key=lambda f: _SEVERITY_ORDER[f.severity]),
        metrics=metrics.comparisons,
        cases=diagnostics,
        baseline=baseline_info(ctx),
        counts=VerdictCounts(
            compared=len(compared),
            added=labels.count("new") if ctx.baseline is not None else 0,
            removed=sum(1 for f in findings if f.kind == "removed_case" and f.case_id is not None),
            changed=labels.count("changed"),
            errored=sum(any(r.status == "error" for r in results) for results in ctx.cur.values()),
            baseline_errored=sum(any(r.status == "error" for r in ctx.base[key]) for key in compared),
            still_failing=len(still),
            quarantined=len(ctx.quarantined),
        ),
        newly_broken=metrics.newly_broken,
        per_case_tests=per_case.summary,
        alpha=ctx.policy.alpha,
        look=ctx.look,
        confirmation=metrics.confirmation,
        seed=ctx.seed,
        policy_digest=ctx.policy.digest(),
    )
    return verdict.model_copy(update={"headline": headline(verdict)})


@dataclass(frozen=True)
class _MetricsStep:
    """What step 5 returns: the metric comparisons (the error rate last), its findings, the paired data the
    diagnostics read, and the newly-broken summary."""

    comparisons: list[MetricComparison]
    findings: list[Finding]
    paired: Mapping[str, PairedMetric]
    newly_broken: NewlyBroken | None
    confirmation: Confirmation | None = None


def _compare_metrics(ctx: GateContext, compared: Sequence[CaseKey]) -> _MetricsStep:
    """Step 5: each metric paired and tested, the tests sharing this look's level, then the verdict per metric, the
    newly-broken cases (at a second look: the suspects' confirmation) and the error rate, in that order."""
    policy = ctx.policy
    level = ctx.level
    gated, reported = metric_names(ctx)
    names = [*gated, *(name for name in reported if name not in gated)]
    paired: dict[str, PairedMetric] = {}
    tests: dict[str, OneSidedTest] = {}
    for name in names:
        paired[name] = pair_metric(ctx, compared, name, direction(ctx, name))
        if paired[name].keys:
            tests[name] = one_sided_test(ctx, name, paired[name])
    errors = error_rate(ctx, compared) if policy.errors == "compare" else None
    records = _test_records(ctx, compared, gated, tests, errors)
    # Tarone's rule: a test whose most extreme outcome cannot reach its share of the level is left out of the family.
    nb: NewlyBrokenCases | None = None
    confirmation: Confirmed | None = None
    if ctx.second is not None and ctx.second.confirm is not None:
        confirmation = confirm_suspects(ctx, ctx.second.confirm, suspects_of(ctx.second.first))
    elif ctx.look.index == 1 and policy.newly_broken_share > 0 and has_thresholds(ctx):
        nb = newly_broken(ctx, compared)
    nb_result = confirmation.result if confirmation is not None else nb.result if nb is not None else None
    nb_in = nb_result is not None and nb_result.eligible > 0 and nb_result.min_p < level * policy.newly_broken_share
    err_record = records.get(ERROR_RATE_METRIC)
    err_in = (
        errors is not None
        and err_record is not None
        and err_record.retested
        and (err_record.p_first is not None or errors.result.min_p < level * policy.error_rate_share)
    )
    extra: list[tuple[str, float, float]] = []
    if nb_in and nb_result is not None:
        extra.append((NEWLY_BROKEN_TEST, nb_result.p_value, policy.newly_broken_share))
    if err_in and err_record is not None:
        extra.append((ERROR_RATE_METRIC, err_record.p_value, policy.error_rate_share))
    family = [(name, records[name].p_value if records[name].retested else 1.0) for name in gated if name in records]
    shares = share_alpha(policy, family, extra)
    comparisons: list[MetricComparison] = []
    findings: list[Finding] = []
    for name in names:
        record = records.get(name) if name in gated else None
        judged = (
            replace(record, p_adjusted=shares.p_adjusted.get(name), family_size=shares.size)
            if record is not None
            else None
        )
        comparison, metric_findings = judge_metric(
            ctx, name, paired[name], tests.get(name), judged, gated=name in gated, gated_names=gated
        )
        comparisons.append(comparison)
        findings += metric_findings
    summary = None
    confirmation_record = None
    if confirmation is not None:
        summary, confirmation_record, nb_findings = report_confirmation(
            ctx, confirmation, shares.p_adjusted.get(NEWLY_BROKEN_TEST), nb_in
        )
        findings += nb_findings
    elif nb is not None:
        summary, nb_findings = report_newly_broken(ctx, nb, shares.p_adjusted.get(NEWLY_BROKEN_TEST), nb_in)
        findings += nb_findings
    if errors is not None and err_record is not None:
        comparison, error_findings = judge_error_rate(
            ctx, errors, err_record.p_value, shares.p_adjusted.get(ERROR_RATE_METRIC) if err_in else None
        )
        comparisons.append(comparison)
        findings += error_findings
    return _MetricsStep(
        comparisons=comparisons,
        findings=findings,
        paired=paired,
        newly_broken=summary,
        confirmation=confirmation_record,
    )


def _test_records(
    ctx: GateContext,
    compared: Sequence[CaseKey],
    gated: Sequence[str],
    tests: Mapping[str, OneSidedTest],
    errors: ErrorRates | None,
) -> dict[str, JudgedTest]:
    """Each gated metric's (and the error rate's) p-value of record: the test's own at a first look; at a second,
    the inverse-normal combination of the first look's p₁ with the same test on the top-up's own repetitions p₂
    (`gate.sequential`), or p₁ alone, not tested again, when the top-up did not run on both sides."""
    records: dict[str, JudgedTest] = {name: JudgedTest(tests[name].p_value) for name in gated if name in tests}
    if errors is not None:
        records[ERROR_RATE_METRIC] = JudgedTest(errors.result.p_value)
    second = ctx.second
    if second is None:
        return records
    first_p = second.first_p()
    # The top-up's repetitions keep the run ids, so their context would derive the first look's seed: the Monte Carlo
    # draws of p₂ would then repeat p₁'s, the two p-values would share their simulation error, and the combination,
    # which needs them independent, would reject too often (measured: 0.7–0.9% false fails at α = 0.005). A seed of
    # its own keeps p₂ independent of p₁.
    fresh_ctx = (
        replace(
            GateContext.read(*second.fresh, ctx.policy, ctx.flip_rates, ctx.today, absolute_checks=False, absence=None),
            seed=sub_seed(ctx.seed, "top_up"),
        )
        if second.fresh is not None
        else None
    )
    fresh_keys = (
        [key for key in compared if key in fresh_ctx.cur and key in fresh_ctx.base] if fresh_ctx is not None else []
    )
    for name in list(records):
        p1 = first_p.get(name)
        p2: float | None = None
        if fresh_ctx is not None and fresh_keys:
            if name == ERROR_RATE_METRIC:
                fresh_errors = error_rate(fresh_ctx, fresh_keys)
                p2 = fresh_errors.result.p_value if fresh_errors is not None else 1.0
            else:
                fresh_paired = pair_metric(fresh_ctx, fresh_keys, name, direction(ctx, name))
                p2 = one_sided_test(fresh_ctx, name, fresh_paired).p_value if fresh_paired.keys else None
        if p2 is None:
            records[name] = JudgedTest(p1 if p1 is not None else records[name].p_value, p_first=p1, retested=False)
        elif p1 is None:
            records[name] = JudgedTest(p2, p_top_up=p2)
        else:
            records[name] = JudgedTest(combine_p(p1, p2, second.weight_first), p_first=p1, p_top_up=p2)
    return records
