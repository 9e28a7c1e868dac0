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


InferenceFrame = Literal["suite", "population"]
"""`suite` (default): the question is the eval set the team wrote; its cases are fixed and only the agent's
repetitions are noise (docs/gate.md §6a). `population`: the cases are a sample of a task distribution and the
bounds resample cases (docs/gate.md §5), for benchmark-style suites."""


class SuiteBound(BaseModel):
    """The suite-level upper bound on a metric's drop D = (1/n) Σ (μ_B,i − μ_C,i) (`gate.suite`, docs/gate.md §6a):
    D̂ plus √(Σ m²) of a margin for the cases whose repetitions varied (z·√(Σ s²_i(1/k_B + 1/k_C))/n) and zero-failure
    margins for the cases that scored the same every time, each at α_pass."""

    model_config = ConfigDict(defer_build=True, extra="ignore")

    n_cases: int = Field(description="Compared cases n.")
    drop: float = Field(description="D̂ = (1/n) Σ (b̂_i − ĉ_i) on the oriented scale (positive: worse now).")
    upper: float = Field(description="The one-sided (1 − α_pass) upper bound on D: drop + √(spread² + top² + low²).")
    alpha_pass: float = Field(description="The bound's one-sided level α_pass (each margin's).")
    varied_cases: int = Field(default=0, description="Cases whose repetitions did not all score the same.")
    variance_sum: float = Field(default=0.0, description="Σ over varied cases of s²_i·(1/k_B,i + 1/k_C,i).")
    spread: float = Field(default=0.0, description="z_{1−a}·√(variance_sum)/n: the varied cases' part.")
    top_cases: int = Field(default=0, description="Cases that scored the best value (1) in every repetition.")
    top_runs: int = Field(default=0, description="Their current repetitions N⁺_C, none of which fell short.")
    top: float = Field(default=0.0, description="(n⁺/n)·ZF(N⁺_C, a): what they may have dropped unseen.")
    low_cases: int = Field(default=0, description="Cases that scored the same value below the top every time.")
    low_baseline_runs: int = Field(default=0, description="Their baseline repetitions N⁻_B.")
    low_current_runs: int = Field(default=0, description="Their current repetitions N⁻_C.")
    low_can_drop: bool = Field(
        default=False, description="Some of them scored above the bottom (0), so their current side could be worse."
    )
    low: float = Field(default=0.0, description="What their baseline may have been better (and current worse) unseen.")


class MetricComparison(BaseModel):
    """One metric, baseline vs current, over the paired comparable cases.

    [ci_low, ci_high] are one-sided bounds of Δ at level 1 − α_pass each (a two-sided 1 − 2α_pass interval, 90%
    at the default α_pass = 0.05). In the suite frame (default) ci_low = −(the suite bound's upper bound on the
    drop) (`bound`) and ci_high mirrors it around Δ̂; in the population frame both come from a paired percentile
    bootstrap over cases. The pass rule is ci_low ≥ −δ_ni. Values are in the metric's own units; for
    lower-is-better metrics the rules are applied to −Δ.
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
    frame: InferenceFrame = Field(
        default="population", description="How ci_low and ci_high were made (`InferenceFrame`)."
    )
    bound: SuiteBound | None = Field(default=None, description="The suite frame's bound on the drop, part by part.")
    level: float | None = Field(
        default=None,
        description="The nominal significance level of the look this metric was judged at (docs/gate.md §6: the "
        "looks share α); the test's p_adjusted is compared with it.",
    )
    p_first: float | None = Field(
        default=None, description="At the second look: the first look's p-value of this metric's test."
    )
    p_top_up: float | None = Field(
        default=None,
        description="At the second look: the p-value of the same test on the top-up's own repetitions alone; "
        "`p_value` is then the inverse-normal combination of p_first and p_top_up.",
    )
    mde: float | None = Field(
        default=None,
        description="Minimum detectable effect of this run: (z_{1−α} + z_{1−β}) · s_d / √n at the policy's power.",
    )
    n_needed: int | None = Field(
        default=None,
        description="Population frame: cases needed to detect a drop of δ_block: ⌈((z_{1−α} + z_{1−β}) · s_d / "
        "δ_block)²⌉.",
    )
    repetitions_needed: int | None = Field(
        default=None,
        description="Suite frame, inconclusive: the fewest repetitions per case on each side with which this run's "
        "data (means kept, noise shrunk) would show non-inferiority; None when no number up to 50 would.",
    )
    advice: str = Field(
        default="",
        description="Inconclusive: what would settle it, in the frame the gate used (repetitions for the suite, cases "
        "for a population); empty otherwise.",
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
    """What the top-up of an undecided verdict ran (docs/gate.md §6, `gate.sequential`, `_gating.top_up`): the
    suspect cases confirmed with fresh repetitions on both sides, and the even repetitions added to every compared
    case for the aggregate. The verdict after it is the second look, judged at the second look's share of α."""

    model_config = ConfigDict(defer_build=True, extra="ignore")

    cases: list[str] = Field(
        default_factory=list, description="The cases given even repetitions, as `eval_set/case_id`."
    )
    extra_repetitions: int = Field(default=0, description="Repetitions added to each of those cases.")
    head_only: bool = Field(
        default=False,
        description="The even repetitions ran on the current side only (every baseline repetition had passed, so "
        "only the current side's failures could show a drop).",
    )
    confirmed_cases: list[str] = Field(
        default_factory=list, description="The suspect cases re-run on both sides to confirm they broke."
    )
    confirm_repetitions: int = Field(default=0, description="Fresh repetitions of each suspect case on each side.")
    current_runs: int = Field(default=0, description="Agent runs added to the current side.")
    baseline_runs: int = Field(
        default=0, description="Agent runs added to the base side (0: the base side was not run)."
    )
    first_outcome: Outcome = Field(description="The outcome at the first look.")
    second_outcome: Outcome | None = Field(
        default=None, description="What the gate decided at the second look; None when nothing ran."
    )
    message: str = Field(default="", description="What happened, in one or two plain sentences.")


class Look(BaseModel):
    """Which look decided the verdict and at what level (docs/gate.md §6: the looks share α, Bonferroni split)."""

    model_config = ConfigDict(defer_build=True, extra="ignore")

    index: int = Field(description="1: the run as it ran; 2: after the top-up.")
    planned: int = Field(description="Looks planned before the first: 2 where the agent can run again here, else 1.")
    alpha: float = Field(description="The false-alarm rate shared by every look (the policy's α).")
    alpha_first: float = Field(description="The first look's level: α when one look is planned, else its share.")
    alpha_second: float = Field(description="The second look's level: α − alpha_first (0 when one look is planned).")
    alpha_pass: float = Field(default=0.05, description="The chance of passing a change whose true drop is δ_ni.")
    alpha_pass_first: float = Field(
        default=0.05, description="The first look's share of alpha_pass (0 when the first look could not pass)."
    )
    alpha_pass_second: float = Field(default=0.0, description="The second look's share of alpha_pass.")

    @property
    def level(self) -> float:
        """This look's nominal level for the tests that block."""
        return self.alpha_first if self.index == 1 else self.alpha_second

    @property
    def pass_level(self) -> float:
        """This look's one-sided level for the bound a pass needs."""
        return self.alpha_pass_first if self.index == 1 else self.alpha_pass_second


class Confirmation(BaseModel):
    """The suspect cases (every baseline repetition passed, every current one failed at the first look) re-run with
    fresh repetitions on both sides, tested on those repetitions alone (docs/gate.md §6): a case that breaks again is
    newly broken; a flaky one that recovers is not blamed."""

    model_config = ConfigDict(defer_build=True, extra="ignore")

    cases: list[str] = Field(description="The suspects, as `eval_set/case_id`.")
    repetitions: int = Field(description="Fresh repetitions of each on each side.")
    still_broken: list[str] = Field(
        default_factory=list,
        description="Suspects whose fresh baseline repetitions all passed and current ones all failed.",
    )
    recovered: list[str] = Field(default_factory=list, description="Suspects that passed at least once now.")
    p_value: float = Field(description="The newly-broken count test on the fresh repetitions (exact).")
    p_adjusted: float | None = Field(default=None, description="Adjusted across the second look's tests (Holm).")
    significant: bool = Field(description="p_adjusted < the second look's level: blocking.")


class AgentRuns(BaseModel):
    """What a gated pull request cost in agent runs (filled by the caller that ran them)."""

    model_config = ConfigDict(defer_build=True, extra="ignore")

    current: int = Field(description="Agent runs of the run under review (cases × repetitions).")
    base_side: int = Field(default=0, description="Agent runs on the base side, run on demand in this job.")
    stored_baseline: int = Field(default=0, description="Baseline repetitions taken from the history (not run now).")
    top_up_current: int = Field(default=0, description="Agent runs the top-up added on the current side.")
    top_up_baseline: int = Field(default=0, description="Agent runs the top-up added on the base side.")

    @property
    def this_job(self) -> int:
        """Agent runs made in this job: the run, the base side and the top-up."""
        return self.current + self.base_side + self.top_up_current + self.top_up_baseline

    @property
    def ratio(self) -> float | None:
        """this_job ÷ the run's own agent runs: what gating cost, in runs of the suite."""
        return self.this_job / self.current if self.current else None


class Verdict(BaseModel):
    """The gate's decision with its findings, per-metric comparisons and per-case diagnostics."""

    model_config = ConfigDict(defer_build=True, extra="ignore")

    schema_version: int = VERDICT_SCHEMA_VERSION
    outcome: Outcome = Field(description="`pass`, `fail`, `inconclusive` or `error` (no comparison possible).")
    headline: str = Field(
        default="",
        description='What happened, in plain words, for the first line of every report (e.g. "3 cases passed 3 of '
        '3, now 0 of 3: a, b, c."). Untrusted names inside: escape when rendering.',
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
    look: Look | None = Field(default=None, description="Which look decided, at what level (docs/gate.md §6).")
    confirmation: Confirmation | None = Field(
        default=None, description="The confirmation of suspect cases at the second look, when they were re-run."
    )
    agent_runs: AgentRuns | None = Field(default=None, description="Agent runs this verdict cost (the caller's).")

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
