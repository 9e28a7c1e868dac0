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
"""

from __future__ import annotations

import hashlib
import math
import statistics
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Literal

from evalward.gate import stats
from evalward.gate.headline import headline
from evalward.gate.policy import CASE_PASS_METRIC, ERROR_RATE_METRIC, GatePolicy
from evalward.gate.scores import ScoredResult, scored
from evalward.gate.stratified import (
    NewlyBrokenResult,
    PassRateResult,
    Stratum,
    newly_broken_test,
    pass_rate_test,
    weighted_holm,
)
from evalward.model import RunResult
from evalward.model.verdict import (
    BaselineInfo,
    CaseDiagnostic,
    CaseLabel,
    Finding,
    FindingKind,
    MetricComparison,
    MetricVerdict,
    NewlyBroken,
    NoBaseline,
    PerCaseTests,
    Severity,
    TestName,
    Verdict,
    VerdictCounts,
)

CaseKey = tuple[str, str]
"""(eval_set_id, case_id): how cases pair across runs."""

LIKELY_REGRESSED_DROP = 0.5
"""b_i − c_i at or above this marks a case "likely regressed" (docs/gate.md §8)."""

PER_CASE_MIN_RUNS = 5
"""Repetitions a case needs on both sides for its own Fisher test: with 3, even 3/3 → 0/3 gives p = 0.05."""

PER_CASE_Q = 0.1
"""Benjamini–Hochberg q below which a tested case is "regressed (per-case test)" (docs/gate.md §8)."""

MIN_UNITS = 5
"""Independent cases (or clusters) a gated metric needs before it can pass: with four, even a sign-flip test
whose every difference points down reaches only p = 2⁻⁴ = 0.0625 ≥ α, and a bootstrap of four units cannot
bound a drop either."""

RULE_OF_THREE = 3.0
"""When no case got worse, a drop affecting a share q of cases goes unseen with probability (1 − q)ⁿ ≈ e^{−qn},
below 5% only once qn ≥ 3: n ≥ 3/δ_ni cases are needed before "no case got worse" shows non-inferiority."""

_FLOAT_SLACK = 1e-12
"""Comparisons of Δ̂ with margins tolerate float rounding (e.g. 0.9 − 0.88 vs 0.02)."""

_SEVERITY_ORDER: dict[Severity, int] = {"blocking": 0, "warning": 1, "info": 2}

NEWLY_BROKEN_TEST = "newly_broken"
"""The newly-broken test's name in the weighted Holm family."""

ThresholdMode = Literal["block", "warn", "change", "off"]


def decide(
    current: RunResult,
    baseline: RunResult | None,
    policy: GatePolicy,
    *,
    flip_rates: Mapping[CaseKey, float] | None = None,
    today: date | None = None,
    no_baseline: NoBaseline | None = None,
) -> Verdict:
    """Judge `current` against `baseline` under `policy` (steps 0–7 of this module's docstring).

    `flip_rates` maps (eval_set_id, case_id) to the case's flip rate on the base branch (history).
    `today` dates the quarantine check; default: the day the current run started or finished (a run
    with neither timestamp treats every quarantine entry as active), never the clock.
    `no_baseline` says why `baseline` is None (default: unavailable, reason unknown).
    """
    absence = None
    if baseline is None:
        absence = no_baseline or NoBaseline(kind="unavailable", reason="no baseline run was given")
    return _Gate(current, baseline, policy, flip_rates or {}, today, absolute_checks=True, absence=absence).run()


def compare(a: RunResult, b: RunResult, policy: GatePolicy) -> Verdict:
    """Paired comparison only (`evalward compare A B`): `a` is the reference, `b` the candidate.

    Same as `decide(b, a, policy)` without the absolute checks (steps 1 and 2); completeness (step 0)
    still applies because an errored candidate is not comparable evidence.
    """
    return _Gate(b, a, policy, {}, None, absolute_checks=False, absence=None).run()


# ---------------------------------------------------------------------------------------------- helpers


def _group(results: Sequence[ScoredResult]) -> dict[CaseKey, list[ScoredResult]]:
    """Case results by (eval_set_id, case_id), repetitions in order, keys sorted."""
    grouped: dict[CaseKey, list[ScoredResult]] = {}
    for result in results:
        grouped.setdefault((result.eval_set_id, result.case_id), []).append(result)
    return {key: sorted(grouped[key], key=lambda r: r.repetition) for key in sorted(grouped)}


def _content_hash(run: RunResult, key: CaseKey, results: Sequence[ScoredResult]) -> str:
    for result in results:
        if result.content_hash:
            return result.content_hash
    for info in run.eval_sets:
        if info.eval_set_id == key[0]:
            return info.case_hashes.get(key[1], "")
    return ""


INFORMATIONAL_RESAMPLES = 2_000
"""Bootstrap draws for cost/latency ratios that are reported but not gated (`cost.gate`/`latency.gate` off)."""


def _sub_seed(seed: int, label: str) -> int:
    """A seed per purpose, so adding a metric does not change another metric's numbers."""
    return int(hashlib.sha256(f"{seed}:{label}".encode()).hexdigest()[:16], 16)


def _derive_seed(current: RunResult, baseline: RunResult | None) -> int:
    base_id = baseline.run_id if baseline is not None else ""
    return int(hashlib.sha256(f"{current.run_id}|{base_id}".encode()).hexdigest()[:16], 16)


def _run_day(run: RunResult) -> date | None:
    moment = run.started_at or run.finished_at
    return moment.date() if moment is not None else None


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _signed(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.3f}"


def _p(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4g}"


def _case(key: CaseKey) -> str:
    return f"{key[0]}/{key[1]}"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


@dataclass(frozen=True)
class _PairedMetric:
    """One metric's per-case means over the paired cases."""

    keys: list[CaseKey]
    b: list[float]
    c: list[float]
    k_baseline: int
    k_current: int
    binary: bool
    """Every score is 0 or 1 and every case has exactly one scored repetition on both sides."""
    groups: list[Hashable] | None = None
    """The cluster of each case (its label, or the case itself when unlabelled); None when no paired case has
    a label, i.e. the analysis is unclustered."""

    def clusters(self, diffs: Sequence[float]) -> stats.Clusters | None:
        """D_g and n_g of the oriented differences, or None when unclustered."""
        return stats.group_by_cluster(diffs, self.groups) if self.groups is not None else None


# ------------------------------------------------------------------------------------------------ gate
class _Gate:
    """One evaluation of the policy; holds the findings as the steps add them."""

    def __init__(
        self,
        current: RunResult,
        baseline: RunResult | None,
        policy: GatePolicy,
        flip_rates: Mapping[CaseKey, float],
        today: date | None,
        *,
        absolute_checks: bool,
        absence: NoBaseline | None,
    ) -> None:
        self.current = current
        self.baseline = baseline
        self.policy = policy
        self.flip_rates = flip_rates
        self.absolute_checks = absolute_checks
        self.absence = absence
        self.today = today or _run_day(current) or date.min
        self.seed = policy.seed if policy.seed is not None else _derive_seed(current, baseline)
        self._positions: dict[int, dict[CaseKey, int]] = {}
        self.findings: list[Finding] = []
        # Each run's results are read once, into what the steps read of them (`gate.scores`): a large run's full
        # results may live in a temporary file, and are never all held here.
        self.current_results = scored(current.cases)
        self.baseline_results = scored(baseline.cases) if baseline is not None else []
        self.cur = _group(self.current_results)
        self.base = _group(self.baseline_results)
        self.quarantined = self._quarantined_keys()
        self.compared: list[CaseKey] = []
        self.higher_is_better: dict[str, bool] = {}
        self.paired: dict[str, _PairedMetric] = {}
        self.gated_count = 0
        self.per_case: PerCaseTests | None = None
        self.newly_broken: NewlyBroken | None = None
        self.still_failing: list[CaseKey] = []
        self.missing_baseline_is_error = False
        self._worst: dict[str, float | None] = {}

    def add(
        self,
        kind: FindingKind,
        severity: Severity,
        message: str,
        *,
        key: CaseKey | None = None,
        metric: str | None = None,
        baseline_value: float | None = None,
        current_value: float | None = None,
        effect: float | None = None,
        ci: tuple[float | None, float | None] = (None, None),
        p_value: float | None = None,
        test: str | None = None,
    ) -> None:
        self.findings.append(
            Finding(
                kind=kind,
                severity=severity,
                message=message,
                metric=metric,
                eval_set_id=key[0] if key else None,
                case_id=key[1] if key else None,
                baseline_value=baseline_value,
                current_value=current_value,
                effect=effect,
                ci_low=ci[0],
                ci_high=ci[1],
                p_value=p_value,
                test=test,
            )
        )

    # -- the steps, in order ------------------------------------------------------------------------

    # -- the steps, in order ------------------------------------------------------------------------

    def run(self) -> Verdict:
        self.report_quarantine()
        self.check_completeness()
        mode = self.threshold_mode()
        if self.absolute_checks:
            self.check_thresholds(mode)
            self.check_must_pass()
        comparisons: list[MetricComparison] = []
        if self.baseline is None:
            self.report_missing_baseline()
        else:
            self.pair_cases()
            if self.absolute_checks and mode == "change":
                self.report_still_failing()
            comparisons = self.compare_metrics()
            self.compare_resources()
        diagnostics = self.diagnose_cases()
        return self.conclude(comparisons, diagnostics)

    def threshold_mode(self) -> ThresholdMode:
        """How step 1 treats thresholds: the policy's mode, with `change` falling back to ADK's absolute rule
        when there is nothing to compare with — except under `on_missing_baseline="error"`, where the missing
        comparison is the verdict and failing thresholds are shown as warnings."""
        mode = self.policy.thresholds
        if mode != "change" or self.baseline is not None:
            return mode
        assert self.absence is not None
        if self.judged_absolutely() or self.policy.on_missing_baseline in ("neutral", "fail"):
            return "block"
        return "warn"

    def judged_absolutely(self) -> bool:
        """No baseline, and the thresholds alone decide: no base side at all, or `on_missing_baseline="absolute"`."""
        if self.baseline is not None or self.absence is None:
            return False
        return self.absence.kind == "no_base" or self.policy.on_missing_baseline == "absolute"

    def _quarantined_keys(self) -> set[CaseKey]:
        active = [q for q in self.policy.quarantine if q.until >= self.today]
        keys = set(self.cur) | set(self.base)
        return {key for key in keys if any(q.matches(*key) for q in active)}

    def report_quarantine(self) -> None:
        for key in sorted(self.quarantined):
            entry = next(q for q in self.policy.quarantine if q.until >= self.today and q.matches(*key))
            results = self.cur.get(key, [])
            passes = sum(r.status == "passed" for r in results)
            self.add(
                "quarantined",
                "info",
                f"Case {_case(key)} is quarantined until {entry.until.isoformat()} ({entry.reason}): "
                f"reported ({passes}/{len(results)} repetitions passed), not gated.",
                key=key,
            )
        for entry in self.policy.quarantine:
            if entry.until < self.today:
                where = f"{entry.eval_set_id}/{entry.case_id}" if entry.eval_set_id else entry.case_id
                self.add(
                    "quarantined",
                    "warning",
                    f"Quarantine of case {where} expired on {entry.until.isoformat()} ({entry.reason}): "
                    "the case is gated again; extend or remove the entry.",
                )
                self.findings[-1] = self.findings[-1].model_copy(
                    update={"eval_set_id": entry.eval_set_id, "case_id": entry.case_id}
                )

    def check_completeness(self) -> None:
        run = self.current
        if run.status != "complete":
            self.add(
                "error",
                "blocking",
                f"Run {run.run_id} has status {run.status!r}, not 'complete': its results are incomplete.",
            )
        if not self.current_results:
            self.add(
                "error",
                "blocking",
                f"Run {run.run_id} has no case results: nothing was evaluated, so nothing can pass.",
            )
        severities: dict[str, Severity] = {
            "compare": "info",
            "fail": "blocking",
            "count_as_failure": "warning",
            "ignore": "info",
        }
        severity = severities[self.policy.errors]
        consequence = {
            "compare": "left out of the scores on both sides; the error rate is compared with the baseline's "
            "(errors=compare)",
            "fail": "errors fail the gate (errors=fail)",
            "count_as_failure": "counted as failures (errors=count_as_failure)",
            "ignore": "left out of the comparison (errors=ignore)",
        }[self.policy.errors]
        for key, results in self.cur.items():
            errored = [r for r in results if r.status == "error"]
            if not errored:
                continue
            first = errored[0].error
            what = f"{first.kind}: {first.message}" if first is not None else "no error details recorded"
            self.add(
                "error",
                severity,
                f"Case {_case(key)} errored in {len(errored)} of {len(results)} repetitions ({what}); {consequence}.",
                key=key,
                current_value=float(len(errored)),
            )
        missing_severity: Severity = "blocking" if self.policy.missing_cases == "fail" else "warning"
        expected = max(1, run.repetitions)
        for info in sorted(run.eval_sets, key=lambda i: i.eval_set_id):
            for case_id in sorted(info.case_hashes):
                key = (info.eval_set_id, case_id)
                found = len(self.cur.get(key, []))
                if found < expected:
                    self.add(
                        "missing_case",
                        missing_severity,
                        f"Case {_case(key)} has {found} of {expected} expected results "
                        f"(missing_cases={self.policy.missing_cases}).",
                        key=key,
                        current_value=float(found),
                    )

    def check_thresholds(self, mode: ThresholdMode) -> None:
        """Step 1 under `block` and `warn` (ADK's absolute rule); `change` is judged after pairing."""
        if mode in ("off", "change"):
            return
        severity: Severity = "blocking" if mode == "block" else "warning"
        rule = self.current.pass_rule
        for key, results in self.cur.items():
            if key in self.quarantined:
                continue
            names = sorted({m.name for r in results for m in r.metric_results if m.threshold is not None})
            for name in names:
                metric_results = [m for r in results if (m := r.metric(name)) is not None]
                scores = [m.score for m in metric_results if m.score is not None]
                mean = statistics.fmean(scores) if scores else None
                threshold = next(m.threshold for m in metric_results if m.threshold is not None)
                lower = not metric_results[0].higher_is_better
                if rule == "per_run":
                    failed = sum(m.status == "failed" for m in metric_results)
                    if failed == 0:
                        continue
                    why = f"failed in {failed} of {len(results)} repetitions (pass_rule=per_run: every one must pass)"
                else:
                    if mean is None or (mean <= threshold if lower else mean >= threshold):
                        continue
                    why = f"mean over {len(scores)} repetitions {_num(mean)} misses it (pass_rule=mean_over_runs)"
                direction = "<=" if lower else ">="
                self.add(
                    "threshold",
                    severity,
                    f"Case {_case(key)}: {name} must be {direction} {threshold:g}; {why}.",
                    key=key,
                    metric=name,
                    current_value=mean,
                )

    def check_must_pass(self) -> None:
        allowed = self.policy.must_pass_allowed_failures
        for key, results in self.cur.items():
            if key in self.quarantined or not any(r.must_pass for r in results):
                continue
            failures = sum(r.status != "passed" for r in results)
            if failures > allowed:
                self.add(
                    "must_pass",
                    "blocking",
                    f"Must-pass case {_case(key)} failed or errored in {failures} of {len(results)} repetitions "
                    f"(allowed: {allowed}); hard gates are not statistical.",
                    key=key,
                    current_value=float(len(results) - failures),
                )

    def report_missing_baseline(self) -> None:
        assert self.absence is not None
        why = self.absence.reason.rstrip(".")
        if self.judged_absolutely():
            judged = (
                "judged by the absolute thresholds alone (ADK semantics)"
                if self.policy.thresholds in ("change", "block")
                else f"only the absolute checks ran (thresholds={self.policy.thresholds})"
            )
            self.add("no_baseline", "warning", f"No baseline to compare with ({why}): {judged}.")
            return
        policy = self.policy.on_missing_baseline
        if policy == "error":
            self.missing_baseline_is_error = True
            self.add(
                "no_baseline",
                "blocking",
                f"No baseline could be made ({why}), so nothing was compared: no verdict "
                "(on_missing_baseline=error: exit 3, never a silent pass).",
            )
        elif policy == "fail":
            self.add(
                "no_baseline", "blocking", f"No baseline run to compare with ({why}), and on_missing_baseline=fail."
            )
        else:
            self.add(
                "no_baseline",
                "warning",
                f"No baseline run to compare with ({why}): no regression check was possible "
                "(on_missing_baseline=neutral, so the verdict is inconclusive unless an absolute check failed).",
            )

    def pair_cases(self) -> None:
        assert self.baseline is not None
        removed_failing: list[CaseKey] = []
        for key in sorted(set(self.cur) | set(self.base)):
            if key not in self.base:
                self.add("added_case", "info", f"Case {_case(key)} is new: not compared.", key=key)
            elif key not in self.cur:
                if not self._listed_in_current(key):
                    failing = not _case_passes(self.base[key], self.baseline.pass_rule)
                    if failing:
                        removed_failing.append(key)
                    self.add(
                        "removed_case",
                        "warning",
                        f"Case {_case(key)} is in the baseline only: not compared"
                        + (" (it was failing there)." if failing else "."),
                        key=key,
                    )
            else:
                old = _content_hash(self.baseline, key, self.base[key])
                new = _content_hash(self.current, key, self.cur[key])
                if old != new:
                    self.add(
                        "changed_case",
                        "warning",
                        f"Case {_case(key)} changed (content hash {old[:12] or 'none'} → {new[:12] or 'none'}) and "
                        "its baseline could not be re-scored or re-run: not compared.",
                        key=key,
                    )
                elif key not in self.quarantined:
                    self.compared.append(key)
        if removed_failing:
            names = ", ".join(_case(k) for k in removed_failing[:10])
            more = f" and {len(removed_failing) - 10} more" if len(removed_failing) > 10 else ""
            self.add(
                "removed_case",
                "warning",
                f"This change removes {_plural(len(removed_failing), 'case')} that failed at the baseline: "
                f"{names}{more}. Removing failing cases makes the pass rate look better without the agent getting "
                "better; check that this is intended.",
            )
        base_sets = {info.eval_set_id: info for info in self.baseline.eval_sets}
        for info in sorted(self.current.eval_sets, key=lambda i: i.eval_set_id):
            other = base_sets.get(info.eval_set_id)
            if other is None:
                continue
            old_criteria = [m.describe() for m in other.criteria]
            new_criteria = [m.describe() for m in info.criteria]
            if old_criteria != new_criteria:
                self.add(
                    "mismatch",
                    "warning",
                    f"Eval set {info.eval_set_id}: criteria differ ({', '.join(old_criteria) or 'none'} → "
                    f"{', '.join(new_criteria) or 'none'}) and the baseline was not re-scored; scores are compared "
                    "as recorded.",
                    key=None,
                )
        for key in self.compared:
            errored = [r for r in self.base[key] if r.status == "error"]
            if errored:
                first = errored[0].error
                what = f"{first.kind}: {first.message}" if first is not None else "no error details recorded"
                self.add(
                    "error",
                    "info",
                    f"Case {_case(key)} errored in {len(errored)} of {len(self.base[key])} baseline repetitions "
                    f"({what}); handled as the current run's errors are (errors={self.policy.errors}).",
                    key=key,
                    baseline_value=float(len(errored)),
                )
        if not self.compared:
            self.add(
                "inconclusive",
                "warning",
                "No case is comparable (same id and content hash on both sides, not quarantined): "
                "nothing was compared, which is not evidence of no regression.",
            )

    def report_still_failing(self) -> None:
        """Cases that miss their thresholds now and did at the baseline too: shown, not blocking (step 1)."""
        assert self.baseline is not None
        for key in self.compared:
            if _case_passes(self.cur[key], self.current.pass_rule):
                continue
            if _case_passes(self.base[key], self.baseline.pass_rule):
                continue
            self.still_failing.append(key)
            now = sum(r.status == "passed" for r in self.cur[key])
            before = sum(r.status == "passed" for r in self.base[key])
            self.add(
                "still_failing",
                "warning",
                f"Case {_case(key)} still fails its thresholds ({now}/{len(self.cur[key])} repetitions pass; "
                f"{before}/{len(self.base[key])} at the baseline): not new, so not blocking.",
                key=key,
                baseline_value=before / len(self.base[key]),
                current_value=now / len(self.cur[key]),
            )

    def _listed_in_current(self, key: CaseKey) -> bool:
        """A baseline case the current run lists but did not run is `missing_case` (step 0), not removed."""
        return any(info.eval_set_id == key[0] and key[1] in info.case_hashes for info in self.current.eval_sets)

    # -- step 5 -------------------------------------------------------------------------------------

    def has_thresholds(self) -> bool:
        """Whether the current run's criteria give any metric a threshold (so statuses mean pass/fail)."""
        if any(m.threshold is not None for r in self.current_results for m in r.metric_results):
            return True
        return any(m.threshold is not None for info in self.current.eval_sets for m in info.criteria)

    def metric_names(self) -> tuple[list[str], list[str]]:
        """(gated, reported only), step 5's rule."""
        reported: list[str] = []
        if self.policy.metrics is not None:
            gated = list(dict.fromkeys(self.policy.metrics))
        else:
            with_threshold = {m.name for r in self.current_results for m in r.metric_results if m.threshold is not None}
            for info in self.current.eval_sets:
                with_threshold.update(m.name for m in info.criteria if m.threshold is not None)
            if with_threshold:
                gated, reported = [CASE_PASS_METRIC], sorted(with_threshold)
            else:
                assert self.baseline is not None
                gated = sorted(_score_like(self.current_results) & _score_like(self.baseline_results)) or [
                    CASE_PASS_METRIC
                ]
        primary = self.policy.primary()
        if primary is not None:
            reported = [name for name in dict.fromkeys([*gated, *reported]) if name != primary]
            gated = [primary]
        return gated, reported

    def _direction(self, metric: str) -> bool:
        for results in (self.current_results, self.baseline_results):
            for result in results:
                found = result.metric(metric)
                if found is not None:
                    return found.higher_is_better
        return True

    def _worst_value(self, metric: str) -> float | None:
        """The worst score an errored repetition takes under fail/count_as_failure: 0 when higher is better;
        for a lower-is-better metric the largest value seen in either run (never its best value), None when it
        was never scored (the repetition is then left out)."""
        if self.higher_is_better[metric]:
            return 0.0
        if metric not in self._worst:
            seen = [
                m.score
                for results in (self.current_results, self.baseline_results)
                for r in results
                if (m := r.metric(metric)) is not None and m.score is not None
            ]
            self._worst[metric] = max(seen) if seen else None
        return self._worst[metric]

    def _scores(self, results: Sequence[ScoredResult], metric: str) -> list[float]:
        """Scores of one case's repetitions for `metric`, errors handled per policy (steps 0 and 5)."""
        scores: list[float] = []
        for result in results:
            found = None if metric == CASE_PASS_METRIC else result.metric(metric)
            errored = result.status == "error" or (found is not None and found.status == "error")
            if errored:
                # Both sides alike, so identical runs with the same errors compare as equal.
                if self.policy.errors in ("fail", "count_as_failure"):
                    worst = 0.0 if metric == CASE_PASS_METRIC else self._worst_value(metric)
                    if worst is not None:
                        scores.append(worst)
                continue
            if metric == CASE_PASS_METRIC:
                scores.append(1.0 if result.status == "passed" else 0.0)
            elif found is not None and found.score is not None:
                scores.append(found.score)
        return scores

    def _pair_metric(self, metric: str) -> _PairedMetric:
        keys: list[CaseKey] = []
        b: list[float] = []
        c: list[float] = []
        k_b = k_c = 0
        binary = True
        for key in self.compared:
            before = self._scores(self.base[key], metric)
            after = self._scores(self.cur[key], metric)
            if not before or not after:
                continue
            keys.append(key)
            b.append(statistics.fmean(before))
            c.append(statistics.fmean(after))
            k_b, k_c = max(k_b, len(before)), max(k_c, len(after))
            binary = binary and len(before) == 1 and len(after) == 1
            binary = binary and all(s in (0.0, 1.0) for s in (*before, *after))
        labels = [self._cluster_label(key) for key in keys]
        groups: list[Hashable] | None = None
        if any(label is not None for label in labels):
            # Tagged tuples: an unlabelled case never shares a cluster with a label that happens to equal its id.
            groups = [
                ("label", label) if label is not None else ("case", *key)
                for key, label in zip(keys, labels, strict=True)
            ]
        return _PairedMetric(
            keys=keys, b=b, c=c, k_baseline=k_b, k_current=k_c, binary=binary and bool(keys), groups=groups
        )

    def _cluster_label(self, key: CaseKey) -> str | None:
        """The case's cluster label: the current run's (the eval set under review), else the baseline's."""
        for results in (self.cur.get(key, ()), self.base.get(key, ())):
            for result in results:
                if result.cluster is not None:
                    return result.cluster
        return None

    def compare_metrics(self) -> list[MetricComparison]:
        gated, reported = self.metric_names()
        names = [*gated, *(name for name in reported if name not in gated)]
        tests: dict[str, tuple[float, TestName, str]] = {}
        for name in names:
            self.higher_is_better[name] = self._direction(name)
            self.paired[name] = paired = self._pair_metric(name)
            if paired.keys:
                tests[name] = self._test(name, paired)
        alpha = self.policy.alpha
        # The family that shares α (weighted Holm), with Tarone's rule: a test whose most extreme outcome
        # cannot reach its share is left out and its share goes to the rest.
        nb = self._newly_broken() if self.policy.newly_broken_share > 0 and self.has_thresholds() else None
        nb_in = nb is not None and nb[0].eligible > 0 and nb[0].min_p < alpha * self.policy.newly_broken_share
        errors = self._error_rate() if self.policy.errors == "compare" else None
        err_in = errors is not None and errors[0].min_p < alpha * self.policy.error_rate_share
        gated_with_p = [name for name in gated if name in tests]
        family: list[tuple[str, float, float]] = []  # (member, p, weight)
        main = (
            1.0 - (self.policy.newly_broken_share if nb_in else 0.0) - (self.policy.error_rate_share if err_in else 0.0)
        )
        if gated_with_p:
            family.extend((name, tests[name][0], main / len(gated_with_p)) for name in gated_with_p)
        if nb_in and nb is not None:
            family.append((NEWLY_BROKEN_TEST, nb[0].p_value, self.policy.newly_broken_share))
        if err_in and errors is not None:
            family.append((ERROR_RATE_METRIC, errors[0].p_value, self.policy.error_rate_share))
        raw = [p for _, p, _ in family]
        if self.policy.correction == "holm" and family:
            adjusted = weighted_holm(raw, [w for _, _, w in family])
        else:
            adjusted = list(raw)
        p_adjusted = {member: p for (member, _, _), p in zip(family, adjusted, strict=True)}
        self.gated_count = len(family)
        comparisons = [
            self._judge_metric(name, name in gated, tests.get(name), p_adjusted.get(name), gated) for name in names
        ]
        if nb is not None:
            self._report_newly_broken(nb[0], nb[1], p_adjusted.get(NEWLY_BROKEN_TEST), nb_in, clustered=nb[2])
        if errors is not None:
            comparisons.append(self._judge_error_rate(errors[0], errors[1], p_adjusted.get(ERROR_RATE_METRIC)))
        return comparisons

    def _oriented(self, name: str, paired: _PairedMetric) -> list[float]:
        sign = 1.0 if self.higher_is_better[name] else -1.0
        return [sign * (c - b) for b, c in zip(paired.b, paired.c, strict=True)]

    # -- the stratified tests -----------------------------------------------------------------------

    def _pass_strata(self, keys: Sequence[CaseKey]) -> list[tuple[CaseKey, Stratum]]:
        """Each case's case_pass scores as counts (errors per policy, as `_scores`); cases scored on both sides."""
        strata: list[tuple[CaseKey, Stratum]] = []
        for key in keys:
            before = self._scores(self.base[key], CASE_PASS_METRIC)
            after = self._scores(self.cur[key], CASE_PASS_METRIC)
            if before and after:
                strata.append((key, Stratum(len(before), len(after), int(sum(before)), int(sum(after)))))
        return strata

    def _newly_broken(self) -> tuple[NewlyBrokenResult, list[CaseKey], bool] | None:
        """The newly-broken test over the compared cases; every repetition counts and an error is not a pass."""
        strata: list[tuple[CaseKey, Stratum]] = []
        for key in self.compared:
            before, after = self.base[key], self.cur[key]
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
        labels = [self._cluster_label(key) for key, _ in strata]
        groups: list[Hashable] | None = None
        if any(label is not None for label in labels):
            groups = [
                ("label", label) if label is not None else ("case", *key)
                for (key, _), label in zip(strata, labels, strict=True)
            ]
        result = newly_broken_test([s for _, s in strata], groups=groups)
        if result.eligible == 0:
            return None
        broken = [strata[index][0] for index in result.broken_at]
        return result, broken, groups is not None

    def _error_rate(self) -> tuple[PassRateResult, list[tuple[CaseKey, Stratum]]] | None:
        """The stratified test on "not errored" over the compared cases, when any of them errored."""
        strata: list[tuple[CaseKey, Stratum]] = []
        any_error = False
        for key in self.compared:
            before, after = self.base[key], self.cur[key]
            ok_before = sum(r.status != "error" for r in before)
            ok_after = sum(r.status != "error" for r in after)
            any_error = any_error or ok_before < len(before) or ok_after < len(after)
            strata.append((key, Stratum(len(before), len(after), ok_before, ok_after)))
        if not any_error:
            return None
        result = pass_rate_test(
            [s for _, s in strata], seed=_sub_seed(self.seed, "error_rate"), resamples=self.policy.resamples
        )
        return result, strata

    def _test(self, name: str, paired: _PairedMetric) -> tuple[float, TestName, str]:
        """(p, test, arithmetic) for H0: Δ ≥ 0 vs H1: Δ < 0 on the oriented differences."""
        diffs = self._oriented(name, paired)
        clusters = paired.clusters(diffs)
        if clusters is not None:
            return self._clustered_test(name, clusters, len(diffs))
        if name == CASE_PASS_METRIC:
            strata = [s for _, s in self._pass_strata(paired.keys)]
            result = pass_rate_test(
                strata, seed=_sub_seed(self.seed, f"stratified:{name}"), resamples=self.policy.resamples
            )
            return result.p_value, result.test, _stratified_how(result, len(strata))
        if paired.binary:
            n10 = sum(d < 0 for d in diffs)
            n01 = sum(d > 0 for d in diffs)
            m = n10 + n01
            p = stats.mcnemar_exact_p(n10, n01)
            tail = sum(math.comb(m, j) for j in range(n10, m + 1))
            how = (
                f"exact McNemar: n10={n10} worse, n01={n01} better; p = P[Bin({m}, ½) ≥ {n10}] = {tail}/{2**m} = {_p(p)}"
                if m
                else "exact McNemar: no discordant case, p = 1"
            )
            return p, "mcnemar_exact", how
        result_sf = stats.sign_flip_test(
            diffs,
            seed=_sub_seed(self.seed, f"sign_flip:{name}"),
            resamples=self.policy.resamples,
            exact_max_n=self.policy.exact_enumeration_max_n,
        )
        if result_sf.test == "sign_flip_exact":
            how = (
                f"exact sign-flip over the 2^{result_sf.nonzero} = {result_sf.draws} sign vectors of the "
                f"{result_sf.nonzero} non-zero d_i: {result_sf.at_least_as_extreme} with Σσd ≤ Σd → "
                f"p = {result_sf.at_least_as_extreme}/{result_sf.draws} = {_p(result_sf.p_value)}"
            )
        else:
            how = (
                f"Monte Carlo sign-flip, S={result_sf.draws} over {result_sf.nonzero} non-zero d_i: "
                f"p = (1 + {result_sf.at_least_as_extreme})/(1 + {result_sf.draws}) = {_p(result_sf.p_value)}"
            )
        return result_sf.p_value, result_sf.test, how

    def _clustered_test(self, name: str, clusters: stats.Clusters, n: int) -> tuple[float, TestName, str]:
        """The sign-flip test on the cluster sums D_g: one sign per cluster, T(σ) = Σ_g σ_g D_g ≤ Σ_g D_g."""
        result = stats.sign_flip_test(
            clusters.sums,
            seed=_sub_seed(self.seed, f"sign_flip:{name}"),
            resamples=self.policy.resamples,
            exact_max_n=self.policy.exact_enumeration_max_n,
        )
        head = f"clustered sign-flip (one sign per cluster sum D_g, G={clusters.count} clusters of n={n} cases)"
        if result.test == "sign_flip_exact":
            how = (
                f"{head}: exact over the 2^{result.nonzero} = {result.draws} sign vectors of the {result.nonzero} "
                f"non-zero D_g: {result.at_least_as_extreme} with Σσ_gD_g ≤ ΣD_g → "
                f"p = {result.at_least_as_extreme}/{result.draws} = {_p(result.p_value)}"
            )
        else:
            how = (
                f"{head}: Monte Carlo, S={result.draws} over {result.nonzero} non-zero D_g: "
                f"p = (1 + {result.at_least_as_extreme})/(1 + {result.draws}) = {_p(result.p_value)}"
            )
        return result.p_value, result.test, how

    def _judge_metric(
        self,
        name: str,
        gated: bool,
        test: tuple[float, TestName, str] | None,
        p_adjusted: float | None,
        gated_names: Sequence[str],
    ) -> MetricComparison:
        policy = self.policy
        delta_block, delta_ni = policy.margins(name)
        paired = self.paired[name]
        higher = self.higher_is_better[name]
        n = len(paired.keys)
        if gated:
            role = "gated"
        elif CASE_PASS_METRIC in gated_names:
            role = "reported only: thresholds decide each case's pass/fail, and the gate compares pass rates"
        else:
            role = f"reported only (gated: {', '.join(gated_names)})"
        if test is None:
            message = f"{name}: no case has a score on both sides, so it could not be compared."
            if gated:
                self.add("inconclusive", "warning", message, metric=name)
            return MetricComparison(
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
        p, test_name, how = test
        diffs = self._oriented(name, paired)
        delta_oriented = statistics.fmean(diffs)
        clusters = paired.clusters(diffs)
        boot_seed = _sub_seed(self.seed, f"bootstrap:{name}")
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
        big_enough = delta_oriented <= -delta_block + _FLOAT_SLACK
        non_inferior = low_o >= -delta_ni - _FLOAT_SLACK
        short = self._evidence_short(n, clusters.count if clusters is not None else None, diffs, delta_ni)
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
            p_text = f"weighted Holm over {self.gated_count} gate test(s): p_adj = {_p(p_adjusted)}"
        else:
            p_text = f"p = {_p(p_used)}"
        in_clusters = f" in G={clusters.count} clusters" if clusters is not None else ""
        resampled = "whole clusters, " if clusters is not None else ""
        steps = [
            f"{name} ({role}){worse}: n={n} paired cases{in_clusters}, k={paired.k_baseline}/{paired.k_current} "
            f"(baseline/current); mean {_num(base_mean)} → {_num(cur_mean)}, Δ̂ = {_signed(delta)}",
            how,
            f"{p_text} {'<' if significant else '≥'} α = {policy.alpha:g}",
            f"paired bootstrap (S={policy.resamples}, {resampled}percentile): L = {_signed(ci_low)}, "
            f"U = {_signed(ci_high)} (one-sided {level}% bounds)",
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
        self._metric_finding(comparison, p_used, gated, short)
        if gated and clusters is not None and 2.0 ** (-clusters.count) >= policy.alpha:
            self.add(
                "inconclusive",
                "warning",
                f"{name}: only G={clusters.count} clusters, and one sign per cluster can reach at best "
                f"p = 2^-{clusters.count} = {2.0 ** (-clusters.count):.4g} ≥ α = {policy.alpha:g}: this analysis can "
                "neither block nor show non-inferiority. Label cases with more, smaller clusters, or add cases.",
                metric=name,
            )
        return comparison

    @staticmethod
    def _evidence_short(n: int, clusters: int | None, diffs: Sequence[float], delta_ni: float) -> str | None:
        """Why a non-inferior-looking interval is not yet evidence (step 5), or None when it is."""
        units = clusters if clusters is not None else n
        unit = "cluster" if clusters is not None else "case"
        if units < MIN_UNITS:
            return (
                f"only {_plural(units, 'independent ' + unit)}: too few to show that nothing got worse "
                f"(at least {MIN_UNITS} are needed)"
            )
        needed = math.ceil(RULE_OF_THREE / delta_ni - 1e-9)
        if units < needed and not any(d < 0 for d in diffs):
            return (
                f"no case got worse, but with {_plural(units, unit)} a drop affecting up to "
                f"{RULE_OF_THREE / units:.0%} of them would go unseen 95% of the time (rule of three), more than "
                f"δ_ni = {delta_ni:g}; ≈{needed} {unit}s would show non-inferiority"
            )
        return None

    def _metric_finding(self, m: MetricComparison, p_used: float, gated: bool, short: str | None) -> None:
        def add(kind: FindingKind, severity: Severity, message: str) -> None:
            self.add(
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

        alpha = self.policy.alpha
        head = f"{m.metric} {_num(m.baseline_mean)} → {_num(m.current_mean)} (Δ̂ = {_signed(m.delta)}, n={m.n_cases})"
        if m.verdict == "regressed":
            why = (
                f"{head}: p = {_p(p_used)} < α = {alpha:g} and the drop is at least δ_block = {m.delta_block:g}, "
                "so it is unlikely to be noise"
            )
            if gated:
                add("regression", "blocking", why + ".")
            else:
                add("regression", "warning", why + " (reported only, not gated).")
        elif m.verdict == "inconclusive":
            if short is not None and p_used >= alpha:
                why = f"{head}: {short}"
            else:
                why = (
                    f"{head}: p = {_p(p_used)} ≥ α = {alpha:g}, so the drop may be noise, but L = {_signed(m.ci_low)} "
                    f"does not show non-inferiority within δ_ni = {m.delta_ni:g}"
                )
            if m.n_needed is not None and m.mde is not None:
                why += (
                    f"; this run detects drops of {m.mde:.3f} or more, ≈{m.n_needed} cases would detect "
                    f"{m.delta_block:g}. Rerun the discordant or flaky cases with more repetitions"
                )
            add("inconclusive", "warning" if gated else "info", why + ".")
        elif m.delta is not None and m.ci_low is not None and m.ci_high is not None:
            improved = m.ci_low > 0 if m.higher_is_better else m.ci_high < 0
            if improved:
                add(
                    "improvement",
                    "info",
                    f"{head}: the whole interval [{_signed(m.ci_low)}, {_signed(m.ci_high)}] is better than 0.",
                )

    def _judge_error_rate(
        self, result: PassRateResult, strata: Sequence[tuple[CaseKey, Stratum]], p_adjusted: float | None
    ) -> MetricComparison:
        """The error rate as a guard (step 5): blocks when it rose beyond noise by ≥ δ_block, never inconclusive."""
        policy = self.policy
        delta_block, delta_ni = policy.margins(ERROR_RATE_METRIC)
        b = [1 - s.baseline_passes / s.baseline_runs for _, s in strata]
        c = [1 - s.current_passes / s.current_runs for _, s in strata]
        n = len(strata)
        base_mean, cur_mean = statistics.fmean(b), statistics.fmean(c)
        delta = cur_mean - base_mean
        oriented = [bi - ci for bi, ci in zip(b, c, strict=True)]
        low_o, high_o = stats.bootstrap_mean_bounds(
            oriented, alpha=policy.alpha, seed=_sub_seed(self.seed, "bootstrap:error_rate"), resamples=policy.resamples
        )
        p_used = p_adjusted if p_adjusted is not None else result.p_value
        significant = p_used < policy.alpha
        regressed = significant and delta >= delta_block - _FLOAT_SLACK
        how = _stratified_how(result, n, what="repetitions that did not error")
        explanation = (
            f"{ERROR_RATE_METRIC} (a guard: blocks on a rise, needs no evidence to pass; errors=compare): n={n} "
            f"compared cases; share of repetitions that errored {base_mean:.1%} → {cur_mean:.1%}, Δ̂ = {_signed(delta)}; "
            f"{how}; p used = {_p(p_used)} {'<' if significant else '≥'} α = {policy.alpha:g}; "
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
            p_value=result.p_value,
            p_adjusted=p_adjusted,
            test=result.test,
            n_cases=n,
            k_baseline=max(s.baseline_runs for _, s in strata),
            k_current=max(s.current_runs for _, s in strata),
            delta_block=delta_block,
            delta_ni=delta_ni,
            verdict="regressed" if regressed else "pass",
            explanation=explanation,
        )
        if regressed:
            self.add(
                "error",
                "blocking",
                f"Errors rose: {base_mean:.1%} → {cur_mean:.1%} of repetitions errored over {_plural(n, 'compared case')} "
                f"(Δ̂ = {_signed(delta)}; p = {_p(p_used)} < α = {policy.alpha:g}): more than the baseline's errors "
                "explain (errors=compare).",
                metric=ERROR_RATE_METRIC,
                baseline_value=base_mean,
                current_value=cur_mean,
                effect=delta,
                ci=(comparison.ci_low, comparison.ci_high),
                p_value=p_used,
                test=result.test,
            )
        elif delta > 0:
            self.add(
                "error",
                "info",
                f"Errors {base_mean:.1%} → {cur_mean:.1%} of repetitions (Δ̂ = {_signed(delta)}; p = {_p(p_used)}): "
                "within what the baseline's own errors explain, so not blocking (errors=compare).",
                metric=ERROR_RATE_METRIC,
                baseline_value=base_mean,
                current_value=cur_mean,
                effect=delta,
                p_value=p_used,
                test=result.test,
            )
        return comparison

    def _report_newly_broken(
        self,
        result: NewlyBrokenResult,
        broken: Sequence[CaseKey],
        p_adjusted: float | None,
        tested: bool,
        *,
        clustered: bool,
    ) -> None:
        alpha = self.policy.alpha
        p_used = p_adjusted if p_adjusted is not None else result.p_value
        significant = tested and p_used < alpha
        self.newly_broken = NewlyBroken(
            cases=[_case(key) for key in broken],
            eligible=result.eligible,
            expected=result.expected,
            p_value=result.p_value,
            p_adjusted=p_adjusted,
            alpha_share=self.policy.newly_broken_share if tested else 0.0,
            significant=significant,
            unit="cluster" if clustered else "case",
        )
        if not broken:
            return
        names = ", ".join(_case(key) for key in broken[:10])
        more = f" and {len(broken) - 10} more" if len(broken) > 10 else ""
        unit = "cluster" if clustered else "case"
        chance = (
            f"by chance alone about {result.expected:.2f} {unit}s would (over the {_plural(result.eligible, unit)} "
            f"whose passes could all have moved{'; correlated cases count once per cluster' if clustered else ''}); "
            f"p = {_p(result.p_value)} (exact)"
        )
        if significant:
            why = f"p_adj = {_p(p_used)} < α = {alpha:g}: newly broken, not noise"
        elif tested:
            why = f"p_adj = {_p(p_used)} ≥ α = {alpha:g}: could be noise, shown, not blocking"
        else:
            why = "too few cases could flip this way for the test to reach its share of α: shown, not blocking"
        self.add(
            "newly_broken",
            "blocking" if significant else "warning",
            f"{_plural(len(broken), 'case')} that passed every repetition at the baseline now "
            f"{'fails' if len(broken) == 1 else 'fail'} every one: {names}{more}; {chance}; {why}.",
            current_value=float(len(broken)),
            baseline_value=result.expected,
            p_value=p_used,
            test="newly_broken_exact",
        )

    # -- step 6 -------------------------------------------------------------------------------------

    def compare_resources(self) -> None:
        kinds: tuple[Literal["cost", "latency"], ...] = ("cost", "latency")
        for kind in kinds:
            gate = self.policy.cost if kind == "cost" else self.policy.latency
            before: list[float | None] = []
            after: list[float | None] = []
            for key in self.compared:
                before.append(self._resource(self.base[key], kind))
                after.append(self._resource(self.cur[key], kind))
            if all(v is None for v in before) and all(v is None for v in after):
                continue
            # An informational ratio's interval only colours a message, so it takes fewer resamples; a gated
            # one gets the policy's full count. (Keeps `decide` under half a second on 1000-case runs.)
            draws = self.policy.resamples if gate.gate else min(self.policy.resamples, INFORMATIONAL_RESAMPLES)
            result = stats.log_ratio_rule(
                before,
                after,
                tau=gate.tau,
                alpha=self.policy.alpha,
                seed=_sub_seed(self.seed, f"log_ratio:{kind}"),
                resamples=draws,
            )
            what = "mean cost per case" if kind == "cost" else "median latency per case"
            if result is None:
                self.add(
                    kind,
                    "info",
                    f"{kind.capitalize()}: no case has a positive {what} on both sides; not compared.",
                )
                continue
            verdict = (
                f"exp(L) = {result.ci_low:.3f} > 1 + τ = {1 + gate.tau:.2f} → regressed"
                if result.regressed
                else f"exp(L) = {result.ci_low:.3f} ≤ 1 + τ = {1 + gate.tau:.2f} → not a regression"
            )
            severity: Severity = "info"
            if result.regressed:
                severity = "blocking" if gate.gate else "warning"
            level = round(100 * (1 - self.policy.alpha))
            self.add(
                kind,
                severity,
                f"{kind.capitalize()} ratio ×{result.ratio:.3f} (geometric mean of the per-case ratios of {what} over "
                f"{_plural(result.n, 'case')}, {result.excluded} excluded for zero or missing values; one-sided "
                f"{level}% bounds [{result.ci_low:.3f}, {result.ci_high:.3f}]): {verdict}"
                f"{'' if gate.gate else ' (informational)'}.",
                effect=result.ratio,
                ci=(result.ci_low, result.ci_high),
                test="log_ratio_bootstrap",
            )

    @staticmethod
    def _resource(results: Sequence[ScoredResult], kind: str) -> float | None:
        if kind == "cost":
            costs = [r.cost_usd for r in results if r.cost_usd is not None]
            return statistics.fmean(costs) if costs else None
        latencies = [r.latency_s for r in results if r.latency_s is not None]
        return statistics.median(latencies) if latencies else None

    # -- step 7 -------------------------------------------------------------------------------------

    def per_case_tests(self) -> dict[CaseKey, tuple[float, float]]:
        """{case: (Fisher p, BH q)} for the compared cases with ≥ PER_CASE_MIN_RUNS repetitions on both sides.

        Passes are repetitions with status `passed` (an errored one is not a pass, docs/gate.md §2), the same
        counts the case's diagnostic shows. Also records the summary in `self.per_case`.
        """
        if self.baseline is None or not self.compared:
            return {}
        tested: list[CaseKey] = []
        p_values: list[float] = []
        for key in self.compared:
            before, after = self.base[key], self.cur[key]
            if len(before) < PER_CASE_MIN_RUNS or len(after) < PER_CASE_MIN_RUNS:
                continue
            tested.append(key)
            p_values.append(
                stats.fisher_one_sided_p(
                    sum(r.status == "passed" for r in before),
                    len(before),
                    sum(r.status == "passed" for r in after),
                    len(after),
                )
            )
        q_values = stats.benjamini_hochberg(p_values)
        self.per_case = PerCaseTests(
            min_runs=PER_CASE_MIN_RUNS,
            q_threshold=PER_CASE_Q,
            tested=len(tested),
            untested=len(self.compared) - len(tested),
            flagged=sum(q < PER_CASE_Q for q in q_values),
            k_baseline=min(len(self.base[key]) for key in self.compared),
            k_current=min(len(self.cur[key]) for key in self.compared),
        )
        return {key: (p, q) for key, p, q in zip(tested, p_values, q_values, strict=True)}

    def diagnose_cases(self) -> list[CaseDiagnostic]:
        compared = set(self.compared)
        changed = {(f.eval_set_id, f.case_id) for f in self.findings if f.kind == "changed_case"}
        fisher = self.per_case_tests()
        diagnostics: list[CaseDiagnostic] = []
        for key in sorted(set(self.cur) | set(self.base)):
            before, after = self.base.get(key), self.cur.get(key)
            flip = self.flip_rates.get(key)
            b_scores = {n: self._mean(p, key, "b") for n, p in self.paired.items()}
            c_scores = {n: self._mean(p, key, "c") for n, p in self.paired.items()}
            likely = sorted(
                name
                for name, paired in self.paired.items()
                if key in compared and self._drop(name, b_scores[name], c_scores[name]) >= LIKELY_REGRESSED_DROP
            )
            label = self._label(key, before, after, flip, compared, changed)
            tested = fisher.get(key)
            diagnostics.append(
                CaseDiagnostic(
                    eval_set_id=key[0],
                    case_id=key[1],
                    label=label,
                    baseline_passes=sum(r.status == "passed" for r in before) if before else None,
                    baseline_k=len(before) if before else None,
                    current_passes=sum(r.status == "passed" for r in after) if after else None,
                    current_k=len(after) if after else None,
                    baseline_scores={n: v for n, v in b_scores.items() if v is not None},
                    current_scores={n: v for n, v in c_scores.items() if v is not None},
                    likely_regressed_metrics=likely,
                    flip_rate=flip,
                    quarantined=key in self.quarantined,
                    cluster=self._cluster_label(key),
                    fisher_p=tested[0] if tested else None,
                    fisher_q=tested[1] if tested else None,
                    per_case_regressed=tested is not None and tested[1] < PER_CASE_Q,
                )
            )
            if likely or label == "regressed" or (tested is not None and tested[1] < PER_CASE_Q):
                self._case_finding(key, likely, flip, b_scores, c_scores, tested)
        return diagnostics

    def _mean(self, paired: _PairedMetric, key: CaseKey, side: Literal["b", "c"]) -> float | None:
        positions = self._positions.get(id(paired))
        if positions is None:  # one dict per metric instead of a list scan per case (O(n) → O(1))
            positions = self._positions[id(paired)] = {k: i for i, k in enumerate(paired.keys)}
        index = positions.get(key)
        if index is None:
            return None
        return paired.b[index] if side == "b" else paired.c[index]

    def _drop(self, name: str, b: float | None, c: float | None) -> float:
        if b is None or c is None:
            return 0.0
        return b - c if self.higher_is_better[name] else c - b

    def _label(
        self,
        key: CaseKey,
        before: list[ScoredResult] | None,
        after: list[ScoredResult] | None,
        flip: float | None,
        compared: set[CaseKey],
        changed: set[tuple[str | None, str | None]],
    ) -> CaseLabel:
        if before is None:
            return "new"
        if after is None:
            return "removed"
        if key in changed:
            return "changed"
        b_rate = sum(r.status == "passed" for r in before) / len(before)
        c_rate = sum(r.status == "passed" for r in after) / len(after)
        known_flaky = flip is not None and flip >= self.policy.flaky_flip_rate
        if b_rate - c_rate >= LIKELY_REGRESSED_DROP and not known_flaky:
            return "regressed"
        if c_rate - b_rate >= LIKELY_REGRESSED_DROP and not known_flaky:
            return "improved"
        if known_flaky or 0 < b_rate < 1 or 0 < c_rate < 1:
            return "flaky"
        if b_rate == 1 and c_rate == 1:
            return "stable_pass"
        if b_rate == 0 and c_rate == 0:
            return "stable_fail"
        return "flaky"

    def _case_finding(
        self,
        key: CaseKey,
        likely: list[str],
        flip: float | None,
        b_scores: dict[str, float | None],
        c_scores: dict[str, float | None],
        tested: tuple[float, float] | None = None,
    ) -> None:
        metric = likely[0] if likely else None
        b = b_scores.get(metric) if metric else None
        c = c_scores.get(metric) if metric else None
        values = f"{metric} {_num(b)} → {_num(c)}" if metric else "pass rate fell by ≥ 0.5"
        if flip is not None and flip >= self.policy.flaky_flip_rate:
            self.add(
                "flaky",
                "info",
                f"Case {_case(key)}: {values}, but it flips in {flip:.0%} of base-branch runs, so this is likely "
                "noise.",
                key=key,
                metric=metric,
                baseline_value=b,
                current_value=c,
            )
        elif key in self.quarantined:
            return
        elif tested is not None:
            self._tested_case_finding(key, likely, values, metric, b, c, tested)
        else:
            self.add(
                "regression",
                "info",
                f"Case {_case(key)} likely regressed: {values} (drop ≥ {LIKELY_REGRESSED_DROP}); shown for "
                "review, not gated (a single case needs k ≥ 5 repetitions to be tested on its own).",
                key=key,
                metric=metric,
                baseline_value=b,
                current_value=c,
            )

    def _tested_case_finding(
        self,
        key: CaseKey,
        likely: list[str],
        values: str,
        metric: str | None,
        b: float | None,
        c: float | None,
        tested: tuple[float, float],
    ) -> None:
        p, q = tested
        before, after = self.base[key], self.cur[key]
        passes = (
            f"passes {sum(r.status == 'passed' for r in before)}/{len(before)} → "
            f"{sum(r.status == 'passed' for r in after)}/{len(after)}"
        )
        assert self.per_case is not None
        test = f"one-sided Fisher exact p = {_p(p)}, Benjamini–Hochberg q = {_p(q)}"
        across = f"across {_plural(self.per_case.tested, 'tested case')}"
        if q < PER_CASE_Q:
            head = f"Case {_case(key)} regressed (per-case test): {passes}, {test} < {PER_CASE_Q:g} {across}"
            if likely:
                head += f"; {values}"
        else:
            head = (
                f"Case {_case(key)} likely regressed: {values} (drop ≥ {LIKELY_REGRESSED_DROP}), but its per-case "
                f"test is not significant ({passes}, {test} ≥ {PER_CASE_Q:g} {across})"
            )
        self.add(
            "regression",
            "info",
            head + "; shown for review, not gated.",
            key=key,
            metric=metric,
            baseline_value=b,
            current_value=c,
            p_value=q,
            test="fisher_exact",
        )

    # -- outcome ------------------------------------------------------------------------------------

    def conclude(self, comparisons: list[MetricComparison], diagnostics: list[CaseDiagnostic]) -> Verdict:
        gated_inconclusive = [m for m in comparisons if m.gated and not m.guard and m.verdict == "inconclusive"]
        nothing_compared = self.baseline is not None and not self.compared
        no_baseline = self.baseline is None
        blocking = [f for f in self.findings if f.severity == "blocking"]
        real_blocking = [f for f in blocking if not (self.missing_baseline_is_error and f.kind == "no_baseline")]
        outcome: Literal["pass", "fail", "inconclusive", "error"]
        if real_blocking:
            outcome = "fail"
            extra = len(real_blocking) - 1
            more = f" (and {_plural(extra, 'more blocking finding')})" if extra else ""
            reason = f"Failed: {real_blocking[0].message.rstrip('.')}{more}."
        elif self.missing_baseline_is_error:
            outcome = "error"
            reason = f"Error: {blocking[0].message.rstrip('.')}."
        elif no_baseline or nothing_compared or gated_inconclusive:
            outcome = "inconclusive"
            if no_baseline:
                reason = (
                    "Inconclusive: there is no baseline to compare with (on_missing_baseline=neutral), "
                    "and every absolute check passed."
                )
                if self.judged_absolutely() and self.policy.thresholds in ("change", "block"):
                    outcome = "pass"
                    reason = (
                        "Passed on the absolute thresholds alone: there is no base side to compare with, and every "
                        "case met every threshold."
                    )
            elif nothing_compared:
                reason = "Inconclusive: no case was comparable with the baseline, so nothing was compared."
            else:
                m = gated_inconclusive[0]
                reason = (
                    f"Inconclusive: {m.metric} moved {_signed(m.delta)} over {m.n_cases} cases, which is neither a "
                    f"significant regression nor shown to be within {m.delta_ni:g} of the baseline"
                    + (f"; ≈{m.n_needed} cases would settle a {m.delta_block:g} drop." if m.n_needed else ".")
                )
            if self.policy.strict and outcome == "inconclusive":
                self.add("inconclusive", "blocking", "strict: an inconclusive verdict fails the gate.")
                outcome = "fail"
                reason = "Failed (strict): " + reason.removeprefix("Inconclusive: ")
        else:
            outcome = "pass"
            gated = [m.metric for m in comparisons if m.gated and not m.guard]
            reason = (
                f"Passed: no gated metric ({', '.join(gated)}) regressed over "
                f"{_plural(len(self.compared), 'compared case')}, each shown within its margin, and every hard "
                "check passed."
            )
        errored = sum(any(r.status == "error" for r in results) for results in self.cur.values())
        baseline_errored = sum(any(r.status == "error" for r in self.base[key]) for key in self.compared)
        labels = [d.label for d in diagnostics]
        findings = sorted(self.findings, key=lambda f: _SEVERITY_ORDER[f.severity])
        verdict = Verdict(
            outcome=outcome,
            reason=reason,
            current_run_id=self.current.run_id,
            findings=findings,
            metrics=comparisons,
            cases=diagnostics,
            baseline=self._baseline_info(),
            counts=VerdictCounts(
                compared=len(self.compared),
                added=labels.count("new") if self.baseline is not None else 0,
                removed=sum(1 for f in self.findings if f.kind == "removed_case" and f.case_id is not None),
                changed=labels.count("changed"),
                errored=errored,
                baseline_errored=baseline_errored,
                still_failing=len(self.still_failing),
                quarantined=len(self.quarantined),
            ),
            newly_broken=self.newly_broken,
            per_case_tests=self.per_case,
            alpha=self.policy.alpha,
            seed=self.seed,
            policy_digest=self.policy.digest(),
        )
        return verdict.model_copy(update={"headline": headline(verdict)})

    def _baseline_info(self) -> BaselineInfo | None:
        run = self.baseline
        if run is None:
            return None
        created = run.finished_at or run.started_at
        started = self.current.started_at
        age = (started - created).total_seconds() if created is not None and started is not None else None
        return BaselineInfo(
            run_id=run.run_id,
            commit=run.context.commit,
            branch=run.context.branch,
            created_at=created,
            age_s=age,
            chosen_by="",
        )


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


def _case_passes(results: Sequence[ScoredResult], pass_rule: str) -> bool:
    """Whether a case passes over its repetitions under the run's pass rule (errors never pass).

    `per_run`: every repetition has status `passed`. `mean_over_runs`: no repetition errored and, for every
    thresholded metric, the mean over the scored repetitions meets the threshold."""
    if not results or any(r.status == "error" for r in results):
        return False
    if pass_rule != "mean_over_runs":
        return all(r.status == "passed" for r in results)
    names = sorted({m.name for r in results for m in r.metric_results if m.threshold is not None})
    for name in names:
        metric_results = [m for r in results if (m := r.metric(name)) is not None]
        scores = [m.score for m in metric_results if m.score is not None]
        threshold = next(m.threshold for m in metric_results if m.threshold is not None)
        if not scores:
            continue
        mean = statistics.fmean(scores)
        lower = not metric_results[0].higher_is_better
        if (mean > threshold) if lower else (mean < threshold):
            return False
    return True


def _stratified_how(result: PassRateResult, n: int, *, what: str = "passing repetitions") -> str:
    """The arithmetic of a stratified test, for the explanation."""
    head = (
        f"stratified permutation test ({what} exchanged within each case, weights 1/(p̂(1−p̂)) with p̂ the case's "
        f"pooled rate): {result.informative} of {n} cases could move, T = {result.statistic:.2f} against "
        f"{result.expected:.2f} expected"
    )
    if result.informative == 0:
        return f"{head}; no case could move, p = 1"
    if result.test == "stratified_exact":
        return f"{head}; exact over {_plural(result.types, 'case type')}: p = {_p(result.p_value)}"
    return (
        f"{head}; Monte Carlo over {_plural(result.types, 'case type')}, S={result.draws}: "
        f"p = (1 + {result.at_least_as_extreme})/(1 + {result.draws}) = {_p(result.p_value)}"
    )
