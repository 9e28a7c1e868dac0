"""The gate's verdict (the judged run against its baseline) as the data its reports show, computed once.

`VerdictView.build` reads a `Verdict` and the two runs and returns what every rendering of it needs: what the
judged run is called (`subject_label`: "this PR", "this commit", or "run B" for `evalward compare`), the
baseline's facts, the metric rows as plain text, the clustered analysis, the findings by severity, the
per-case tests, what inconclusive metrics would need, the flagged cases with their evidence (docs/gate.md §6
and §8), the other cases and findings, and the run ids to reproduce it. `verdict_markdown.py` (the PR comment
and job summary) and `verdict_terminal.py` render it; the HTML page's template uses the text functions here.

Numbers and labels are plain text in the formats below, so every rendering agrees. The interval column is
labelled from the look's share of α_pass (`bounds_alpha`): the gate's [L, U] are one-sided bounds at 1 − α_pass
each, so together they are a two-sided 1 − 2α_pass interval (`90% interval` at α_pass = 0.05). What the second
look ran and what gating cost are `report.second_look`'s.

Nothing here escapes: untrusted strings (case ids, metric names, messages that quote them, agent output) are
kept raw, and each renderer escapes them for its medium through `escape.py`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import comb

from evalward.model import CaseResult, RunContext, RunResult
from evalward.model.verdict import CaseDiagnostic, Finding, MetricComparison, Outcome, PerCaseTests, Verdict
from evalward.report import formatting as fmt
from evalward.report.case_evidence import TurnEvidence, case_results, pick_repetitions, resource_deltas, turn_evidence
from evalward.report.second_look import agent_runs_text, top_up_text

DELTA_FORMAT = "{:+.3f}"
"""Δ̂ and per-case differences: signed, three decimals (`-0.167`)."""
RELATIVE_FORMAT = "{:+.1%}"
"""Δ̂ relative to the baseline mean (`+5.6%`), as pydantic-evals prints `0.900 → 0.950 (+0.05 / +5.6%)`."""
P_FORMAT = "{:.4g}"
"""p-values: four significant digits, as the gate's explanations print them."""
MAX_FINDINGS = 20
"""Bullets per finding group (blocking, warnings, info) before `… and N more`."""
MAX_LISTED_CASES = 50
"""Case ids per list in the "other cases" section."""
MAX_REASON_CHARS = 600
MAX_MESSAGE_CHARS = 500

OUTCOME_MARKS: dict[Outcome, str] = {"pass": "✅", "fail": "❌", "inconclusive": "⚠️", "error": "💥"}
OUTCOME_WORDS: dict[Outcome, str] = {
    "pass": "passed",
    "fail": "failed",
    "inconclusive": "inconclusive",
    "error": "could not compare",
}
MAX_HEADLINE_CHARS = 400
METRIC_VERDICTS = {"regressed": "❌ regressed", "pass": "✅ pass", "inconclusive": "⚠️ inconclusive"}
TEST_LABELS = {
    "mcnemar_exact": "exact McNemar",
    "sign_flip_exact": "exact sign-flip",
    "sign_flip_mc": "Monte Carlo sign-flip",
    "stratified_exact": "exact stratified permutation",
    "stratified_mc": "Monte Carlo stratified permutation",
    "newly_broken_exact": "exact newly-broken count",
    "log_ratio_bootstrap": "log-ratio bootstrap",
    "fisher_exact": "one-sided Fisher exact, Benjamini–Hochberg q",
}
NO_BASELINE_TEXT = (
    "no baseline: there was no run to compare with, stored or run on demand, so only the absolute checks "
    "(errors, thresholds, must-pass cases) ran and no metric could be shown to regress or to hold"
)

COMPARED_RUN_LABEL = "run B"
"""What `evalward compare A B` calls its second run, the one compared with A."""

# Why a case gets a section, most urgent first (its rank is the smallest reason it has).
_RANK_MUST_PASS, _RANK_ERROR, _RANK_REGRESSED, _RANK_THRESHOLD = range(4)


# ------------------------------------------------------------------------------------------ numbers


def subject_label(context: RunContext) -> str:
    """What every report calls the judged run, from where it ran: "this PR" for a pull request's run, "this
    commit" for any other run of a commit (a push to the base branch, a merge queue, a scheduled run), "this run"
    when it names no commit. `evalward compare` says `COMPARED_RUN_LABEL` instead."""
    if context.pr_number is not None:
        return "this PR"
    if context.commit:
        return "this commit"
    return "this run"


def capitalised(label: str) -> str:
    """`This PR` for `this PR`, `Run B` for `run B`: a label that starts a sentence."""
    return label[:1].upper() + label[1:]


def bounds_alpha(verdict: Verdict) -> float:
    """The one-sided level of the verdict's [L, U]: its look's share of α_pass (α_pass itself when that look could
    not pass, docs/gate.md §6); a verdict that records no look: its α."""
    look = verdict.look
    if look is None:
        return verdict.alpha
    return look.pass_level or look.alpha_pass


def interval_label(alpha: float) -> str:
    """`90% interval` for α = 0.05: [L, U] are one-sided bounds at 1 − α each, a two-sided 1 − 2α interval."""
    level = round((1 - 2 * alpha) * 100, 1)
    return f"{level:g}% interval"


def signed(value: float | None) -> str:
    return fmt.MISSING if value is None else DELTA_FORMAT.format(value)


def delta_text(metric: MetricComparison) -> str:
    """`+0.050 / +5.6%`: Δ̂ and Δ̂ / baseline mean (the relative part only when the baseline mean is not 0)."""
    if metric.delta is None:
        return fmt.MISSING
    text = signed(metric.delta)
    if metric.baseline_mean:
        text += " / " + RELATIVE_FORMAT.format(metric.delta / metric.baseline_mean)
    return text


def bounds_text(low: float | None, high: float | None) -> str:
    """`[-0.300, -0.033]`, or `—` when the bootstrap did not run."""
    if low is None or high is None:
        return fmt.MISSING
    return f"[{signed(low)}, {signed(high)}]"


def p_text(metric: MetricComparison) -> str:
    """`0.0156 (exact McNemar)`; `0.0156, Holm 0.0312 (…)` when the adjusted p differs."""
    if metric.p_value is None:
        return fmt.MISSING
    text = P_FORMAT.format(metric.p_value)
    if metric.p_adjusted is not None and metric.p_adjusted != metric.p_value:
        text += f", Holm {P_FORMAT.format(metric.p_adjusted)}"
    if metric.test is not None:
        clustered = f" over {metric.n_clusters} clusters" if metric.n_clusters is not None else ""
        text += f" ({TEST_LABELS.get(metric.test, metric.test)}{clustered})"
    return text


def verdict_text(metric: MetricComparison) -> str:
    text = METRIC_VERDICTS[metric.verdict]
    return text if metric.gated else text + " (reported only)"


def age_text(seconds: float) -> str:
    """`45 s`, `12 min`, `3.2 h`, `4.5 days` old."""
    seconds = abs(seconds)
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def passes_text(passes: int | None, k: int | None) -> str:
    return fmt.MISSING if passes is None or k is None else f"{passes}/{k}"


def sample_text(metric: MetricComparison) -> str:
    """`n=12, k=3/3`, or `n=12, G=4 clusters, k=3/3` when the analysis was clustered."""
    clusters = f", G={metric.n_clusters} clusters" if metric.n_clusters is not None else ""
    return f"n={metric.n_cases}{clusters}, k={metric.k_baseline}/{metric.k_current}"


CLUSTERED_TEXT = (
    "cases sharing a cluster label are analysed as one unit: one sign flip per cluster, whole clusters "
    "resampled by the bootstrap, and the clustered standard error SE_cl; unlabelled cases are clusters of one"
)


def clustered_metrics(verdict: Verdict) -> list[MetricComparison]:
    """The metrics whose comparison was clustered (each names its own G)."""
    return [m for m in verdict.metrics if m.n_clusters is not None]


def cluster_facts(metric: MetricComparison) -> str:
    """`G = 4 clusters over n = 12 cases, SE_cl = 0.123` (plain text; the metric name is put in by the caller)."""
    se = f", SE_cl = {fmt.score(metric.se)}" if metric.se is not None else ", SE_cl undefined (fewer than 2 clusters)"
    return f"G = {metric.n_clusters} clusters over n = {metric.n_cases} cases{se}"


def per_case_flagged(verdict: Verdict) -> list[CaseDiagnostic]:
    """Cases the per-case tests flagged, smallest q first (stable: verdict order among ties)."""
    flagged = [d for d in verdict.cases if d.per_case_regressed]
    return sorted(flagged, key=lambda d: d.fisher_q if d.fisher_q is not None else 1.0)


def per_case_heading(tests: PerCaseTests, subject: str) -> str:
    """What the per-case tests are, or why none ran (plain text); `subject` names the judged run."""
    if tests.tested == 0:
        kb, kc = tests.k_baseline, tests.k_current
        best = comb(kb + kc, kb)
        return (
            f"not run: a case needs k ≥ {tests.min_runs} runs on both sides to be tested on its own (here k = "
            f"{kb}/{kc}, baseline/{subject}; even {kb}/{kb} → 0/{kc} passes only reaches one-sided Fisher "
            f"p = 1/C({kb + kc},{kb}) = {P_FORMAT.format(1 / best)})"
        )
    untested = (
        f"; {plural(tests.untested, 'compared case')} with fewer than {tests.min_runs} runs on a side "
        f"{'was' if tests.untested == 1 else 'were'} not tested"
        if tests.untested
        else ""
    )
    found = f"{tests.flagged} regressed (per-case test)" if tests.flagged else "none regressed"
    return (
        f"diagnostic, not gating: one-sided Fisher exact test per case with ≥ {tests.min_runs} runs on both sides, "
        f"Benjamini–Hochberg q < {tests.q_threshold:g} across the {plural(tests.tested, 'tested case')}{untested}; "
        f"{found}"
    )


def per_case_numbers(d: CaseDiagnostic) -> str:
    """`5/5 → 0/5, p = 0.003968, q = 0.01190` (plain text; the case label is put in by the caller)."""
    return (
        f"{passes_text(d.baseline_passes, d.baseline_k)} → {passes_text(d.current_passes, d.current_k)}, "
        f"p = {P_FORMAT.format(d.fisher_p)}, q = {P_FORMAT.format(d.fisher_q)}"
    )


def inconclusive_text(m: MetricComparison) -> str:
    """What an inconclusive metric would need (plain text; the metric name is put in by the caller): the gate's own
    advice, in the frame it used; older verdicts carry only the sample-size figures."""
    if m.advice:
        mde = f"this run can only detect drops of about {fmt.score(m.mde)} or more; " if m.mde is not None else ""
        return mde + m.advice
    parts = []
    if m.mde is not None:
        parts.append(f"this run can only detect drops of about {fmt.score(m.mde)} or more (minimum detectable effect)")
    if m.n_needed is not None:
        parts.append(
            f"≈{m.n_needed:,} paired cases would detect a {m.delta_block:g} drop (this run compared {m.n_cases})"
        )
    return "; ".join(parts) or "no estimate of the sample size needed (too few cases)"


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


# ------------------------------------------------------------------------- what the sections show


@dataclass
class FlaggedCase:
    """A case that gets its own section: why, its diagnostic and every finding that names it."""

    eval_set_id: str
    case_id: str
    rank: int
    reasons: list[str] = field(default_factory=list)
    diagnostic: CaseDiagnostic | None = None
    findings: list[Finding] = field(default_factory=list)

    @property
    def label(self) -> str:
        """`set/case` (unescaped), as the gate's messages name cases."""
        return f"{self.eval_set_id}/{self.case_id}"

    @property
    def errored(self) -> bool:
        """Its most urgent reason is an error (a failed must-pass case outranks one)."""
        return self.rank == _RANK_ERROR

    def passes(self, current: RunResult, baseline: RunResult | None) -> tuple[str, str]:
        """(`3/3`, `0/3`): passed repetitions over repetitions, baseline and now."""
        d = self.diagnostic
        if d is not None and (d.baseline_k is not None or d.current_k is not None):
            return passes_text(d.baseline_passes, d.baseline_k), passes_text(d.current_passes, d.current_k)
        before = case_results(baseline, self.eval_set_id, self.case_id) if baseline is not None else []
        after = case_results(current, self.eval_set_id, self.case_id)
        return _count(before), _count(after)


def _count(results: list[CaseResult]) -> str:
    if not results:
        return fmt.MISSING
    return f"{sum(r.status == 'passed' for r in results)}/{len(results)}"


def _same_case(finding: Finding, eval_set_id: str, case_id: str) -> bool:
    return finding.case_id == case_id and finding.eval_set_id in (None, eval_set_id)


def flagged_cases(verdict: Verdict) -> list[FlaggedCase]:
    """Cases that get a section: must-pass failures, errors, regressed or likely regressed cases and
    threshold misses (blocking or warning findings), most urgent first, then in verdict order."""
    flagged: dict[tuple[str, str], FlaggedCase] = {}

    def flag(eval_set_id: str, case_id: str, rank: int, reason: str) -> None:
        entry = flagged.setdefault((eval_set_id, case_id), FlaggedCase(eval_set_id, case_id, rank))
        entry.rank = min(entry.rank, rank)
        if reason not in entry.reasons:
            entry.reasons.append(reason)

    for finding in verdict.findings:
        if finding.case_id is None or finding.severity == "info":
            continue
        set_id = finding.eval_set_id or ""
        if finding.kind == "must_pass":
            flag(set_id, finding.case_id, _RANK_MUST_PASS, "must-pass case failed")
        elif finding.kind == "error":
            flag(set_id, finding.case_id, _RANK_ERROR, "errored")
        elif finding.kind == "threshold":
            reason = f"below threshold on {finding.metric}" if finding.metric else "no metric could pass it"
            flag(set_id, finding.case_id, _RANK_THRESHOLD, reason)
    for diagnostic in verdict.cases:
        if diagnostic.label == "regressed":
            flag(diagnostic.eval_set_id, diagnostic.case_id, _RANK_REGRESSED, "regressed")
        if diagnostic.likely_regressed_metrics:
            names = ", ".join(diagnostic.likely_regressed_metrics)
            flag(diagnostic.eval_set_id, diagnostic.case_id, _RANK_REGRESSED, f"likely regressed on {names}")
        if diagnostic.per_case_regressed:
            q = P_FORMAT.format(diagnostic.fisher_q)
            flag(diagnostic.eval_set_id, diagnostic.case_id, _RANK_REGRESSED, f"regressed (per-case test, q = {q})")
    for entry in flagged.values():
        entry.diagnostic = next(
            (d for d in verdict.cases if (d.eval_set_id, d.case_id) == (entry.eval_set_id, entry.case_id)), None
        )
        entry.findings = [f for f in verdict.findings if _same_case(f, entry.eval_set_id, entry.case_id)]
    return sorted(flagged.values(), key=lambda e: e.rank)  # sorted() is stable: verdict order within a rank


def _other_lists(verdict: Verdict, shown: set[tuple[str, str]]) -> list[tuple[str, list[str]]]:
    """(heading, [set/case labels]) for the improved and flaky cases outside the flagged sections, and for every
    case the counts line counts: quarantined, added, removed and changed cases are listed whole, sectioned or not,
    so a list never disagrees with its count. Without a baseline no case is added (the gate labels every case
    `new`, and `counts.added` is 0): none is listed as added."""
    by_label: dict[str, list[str]] = {}
    for d in verdict.cases:
        label = f"{d.eval_set_id}/{d.case_id}"
        if d.quarantined:
            by_label.setdefault("quarantined", []).append(label)
        if d.label == "new" and not verdict.counts.added:
            continue
        counted = d.label in ("new", "removed", "changed")
        if counted or (d.label in ("improved", "flaky") and (d.eval_set_id, d.case_id) not in shown):
            by_label.setdefault(d.label, []).append(label)
    headings = [
        ("improved", "Improved"),
        ("flaky", "Flaky"),
        ("quarantined", "Quarantined (reported, not gated)"),
        ("new", "Added (not compared)"),
        ("removed", "Removed (not compared)"),
        ("changed", "Changed content (not compared)"),
    ]
    return [(title, by_label[key]) for key, title in headings if by_label.get(key)]


def case_label_text(diagnostic: CaseDiagnostic, verdict: Verdict) -> str:
    """The case's label as the reports print it: the gate's label, except a case only in this run when there was
    no baseline to add it to (`counts.added` is 0), which is just not compared."""
    if diagnostic.label == "new" and not verdict.counts.added:
        return "not compared (no baseline)"
    return diagnostic.label


_LISTED_KINDS = frozenset({"added_case", "removed_case", "changed_case", "flaky", "quarantined"})
"""Finding kinds whose case already appears in one of `_other_lists`' lists."""


def _other_findings(verdict: Verdict, shown: set[tuple[str, str]]) -> list[Finding]:
    """Informational findings not already shown in a case section or named in a case list."""
    listed = {(d.eval_set_id, d.case_id) for d in verdict.cases}

    def covered(f: Finding) -> bool:
        if f.case_id is None:
            return False
        key = (f.eval_set_id or "", f.case_id)
        return key in shown or (f.kind in _LISTED_KINDS and key in listed)

    return [f for f in verdict.findings if f.severity == "info" and not covered(f)]


@dataclass(frozen=True)
class BaselineFacts:
    """What every renderer says about the baseline (raw, unescaped: each renderer escapes for its medium)."""

    run_id: str
    commit: str | None
    branch: str | None
    age: str | None
    chosen_by: str


MAX_TOP_UP_CHARS = 1_500
"""The top-up line, case names included, before it is cut."""


def baseline_facts(verdict: Verdict, baseline: RunResult | None) -> BaselineFacts | None:
    """The baseline as recorded in the verdict, else as read from the baseline run; None when there is none."""
    info = verdict.baseline
    if info is not None:
        age = f"{age_text(info.age_s)} old" if info.age_s is not None else None
        return BaselineFacts(info.run_id, info.commit, info.branch, age, info.chosen_by)
    if baseline is not None:
        return BaselineFacts(baseline.run_id, baseline.context.commit, baseline.context.branch, None, "")
    return None


# ------------------------------------------------------------------------------------- the view


@dataclass(frozen=True)
class MetricRow:
    """One compared metric in the summary table: its comparison and each column as plain text (the metric
    name stays in `comparison.metric`, unescaped)."""

    comparison: MetricComparison
    sample: str
    baseline_mean: str
    current_mean: str
    delta: str
    interval: str
    p: str
    verdict: str


@dataclass(frozen=True)
class ScoreChange:
    """One gated metric of a flagged case: baseline b_i, the judged run's c_i and c_i − b_i, as plain text."""

    metric: str
    baseline: str
    current: str
    change: str


@dataclass(frozen=True)
class CaseSection:
    """What a flagged case's section shows: the pass counts over repetitions, the per-case test when one
    ran, b_i → c_i per gated metric, and the evidence of the judged run's first repetition that did not pass
    (against the baseline's first passing one): its resources against the baseline's and the turns that
    differ."""

    case: FlaggedCase
    passes_before: str
    passes_now: str
    per_case_test: str | None
    """`one-sided Fisher exact p = …, Benjamini–Hochberg q = … → <outcome>`, when the test ran."""
    scores: list[ScoreChange]
    repetition: CaseResult | None
    """None when the judged run has no result for the case."""
    baseline_repetition: CaseResult | None
    resources: list[str]
    turns: list[TurnEvidence]
    """Only the turns that show something (`TurnEvidence.interesting`)."""

    @classmethod
    def build(cls, case: FlaggedCase, current: RunResult, baseline: RunResult | None) -> CaseSection:
        """`case`'s section, its evidence read from `current` and `baseline`."""
        before, now = case.passes(current, baseline)
        d = case.diagnostic
        per_case_test = None
        if d is not None and d.fisher_p is not None:
            outcome = "regressed (per-case test)" if d.per_case_regressed else "not significant on its own"
            per_case_test = (
                f"one-sided Fisher exact p = {P_FORMAT.format(d.fisher_p)}, Benjamini–Hochberg "
                f"q = {P_FORMAT.format(d.fisher_q)} → {outcome}"
            )
        scores = []
        if d is not None:
            for name in dict.fromkeys([*d.baseline_scores, *d.current_scores]):
                b, c = d.baseline_scores.get(name), d.current_scores.get(name)
                change = signed(c - b) if b is not None and c is not None else fmt.MISSING
                scores.append(ScoreChange(name, fmt.score(b), fmt.score(c), change))
        cur, base = pick_repetitions(current, baseline, case.eval_set_id, case.case_id)
        resources = resource_deltas(cur, base) if cur is not None else []
        turns = [t for t in turn_evidence(cur, base) if t.interesting] if cur is not None else []
        return cls(case, before, now, per_case_test, scores, cur, base, resources, turns)


@dataclass(frozen=True)
class VerdictView:
    """Everything a rendering of the verdict shows, in the order of docs/github.md §14 (see the module
    docstring). Strings from the runs and the verdict are raw: the renderer escapes them."""

    verdict: Verdict
    """For the fields shown as they are: outcome, headline, reason, counts, seed, α, policy digest."""
    subject: str
    """What the judged run is called in column headers and sentences (`subject_label`): "this PR"."""
    baseline: BaselineFacts | None
    baseline_notes: list[str]
    top_up: str | None
    """`top_up_text`: what the top-up ran and the second look decided."""
    agent_runs: str | None
    """`agent_runs_text`: what gating cost in agent runs."""
    interval_label: str
    metrics: list[MetricRow]
    clustered: list[tuple[str, str]]
    """(metric name, `cluster_facts`) per clustered metric."""
    blocking: list[Finding]
    warnings: list[Finding]
    per_case_heading: str | None
    """None when the per-case tests are not in the verdict."""
    per_case_regressions: list[tuple[str, str]]
    """(`set/case`, `per_case_numbers`) per case the per-case tests flagged, smallest q first (none when the
    per-case tests are not in the verdict)."""
    inconclusive: list[tuple[str, str]]
    """(metric name, `inconclusive_text`) per inconclusive metric."""
    cases: list[CaseSection]
    """The flagged cases, most urgent first."""
    explained: list[tuple[str, str]]
    """(metric name, the gate's explanation) per metric that has one."""
    other_lists: list[tuple[str, list[str]]]
    """(heading, [`set/case`]) for the cases outside the flagged sections."""
    other_findings: list[Finding]
    """Informational findings not already shown in a case section or named in a case list."""
    current_run_id: str
    baseline_run_id: str | None

    @classmethod
    def build(
        cls, current: RunResult, verdict: Verdict, baseline: RunResult | None = None, *, subject: str | None = None
    ) -> VerdictView:
        """The view of `verdict`; `current` and `baseline` supply the evidence of flagged cases (trajectories,
        responses, usage). `subject` names the judged run; by default `subject_label` of its context."""
        flagged = flagged_cases(verdict)
        shown = {(c.eval_set_id, c.case_id) for c in flagged}
        tests = verdict.per_case_tests
        label = subject or subject_label(current.context)
        return cls(
            verdict=verdict,
            subject=label,
            baseline=baseline_facts(verdict, baseline),
            baseline_notes=verdict.baseline.notes if verdict.baseline is not None else [],
            top_up=top_up_text(verdict),
            interval_label=interval_label(bounds_alpha(verdict)),
            agent_runs=agent_runs_text(verdict),
            metrics=[
                MetricRow(
                    comparison=m,
                    sample=sample_text(m),
                    baseline_mean=fmt.score(m.baseline_mean),
                    current_mean=fmt.score(m.current_mean),
                    delta=delta_text(m),
                    interval=bounds_text(m.ci_low, m.ci_high),
                    p=p_text(m),
                    verdict=verdict_text(m),
                )
                for m in verdict.metrics
            ],
            clustered=[(m.metric, cluster_facts(m)) for m in clustered_metrics(verdict)],
            blocking=[f for f in verdict.findings if f.severity == "blocking"],
            warnings=[f for f in verdict.findings if f.severity == "warning"],
            per_case_heading=per_case_heading(tests, label) if tests is not None else None,
            per_case_regressions=[
                (f"{d.eval_set_id}/{d.case_id}", per_case_numbers(d)) for d in per_case_flagged(verdict)
            ]
            if tests is not None
            else [],
            inconclusive=[(m.metric, inconclusive_text(m)) for m in verdict.metrics if m.verdict == "inconclusive"],
            cases=[CaseSection.build(case, current, baseline) for case in flagged],
            explained=[(m.metric, m.explanation) for m in verdict.metrics if m.explanation],
            other_lists=_other_lists(verdict, shown),
            other_findings=_other_findings(verdict, shown),
            current_run_id=verdict.current_run_id or current.run_id,
            baseline_run_id=verdict.baseline.run_id
            if verdict.baseline is not None
            else baseline.run_id
            if baseline
            else None,
        )
