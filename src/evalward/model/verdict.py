"""The gate's answer: pass, fail or inconclusive, with every number a reader needs to recompute it.

A `Verdict` is persisted (JSON file, database, PR comment re-renders), so every field is documented and
the shape carries `schema_version`. `gate.decide` fills everything except `baseline`, which the caller
(who chose the baseline run) fills.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

VERDICT_SCHEMA_VERSION = 1
"""Version of the persisted `Verdict` JSON; bump it with a migration note when the shape changes."""

Outcome = Literal["pass", "fail", "inconclusive", "error"]
"""`fail`: at least one blocking finding. `inconclusive`: no blocking finding, but a gated metric could
neither be shown to regress nor to be non-inferior (or there was no baseline under a neutral policy).
`error`: no verdict could be reached because the comparison itself could not be made (a base side exists but
no baseline could be stored or run, under `on_missing_baseline = "error"`): exit 3, never a silent pass."""

Severity = Literal["blocking", "warning", "info"]
"""`blocking` makes the outcome `fail`; `warning` and `info` are shown only."""

FindingKind = Literal[
    "regression",  # a gated metric (or, at info level, one case) got worse beyond noise
    "newly_broken",  # cases that passed every repetition at the baseline fail every one now
    "still_failing",  # a case that misses its thresholds now and already did at the baseline
    "threshold",  # a case missed an absolute threshold from the run's criteria
    "must_pass",  # a must_pass case failed more repetitions than allowed
    "error",  # a case errored (agent crash, timeout, judge error) or the run is incomplete
    "missing_case",  # a case of the current run's eval sets has no (or too few) results
    "added_case",  # in the current run only: not compared
    "removed_case",  # in the baseline only: not compared
    "changed_case",  # same id, different content hash: not compared
    "no_baseline",  # nothing to compare with
    "nothing_compared",  # a baseline, but no case comparable with it: an error, never "no regressions"
    "mismatch",  # criteria or fingerprints differ between the runs
    "cost",  # cost ratio current/baseline (log-ratio rule)
    "latency",  # p50 latency ratio current/baseline (log-ratio rule)
    "flaky",  # a case known to flip on the base branch
    "quarantined",  # a case excluded from gating until a date
    "improvement",  # a gated metric got better beyond noise
    "inconclusive",  # a gated metric or the comparison as a whole could not be decided
]

MetricVerdict = Literal["regressed", "pass", "inconclusive"]

TestName = Literal["mcnemar_exact", "sign_flip_exact", "sign_flip_mc", "stratified_exact", "stratified_mc"]
"""`mcnemar_exact`: binary metric, one repetition per side; `sign_flip_exact`: all 2^m sign vectors of the
m non-zero differences enumerated; `sign_flip_mc`: Monte Carlo sign flips, p = (1 + #{≤}) / (1 + S);
`stratified_exact` / `stratified_mc`: pass/fail repetitions exchanged within each case (the pass-rate test of
`gate.stratified`), enumerated exactly or drawn S times."""

CaseLabel = Literal["regressed", "improved", "flaky", "stable_pass", "stable_fail", "new", "removed", "changed"]


class Finding(BaseModel):
    """One thing the gate noticed: which case and metric, old and new values, and why it is or isn't noise."""

    model_config = ConfigDict(defer_build=True, extra="ignore")

    kind: FindingKind = Field(description="What was noticed (see `FindingKind`).")
    severity: Severity = Field(description="`blocking` fails the gate; `warning` and `info` are shown only.")
    message: str = Field(description="One or two sentences for a human: what happened and why it is or isn't noise.")
    metric: str | None = Field(default=None, description="The metric concerned, if any.")
    case_id: str | None = Field(default=None, description="The case concerned, if any.")
    eval_set_id: str | None = Field(default=None, description="The eval set of `case_id`, if any.")
    baseline_value: float | None = Field(default=None, description="The baseline's value (mean, ratio base, …).")
    current_value: float | None = Field(default=None, description="The current run's value.")
    effect: float | None = Field(
        default=None, description="Δ̂ = current − baseline for metrics; the ratio current/baseline for cost/latency."
    )
    ci_low: float | None = Field(default=None, description="Lower bound L of the effect (see MetricComparison).")
    ci_high: float | None = Field(default=None, description="Upper bound U of the effect.")
    p_value: float | None = Field(default=None, description="The p-value behind the finding (Holm-adjusted if so).")
    test: str | None = Field(
        default=None, description="The test used: a `TestName`, `log_ratio_bootstrap`, or None for rule checks."
    )


class MetricComparison(BaseModel):
    """One metric, baseline vs current, over the paired comparable cases.

    The interval [ci_low, ci_high] is a paired percentile bootstrap over cases: ci_low is the one-sided
    lower bound L at level 1 − α (the α-quantile of the resampled means) and ci_high the one-sided upper
    bound U at level 1 − α, so together they form a two-sided 1 − 2α interval (90% for α = 0.05).
    Values are in the metric's own units; for lower-is-better metrics the rules are applied to −Δ.
    """

    model_config = ConfigDict(defer_build=True, extra="ignore")

    metric: str = Field(description="Metric name (`case_pass` is the case status as a 0/1 score).")
    gated: bool = Field(description="True: may block; False: reported only (another metric is primary).")
    guard: bool = Field(
        default=False,
        description="A gated check that blocks on a significant worsening but needs no evidence to pass (the "
        "error rate): it never makes the outcome inconclusive.",
    )
    higher_is_better: bool = Field(default=True, description="Direction of improvement.")
    baseline_mean: float | None = Field(description="Mean over cases of b_i (each b_i a mean over repetitions).")
    current_mean: float | None = Field(description="Mean over cases of c_i.")
    delta: float | None = Field(description="Δ̂ = (1/n) Σ (c_i − b_i).")
    ci_low: float | None = Field(default=None, description="One-sided lower bound L of Δ at level 1 − α.")
    ci_high: float | None = Field(default=None, description="One-sided upper bound U of Δ at level 1 − α.")
    p_value: float | None = Field(default=None, description="One-sided p for H0: Δ ≥ 0 vs H1: Δ < 0.")
    p_adjusted: float | None = Field(default=None, description="Holm-adjusted p across the gated metrics.")
    test: TestName | None = Field(default=None, description="The test of record.")
    n_cases: int = Field(description="Number of paired comparable cases with a score on both sides.")
    n_clusters: int | None = Field(
        default=None,
        description="G when the analysis was clustered (some compared case carries a cluster label; unlabelled "
        "cases count as clusters of one): the sign-flip test flips one sign per cluster sum, the bootstrap "
        "resamples whole clusters and `se` is SE_cl. None: unclustered.",
    )
    se: float | None = Field(
        default=None,
        description="Standard error of Δ̂: s_d/√n, or SE_cl = (1/n)·√(G/(G−1)·Σ_g(Σ_{i∈g}(d_i − Δ̂))²) when "
        "clustered; None when it is undefined (n < 2, or G < 2).",
    )
    k_baseline: int = Field(description="Largest number of scored repetitions of one case in the baseline.")
    k_current: int = Field(description="Largest number of scored repetitions of one case in the current run.")
    delta_block: float = Field(description="δ_block: smallest drop worth blocking.")
    delta_ni: float = Field(description="δ_ni: non-inferiority margin.")
    verdict: MetricVerdict = Field(description="`regressed`, `pass` or `inconclusive` (docs/gate.md §6).")
    mde: float | None = Field(
        default=None,
        description="Minimum detectable effect of this run: (z_{1−α} + z_{1−β}) · s_d / √n at the policy's power.",
    )
    n_needed: int | None = Field(
        default=None, description="Cases needed to detect a drop of δ_block: ⌈((z_{1−α} + z_{1−β}) · s_d / δ_block)²⌉."
    )
    explanation: str = Field(default="", description="The arithmetic behind the verdict, step by step.")


class CaseDiagnostic(BaseModel):
    """One case across both runs: how often it passed on each side and its mean score per gated metric."""

    model_config = ConfigDict(defer_build=True, extra="ignore")

    eval_set_id: str
    case_id: str
    label: CaseLabel = Field(
        description="`regressed`/`improved`: pass rate moved by ≥ 0.5; `flaky`: mixed results on a side or a "
        "known flip rate; `stable_pass`/`stable_fail`; `new`/`removed`/`changed`: not compared."
    )
    baseline_passes: int | None = Field(default=None, description="Repetitions with status `passed` in the baseline.")
    baseline_k: int | None = Field(default=None, description="Repetitions of the case in the baseline.")
    current_passes: int | None = Field(default=None, description="Repetitions with status `passed` now.")
    current_k: int | None = Field(default=None, description="Repetitions of the case now.")
    baseline_scores: dict[str, float | None] = Field(
        default_factory=dict, description="{gated metric: b_i, the mean over the baseline's repetitions}."
    )
    current_scores: dict[str, float | None] = Field(default_factory=dict, description="{gated metric: c_i}.")
    likely_regressed_metrics: list[str] = Field(
        default_factory=list, description="Gated metrics with b_i − c_i ≥ 0.5 (worse direction) for this case."
    )
    flip_rate: float | None = Field(default=None, description="The case's flip rate on the base branch, if known.")
    quarantined: bool = Field(default=False, description="Excluded from gating by an active quarantine entry.")
    cluster: str | None = Field(default=None, description="The case's cluster label, if it has one.")
    fisher_p: float | None = Field(
        default=None,
        description="Per-case test (docs/gate.md §8): one-sided Fisher exact p for fewer passes now than in the "
        "baseline; None when the case was not tested (fewer than k = 5 runs on a side, or not compared).",
    )
    fisher_q: float | None = Field(
        default=None, description="Benjamini–Hochberg q of `fisher_p` across the tested cases of this verdict."
    )
    per_case_regressed: bool = Field(
        default=False,
        description="Regressed (per-case test): fisher_q below the verdict's `per_case_tests.q_threshold`. "
        "Diagnostic, never gating.",
    )


class PerCaseTests(BaseModel):
    """The per-case diagnostic tests of a verdict (docs/gate.md §8): shown, never gating.

    A compared case with at least `min_runs` repetitions on both sides gets a one-sided Fisher exact test of
    its baseline passes against its current passes; the p-values are Benjamini–Hochberg adjusted across the
    tested cases, and q < `q_threshold` labels the case "regressed (per-case test)". Fewer runs cannot reach
    significance on one case: with k = 3 even 3/3 → 0/3 gives p = 1/C(6,3) = 0.05.
    """

    model_config = ConfigDict(defer_build=True, extra="ignore")

    min_runs: int = Field(description="Repetitions a case needs on both sides to be tested (k ≥ 5).")
    q_threshold: float = Field(description="BH q below this flags a case (0.1).")
    tested: int = Field(description="Compared cases with enough runs on both sides, each tested once.")
    untested: int = Field(description="Compared cases with fewer than `min_runs` runs on a side: not tested.")
    flagged: int = Field(description="Tested cases with q < q_threshold.")
    k_baseline: int = Field(description="Fewest repetitions of a compared case in the baseline.")
    k_current: int = Field(description="Fewest repetitions of a compared case in the current run.")


class BaselineInfo(BaseModel):
    """Which run the current one was compared with, and how it was chosen (filled by the caller)."""

    model_config = ConfigDict(defer_build=True, extra="ignore")

    run_id: str
    commit: str | None = None
    branch: str | None = None
    created_at: datetime | None = None
    age_s: float | None = Field(default=None, description="Age of the baseline run when the gate ran, in seconds.")
    chosen_by: str = Field(
        default="", description="How it was chosen, e.g. `merge-base abc123 by exact SHA and fingerprint`."
    )
    notes: list[str] = Field(
        default_factory=list,
        description="What a reader should know about it: the agent changes between the runs (the treatment), "
        "cases re-scored under this run's criteria, cases run on demand on the base side.",
    )
    rescored_cases: int = Field(
        default=0, description="Baseline cases re-scored from their recorded outputs under this run's criteria."
    )
    on_demand_cases: int = Field(default=0, description="Cases whose baseline side was run on demand in this job.")


class NoBaseline(BaseModel):
    """Why a verdict has no baseline, as the caller that looked for one knows it (`gate.decide` is pure)."""

    model_config = ConfigDict(defer_build=True, extra="ignore")

    kind: Literal["no_base", "unavailable"] = Field(
        description="`no_base`: there is no base side at all (no merge-base, or a first-ever run whose base could "
        "not be run): the thresholds alone judge, as ADK does. `unavailable`: a base side exists but no baseline "
        "could be stored or run: the policy's `on_missing_baseline` decides (default: error, exit 3)."
    )
    reason: str = Field(description="What was looked for or tried, for the report.")


class NewlyBroken(BaseModel):
    """The newly-broken test (`gate.stratified.newly_broken_test`): cases that passed every repetition at the
    baseline and fail every one now, against what chance alone gives."""

    model_config = ConfigDict(defer_build=True, extra="ignore")

    cases: list[str] = Field(default_factory=list, description="`eval_set/case` of each newly broken case.")
    eligible: int = Field(description="Units with ≥ 3 repetitions per side whose passes could all have moved.")
    unit: Literal["case", "cluster"] = Field(
        default="case",
        description="What `eligible` and the test count: cases, or clusters when cases carry cluster labels (a "
        "cluster is newly broken when any of its cases is; q_g = min(1, Σ q_i) bounds its chance).",
    )
    expected: float = Field(description="Newly broken cases expected by chance: Σ q_i, q_i = 1/C(N_i, k_b,i).")
    p_value: float = Field(description="P(at least this many by chance), exact.")
    p_adjusted: float | None = Field(default=None, description="Adjusted across the gate's tests (weighted Holm).")
    alpha_share: float = Field(description="Share of α this test spends.")
    significant: bool = Field(description="p_adjusted < α: blocking.")


class VerdictCounts(BaseModel):
    """How many cases went where."""

    model_config = ConfigDict(defer_build=True, extra="ignore")

    compared: int = Field(default=0, description="Cases paired by id and content hash and compared.")
    added: int = Field(default=0, description="Cases only in the current run.")
    removed: int = Field(default=0, description="Cases only in the baseline.")
    changed: int = Field(default=0, description="Cases on both sides whose content hash differs.")
    errored: int = Field(default=0, description="Cases of the current run with at least one errored repetition.")
    baseline_errored: int = Field(
        default=0, description="Compared cases with at least one errored repetition in the baseline."
    )
    still_failing: int = Field(default=0, description="Cases missing their thresholds now and at the baseline.")
    quarantined: int = Field(default=0, description="Cases excluded from gating by an active quarantine.")


class TopUp(BaseModel):
    """What the top-up of an inconclusive verdict ran and what it changed (docs/gate.md §6, `_gating.top_up`)."""

    model_config = ConfigDict(defer_build=True, extra="ignore")

    cases: list[str] = Field(default_factory=list, description="The cases run again, as `eval_set/case_id`.")
    extra_repetitions: int = Field(default=0, description="Repetitions added to each of those cases, on each side run.")
    current_runs: int = Field(default=0, description="Agent runs added to the current side.")
    baseline_runs: int = Field(
        default=0, description="Agent runs added to the base side (0: the base side was not run)."
    )
    first_outcome: Outcome = Field(description="The outcome before the top-up (`inconclusive`).")
    second_outcome: Outcome | None = Field(
        default=None, description="What the gate decided with the added repetitions; None when nothing ran."
    )
    kept: Literal["second", "first"] = Field(
        default="first",
        description="`second`: the verdict after the top-up stands (it passed or stayed inconclusive); `first`: the "
        "verdict before it stands (nothing ran, or the second look would have blocked: a second look with no "
        "α-spending may narrow the interval, never make a regression).",
    )
    message: str = Field(default="", description="What happened, in one or two plain sentences.")


class Verdict(BaseModel):
    """The gate's decision with its findings, per-metric comparisons and per-case diagnostics."""

    model_config = ConfigDict(defer_build=True, extra="ignore")

    schema_version: int = VERDICT_SCHEMA_VERSION
    outcome: Outcome = Field(description="`pass`, `fail`, `inconclusive` or `error` (no comparison possible).")
    headline: str = Field(
        default="",
        description='What happened, in plain words, for the first line of every report (e.g. "3 cases that '
        'always passed now always fail: a, b, c."). Untrusted names inside: escape when rendering.',
    )
    reason: str = Field(description="One sentence with the deciding statistics.")
    current_run_id: str = Field(default="", description="The run that was judged.")
    findings: list[Finding] = Field(default_factory=list, description="Blocking findings first, then warnings, info.")
    metrics: list[MetricComparison] = Field(default_factory=list, description="One per compared metric.")
    cases: list[CaseDiagnostic] = Field(default_factory=list, description="One per case on either side.")
    baseline: BaselineInfo | None = Field(default=None, description="Filled by the caller who chose the baseline.")
    counts: VerdictCounts = Field(default_factory=VerdictCounts)
    newly_broken: NewlyBroken | None = Field(
        default=None, description="The newly-broken test; None when no case had k ≥ 3 on both sides or it is off."
    )
    per_case_tests: PerCaseTests | None = Field(
        default=None, description="The per-case Fisher + BH diagnostics; None when nothing was compared."
    )
    alpha: float = Field(default=0.05, description="Significance level used.")
    seed: int = Field(default=0, description="Seed of the resampling, so the numbers can be reproduced.")
    policy_digest: str = Field(default="", description="sha256 of the policy's canonical JSON.")
    top_up: TopUp | None = Field(
        default=None, description="The top-up of an inconclusive verdict, when one was considered (the caller's)."
    )

    @property
    def passed(self) -> bool:
        return self.outcome == "pass"

    def blocking(self) -> list[Finding]:
        """The findings that made the outcome `fail`."""
        return [f for f in self.findings if f.severity == "blocking"]


class RecordedVerdict(BaseModel):
    """A verdict as it was reached and reported for a run, with who reached it and when (`Store.recorded_verdicts`)."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    source: str
    recorded_at: datetime
    verdict: Verdict
