"""The gate's verdict (this PR's run against its baseline) as the PR comment body and on the terminal.

Layout, by priority (docs/github.md §14, docs/gate.md §6 and §8):
1. head, always kept: first line, the outcome mark (✅ pass / ❌ fail / ⚠️ inconclusive / 💥 error) with the
   gate's headline — what happened in plain words — then the outcome word and the gate's reason; the
   baseline (run, commit, branch, age, how it was chosen) or what having none means; the summary table
   (metric | baseline | this PR | Δ | interval | p (test) | verdict); when the analysis was clustered,
   which metrics and G; blocking findings, then warnings; the case counts; the per-case tests (Fisher +
   Benjamini–Hochberg, diagnostic) or why none ran (k < 5); for inconclusive metrics the minimum
   detectable effect and the cases needed;
2. one collapsed `<details>` section per flagged case — must-pass failures, then errors, then regressed,
   likely regressed or per-case-test regressed cases, then threshold misses — with the pass counts over
   repetitions, the per-case test when one ran, b_i → c_i per
   gated metric, and, from the first repetition of this PR that did not pass (against the baseline's
   first passing repetition), the first divergence, the tool-call diff with argument differences, the
   step diff, the responses and the call/token/cost/latency deltas;
3. the arithmetic behind each metric's verdict (the gate's explanation);
4. everything else in one collapsed section: improved, flaky, quarantined, added, removed and changed
   cases and the remaining informational findings.
Sections of 2–4 are whole: when the next one would push the body past `max_chars`, it and all after it
are cut and a note says how many were cut and where the full report is. A footer with the seed and the
policy digest closes the body, so the numbers can be reproduced.

The interval column is labelled from `verdict.alpha`: the gate's [L, U] are one-sided bounds at 1 − α
each, so together they are a two-sided 1 − 2α interval (`90% interval` at α = 0.05).

Every untrusted string (case ids, metric names, messages that quote them, agent output) goes through
`escape.py`; nothing here escapes by itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import comb
from typing import TYPE_CHECKING, Literal

from evalward.model import CaseResult, InvocationResult, MetricResult, RunResult
from evalward.model.records import pick_where
from evalward.model.verdict import CaseDiagnostic, Finding, MetricComparison, Outcome, PerCaseTests, Verdict
from evalward.report import formatting as fmt
from evalward.report.diff import TrajectoryDiff, diff_text, steps_diff, trajectory_diff
from evalward.report.escape import html_inline, md_code_block, md_code_span, md_inline
from evalward.report.markdown import DEFAULT_MAX_CHARS, MIN_MAX_CHARS
from evalward.report.markdown import _link as markdown_link

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

DELTA_FORMAT = "{:+.3f}"
"""Δ̂ and per-case differences: signed, three decimals (`-0.167`)."""
RELATIVE_FORMAT = "{:+.1%}"
"""Δ̂ relative to the baseline mean (`+5.6%`), as pydantic-evals prints `0.900 → 0.950 (+0.05 / +5.6%)`."""
P_FORMAT = "{:.4g}"
"""p-values: four significant digits, as the gate's explanations print them."""
COST_FORMAT = "${:.4f}"
MAX_FINDINGS = 20
"""Bullets per finding group (blocking, warnings, info) before `… and N more`."""
MAX_LISTED_CASES = 50
"""Case ids per list in the "other cases" section."""
MAX_REASON_CHARS = 600
MAX_MESSAGE_CHARS = 500
MAX_EXPLANATION_CHARS = 2_000

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

# Why a case gets a section, most urgent first (its rank is the smallest reason it has).
_RANK_MUST_PASS, _RANK_ERROR, _RANK_REGRESSED, _RANK_THRESHOLD = range(4)


# ------------------------------------------------------------------------------------------ numbers


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


def per_case_heading(tests: PerCaseTests) -> str:
    """What the per-case tests are, or why none ran (plain text)."""
    if tests.tested == 0:
        kb, kc = tests.k_baseline, tests.k_current
        best = comb(kb + kc, kb)
        return (
            f"not run: a case needs k ≥ {tests.min_runs} runs on both sides to be tested on its own (here k = "
            f"{kb}/{kc}, baseline/this PR; even {kb}/{kb} → 0/{kc} passes only reaches one-sided Fisher "
            f"p = 1/C({kb + kc},{kb}) = {P_FORMAT.format(1 / best)})"
        )
    untested = (
        f"; {_plural(tests.untested, 'compared case')} with fewer than {tests.min_runs} runs on a side "
        f"{'was' if tests.untested == 1 else 'were'} not tested"
        if tests.untested
        else ""
    )
    found = f"{tests.flagged} regressed (per-case test)" if tests.flagged else "none regressed"
    return (
        f"diagnostic, not gating: one-sided Fisher exact test per case with ≥ {tests.min_runs} runs on both sides, "
        f"Benjamini–Hochberg q < {tests.q_threshold:g} across the {_plural(tests.tested, 'tested case')}{untested}; "
        f"{found}"
    )


def per_case_numbers(d: CaseDiagnostic) -> str:
    """`5/5 → 0/5, p = 0.003968, q = 0.01190` (plain text; the case label is put in by the caller)."""
    return (
        f"{passes_text(d.baseline_passes, d.baseline_k)} → {passes_text(d.current_passes, d.current_k)}, "
        f"p = {P_FORMAT.format(d.fisher_p)}, q = {P_FORMAT.format(d.fisher_q)}"
    )


def _plural(count: int, word: str) -> str:
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
            flag(set_id, finding.case_id, _RANK_THRESHOLD, f"below threshold on {finding.metric or 'a metric'}")
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


def case_results(run: RunResult, eval_set_id: str, case_id: str) -> list[CaseResult]:
    """The case's results in `run`, repetitions in order."""
    # Found by the records' keys: of a large run kept in a temporary file, only these results are read.
    found = pick_where(run.cases, lambda key: key[0] == eval_set_id and key[1] == case_id)
    return sorted(found, key=lambda c: c.repetition)


def pick_repetitions(
    current: RunResult, baseline: RunResult | None, eval_set_id: str, case_id: str
) -> tuple[CaseResult | None, CaseResult | None]:
    """(this PR's first repetition that did not pass — else its first —, the baseline's first passing
    repetition — else the same repetition index, else its first): the pair the evidence compares."""
    now = case_results(current, eval_set_id, case_id)
    before = case_results(baseline, eval_set_id, case_id) if baseline is not None else []
    cur = next((c for c in now if c.status != "passed"), now[0] if now else None)
    base = next((b for b in before if b.status == "passed"), None)
    if base is None and before:
        same = [b for b in before if cur is not None and b.repetition == cur.repetition]
        base = same[0] if same else before[0]
    return cur, base


@dataclass(frozen=True)
class Divergence:
    """Where two call (or step) lists first part: 1-based position in the reference list and both sides
    (None where a side has nothing at that point)."""

    position: int
    reference: str | None
    actual: str | None


def first_divergence(diff: TrajectoryDiff) -> Divergence | None:
    for line in diff.lines:
        if line.op == " ":
            continue
        position = (diff.first_divergence or 0) + 1
        if line.op == "~":
            return Divergence(position, line.text, line.actual_text)
        if line.op == "-":
            return Divergence(position, line.text, None)
        return Divergence(position, None, line.text)
    return None


DiffUnit = Literal["call", "step"]
DiffReference = Literal["expected", "baseline"]


@dataclass
class TurnEvidence:
    """What one turn of the flagged repetition shows against the expectation and the baseline."""

    turn: int
    turn_count: int
    query: str
    failing: list[MetricResult]
    vs_expected: TrajectoryDiff | None
    vs_baseline: TrajectoryDiff | None
    steps_vs_expected: TrajectoryDiff | None
    steps_vs_baseline: TrajectoryDiff | None
    expected_response: str | None
    baseline_response: str | None
    """Only when it differs from this PR's response."""
    current_response: str | None
    agent_error: str | None
    baseline_as_expected: bool = False
    """The baseline's calls and steps were the expected ones (so a diff against it would repeat the
    diff against the expectation, and is left out)."""

    def diffs(self) -> list[tuple[TrajectoryDiff, DiffUnit, DiffReference]]:
        """The turn's diffs in reading order, each with its unit and what it is compared against."""
        labelled: list[tuple[TrajectoryDiff | None, DiffUnit, DiffReference]] = [
            (self.vs_expected, "call", "expected"),
            (self.vs_baseline, "call", "baseline"),
            (self.steps_vs_expected, "step", "expected"),
            (self.steps_vs_baseline, "step", "baseline"),
        ]
        return [(diff, unit, reference) for diff, unit, reference in labelled if diff is not None]

    @property
    def interesting(self) -> bool:
        return bool(
            self.failing
            or self.vs_expected
            or self.vs_baseline
            or self.steps_vs_expected
            or self.steps_vs_baseline
            or self.baseline_response is not None
            or self.agent_error
        )

    def divergence(self) -> tuple[str, str, Divergence] | None:
        """(reference name, unit, divergence) from the first diff there is: calls vs expected, calls vs
        baseline, steps vs expected, steps vs baseline."""
        for reference, unit, diff in (
            ("expected", "call", self.vs_expected),
            ("baseline", "call", self.vs_baseline),
            ("expected", "step", self.steps_vs_expected),
            ("baseline", "step", self.steps_vs_baseline),
        ):
            if diff is not None and (found := first_divergence(diff)) is not None:
                return reference, unit, found
        return None


def _differs(diff: TrajectoryDiff) -> TrajectoryDiff | None:
    return None if diff.identical else diff


def turn_evidence(cur: CaseResult, base: CaseResult | None) -> list[TurnEvidence]:
    """Per turn of `cur` (paired with the baseline's turn of the same index), what differs."""
    base_turns: dict[int, InvocationResult] = {t.turn: t for t in base.invocations} if base is not None else {}
    evidence: list[TurnEvidence] = []
    for turn in cur.invocations:
        before = base_turns.get(turn.turn)
        errored_here = cur.error is not None and cur.error.turn == turn.turn
        failing = [m for m in turn.metric_results if fmt.is_failing(m)]
        as_expected = (
            before is not None
            and (turn.expected_tool_calls is not None or turn.expected_trajectory is not None)
            and (turn.expected_tool_calls is None or before.actual_tool_calls == turn.expected_tool_calls)
            and (turn.expected_trajectory is None or before.actual_trajectory == turn.expected_trajectory)
        )
        evidence.append(
            TurnEvidence(
                turn=turn.turn,
                turn_count=len(cur.invocations),
                query=turn.query,
                failing=failing,
                vs_expected=_differs(trajectory_diff(turn.expected_tool_calls, turn.actual_tool_calls))
                if turn.expected_tool_calls is not None
                else None,
                vs_baseline=_differs(trajectory_diff(before.actual_tool_calls, turn.actual_tool_calls))
                if before is not None and not as_expected
                else None,
                steps_vs_expected=_differs(steps_diff(turn.expected_trajectory, turn.actual_trajectory))
                if turn.expected_trajectory is not None
                else None,
                steps_vs_baseline=_differs(steps_diff(before.actual_trajectory, turn.actual_trajectory))
                if before is not None and not as_expected
                else None,
                expected_response=turn.expected_response,
                baseline_response=before.actual_response
                if before is not None and before.actual_response != turn.actual_response
                else None,
                current_response=turn.actual_response,
                agent_error=(turn.output.error if turn.output is not None and turn.output.error else None)
                or (cur.error.message if errored_here and cur.error is not None else None),
                baseline_as_expected=as_expected,
            )
        )
    return evidence


def resource_deltas(cur: CaseResult, base: CaseResult | None) -> list[str]:
    """`calls 2 → 3 (+1)`, `tokens 120 → 180 (+60)`, `cost $0.0100 → $0.0150`, `latency 1.30s → 2.10s`:
    what the repetition used against the baseline's, for each resource either side recorded."""

    def calls(result: CaseResult) -> int:
        return sum(len(t.actual_tool_calls) for t in result.invocations)

    def tokens(result: CaseResult) -> int | None:
        u = result.usage
        if u is None or (u.input_tokens is None and u.output_tokens is None):
            return None
        return (u.input_tokens or 0) + (u.output_tokens or 0)

    def cost(result: CaseResult) -> float | None:
        return result.usage.cost_usd if result.usage is not None else None

    def pair(name: str, now: float | None, before: float | None, show: str) -> str | None:
        if now is None and before is None:
            return None
        text = f"{name} {fmt.MISSING if before is None else show.format(before)} → "
        text += fmt.MISSING if now is None else show.format(now)
        if now is not None and before is not None and now != before:
            step = now - before
            text += f" ({'+' if step > 0 else '-'}{show.format(abs(step))})"
        return text

    parts = [
        pair("calls", calls(cur), calls(base) if base is not None else None, "{:g}"),
        pair("tokens", tokens(cur), tokens(base) if base is not None else None, "{:,}"),
        pair("cost", cost(cur), cost(base) if base is not None else None, COST_FORMAT),
        pair("latency", cur.latency_s, base.latency_s if base is not None else None, fmt.LATENCY_FORMAT),
    ]
    return [p for p in parts if p is not None]


def _diff_lines(diff: TrajectoryDiff, unit: str, reference: str) -> list[str]:
    lines = diff_text(diff, unit=unit, max_lines=fmt.MAX_DIFF_LINES)
    if reference == "expected":
        return lines
    # diff_text names the reference "expected"; only its own `!` marker line says so (content lines
    # always start with ` `, `-`, `+` or `…`), so renaming it cannot touch untrusted text.
    marker = f"! first divergence at expected {unit}"
    return [
        f"! first divergence at {reference} {unit}" + line[len(marker) :] if line.startswith(marker) else line
        for line in lines
    ]


def _other_lists(verdict: Verdict, shown: set[tuple[str, str]]) -> list[tuple[str, list[str]]]:
    """(heading, [set/case labels]) for the cases outside the flagged sections."""
    by_label: dict[str, list[str]] = {}
    for d in verdict.cases:
        if (d.eval_set_id, d.case_id) in shown:
            continue
        label = f"{d.eval_set_id}/{d.case_id}"
        if d.quarantined:
            by_label.setdefault("quarantined", []).append(label)
        if d.label in ("improved", "flaky", "new", "removed", "changed"):
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


# -------------------------------------------------------------------------------------- markdown


def render_verdict_markdown(
    current: RunResult,
    verdict: Verdict,
    *,
    baseline: RunResult | None = None,
    title: str = "evalward",
    max_chars: int = DEFAULT_MAX_CHARS,
    details_url: str | None = None,
) -> str:
    """The PR comment body for `verdict`, at most `max_chars` characters (see the module docstring).

    `current` and `baseline` supply the evidence of flagged cases (trajectories, responses, usage).
    Raises ValueError when `max_chars` is below `MIN_MAX_CHARS`.
    """
    if max_chars < MIN_MAX_CHARS:
        raise ValueError(f"max_chars must be at least {MIN_MAX_CHARS}, got {max_chars}")
    head = "\n\n".join(
        part
        for part in (
            _md_headline(verdict, title),
            _md_baseline(verdict, baseline),
            _md_table(verdict),
            _md_clustered(verdict),
            _md_findings(verdict, "blocking", "Blocking", "❌"),
            _md_findings(verdict, "warning", "Warnings", "⚠️"),
            _md_counts(verdict),
            _md_per_case(verdict),
            _md_inconclusive(verdict),
        )
        if part
    )
    flagged = flagged_cases(verdict)
    sections: list[tuple[str, str]] = [("case", _md_case_section(case, current, baseline)) for case in flagged]
    arithmetic = _md_arithmetic(verdict)
    if arithmetic:
        sections.append(("arithmetic", arithmetic))
    rest = _md_rest(verdict, {(c.eval_set_id, c.case_id) for c in flagged})
    if rest:
        sections.append(("rest", rest))
    footer = _md_footer(verdict, current, baseline)

    body = "\n\n".join([head, *(s for _, s in sections), footer]) + "\n"
    if len(body) <= max_chars:
        return body

    longest_note = _md_cut_note(sections, max_chars, details_url)
    # The note at its longest (every section cut), the footer, the blank lines around them, the final newline.
    budget = max_chars - len(longest_note) - len(footer) - 5
    kept: list[str] = []
    used = len(head)
    shown = 0
    for _, section in sections:
        if used + 2 + len(section) > budget:
            break
        kept.append(section)
        used += 2 + len(section)
        shown += 1
    note = _md_cut_note(sections[shown:], max_chars, details_url, total=len(sections))
    text = "\n\n".join([head, *kept, note, footer]) + "\n"
    if len(text) > max_chars:  # only when the head alone is too big: keep whole lines of it
        tail = "\n\n" + note + "\n\n" + footer + "\n"
        keep = head[: max(0, max_chars - len(tail))]
        text = keep[: keep.rfind("\n") if "\n" in keep else 0] + tail
    return text


def _md_headline(verdict: Verdict, title: str) -> str:
    """First line: what happened in plain words (`Verdict.headline`); then the outcome and the deciding
    statistics. A verdict recorded before headlines existed keeps the older layout (outcome, then reason)."""
    mark = OUTCOME_MARKS[verdict.outcome]
    outcome = f"{md_inline(title, max_len=80)}: gate {OUTCOME_WORDS[verdict.outcome]}"
    reason = md_inline(verdict.reason, max_len=MAX_REASON_CHARS)
    if not verdict.headline:
        return f"### {mark} {outcome}\n\n{reason}"
    return f"### {mark} {md_inline(verdict.headline, max_len=MAX_HEADLINE_CHARS)}\n\n**{outcome}.** {reason}"


@dataclass(frozen=True)
class BaselineFacts:
    """What every renderer says about the baseline (raw, unescaped: each renderer escapes for its medium)."""

    run_id: str
    commit: str | None
    branch: str | None
    age: str | None
    chosen_by: str


def baseline_facts(verdict: Verdict, baseline: RunResult | None) -> BaselineFacts | None:
    """The baseline as recorded in the verdict, else as read from the baseline run; None when there is none."""
    info = verdict.baseline
    if info is not None:
        age = f"{age_text(info.age_s)} old" if info.age_s is not None else None
        return BaselineFacts(info.run_id, info.commit, info.branch, age, info.chosen_by)
    if baseline is not None:
        return BaselineFacts(baseline.run_id, baseline.context.commit, baseline.context.branch, None, "")
    return None


def _md_baseline(verdict: Verdict, baseline: RunResult | None) -> str:
    facts = baseline_facts(verdict, baseline)
    if facts is None:
        return f"**Baseline**: {NO_BASELINE_TEXT}."
    parts = [f"run {md_code_span(facts.run_id, max_len=64)}"]
    if facts.commit:
        parts.append(f"commit {md_code_span(facts.commit[:12], max_len=12)}")
    if facts.branch:
        parts.append(f"branch {md_code_span(facts.branch, max_len=80)}")
    if facts.age:
        parts.append(facts.age)
    chosen = facts.chosen_by
    parts.append(f"chosen by {md_inline(chosen, max_len=300)}" if chosen else "how it was chosen is not recorded")
    text = "**Baseline**: " + " · ".join(parts)
    notes = verdict.baseline.notes if verdict.baseline is not None else []
    if notes:
        text += "\n" + "\n".join(f"- {md_inline(note, max_len=300)}" for note in notes[:10])
    return text


def _md_table(verdict: Verdict) -> str:
    if not verdict.metrics:
        return ""
    rows = [
        f"| metric | baseline | this PR | Δ | {interval_label(verdict.alpha)} | p (test) | verdict |",
        "| --- | ---: | ---: | ---: | :---: | --- | --- |",
    ]
    for m in verdict.metrics:
        rows.append(
            f"| {md_inline(m.metric, max_len=80)} ({sample_text(m)}) "
            f"| {fmt.score(m.baseline_mean)} | {fmt.score(m.current_mean)} | {delta_text(m)} "
            f"| {bounds_text(m.ci_low, m.ci_high)} | {p_text(m)} | {verdict_text(m)} |"
        )
    return "\n".join(rows)


def _md_clustered(verdict: Verdict) -> str:
    metrics = clustered_metrics(verdict)
    if not metrics:
        return ""
    facts = "; ".join(f"{md_inline(m.metric, max_len=80)}: {cluster_facts(m)}" for m in metrics)
    return f"**Clustered analysis**: {CLUSTERED_TEXT}. {facts}."


MAX_PER_CASE_LISTED = 10
"""Per-case-test regressions named in the head; all of them get a flagged-case section."""


def _md_per_case(verdict: Verdict) -> str:
    tests = verdict.per_case_tests
    if tests is None:
        return ""
    text = f"**Per-case tests**: {per_case_heading(tests)}"
    flagged = per_case_flagged(verdict)
    if flagged:
        items = [
            f"{md_code_span(f'{d.eval_set_id}/{d.case_id}', max_len=120)} {per_case_numbers(d)}"
            for d in flagged[:MAX_PER_CASE_LISTED]
        ]
        more = f", … and {len(flagged) - MAX_PER_CASE_LISTED} more" if len(flagged) > MAX_PER_CASE_LISTED else ""
        text += ": " + "; ".join(items) + more
    return text + "."


def _md_finding(finding: Finding, mark: str = "") -> str:
    mark = f"{mark} " if mark else ""
    return f"- {mark}**{finding.kind.replace('_', ' ')}**: {md_inline(finding.message, max_len=MAX_MESSAGE_CHARS)}"


def _md_capped(items: list[str], total: int) -> list[str]:
    if total > len(items):
        items = [*items, f"- … and {total - len(items)} more"]
    return items


def _md_findings(verdict: Verdict, severity: str, heading: str, mark: str) -> str:
    found = [f for f in verdict.findings if f.severity == severity]
    if not found:
        return ""
    items = [_md_finding(f, mark) for f in found[:MAX_FINDINGS]]
    return f"**{heading}**\n\n" + "\n".join(_md_capped(items, len(found)))


def _md_counts(verdict: Verdict) -> str:
    c = verdict.counts
    return (
        f"**Cases**: {c.compared} compared · {c.added} added · {c.removed} removed · {c.changed} changed · "
        f"{c.errored} errored · {c.quarantined} quarantined"
    )


def _inconclusive_line(m: MetricComparison) -> str:
    """Plain text (the metric name is put in by the caller)."""
    parts = []
    if m.mde is not None:
        parts.append(f"this run can only detect drops of about {fmt.score(m.mde)} or more (minimum detectable effect)")
    if m.n_needed is not None:
        parts.append(
            f"≈{m.n_needed:,} paired cases would detect a {m.delta_block:g} drop (this run compared {m.n_cases})"
        )
    return "; ".join(parts) or "no estimate of the sample size needed (too few cases)"


def _md_inconclusive(verdict: Verdict) -> str:
    metrics = [m for m in verdict.metrics if m.verdict == "inconclusive"]
    if not metrics:
        return ""
    lines = ["**Why inconclusive**", ""]
    lines += [f"- {md_inline(m.metric, max_len=80)}: {_inconclusive_line(m)}." for m in metrics]
    return "\n".join(lines)


def _md_case_section(case: FlaggedCase, current: RunResult, baseline: RunResult | None) -> str:
    before, now = case.passes(current, baseline)
    mark = "💥" if case.rank == _RANK_ERROR else "❌"
    why = "; ".join(case.reasons)
    extra = " · quarantined" if case.diagnostic is not None and case.diagnostic.quarantined else ""
    blocks = [
        f"<details><summary>{mark} <code>{html_inline(case.label, max_len=120)}</code> — "
        f"{html_inline(why, max_len=200)} · passes {before} → {now}{extra}</summary>",
        f"**Passes over repetitions**: baseline {before} → now {now}",
    ]
    d = case.diagnostic
    if d is not None and d.fisher_p is not None:
        outcome = "regressed (per-case test)" if d.per_case_regressed else "not significant on its own"
        blocks.append(
            f"**Per-case test**: one-sided Fisher exact p = {P_FORMAT.format(d.fisher_p)}, Benjamini–Hochberg "
            f"q = {P_FORMAT.format(d.fisher_q)} → {outcome} (diagnostic, not gating)"
        )
    table = _md_case_scores(case.diagnostic)
    if table:
        blocks.append(table)
    if case.findings:
        items = [_md_finding(f) for f in case.findings[:MAX_FINDINGS]]
        blocks.append("\n".join(_md_capped(items, len(case.findings))))

    cur, base = pick_repetitions(current, baseline, case.eval_set_id, case.case_id)
    if cur is not None:
        compared_with = (
            f" against baseline repetition {fmt.ordinal(base.repetition)} ({base.status})" if base is not None else ""
        )
        blocks.append(f"**Repetition {fmt.ordinal(cur.repetition)}** of this PR ({cur.status}){compared_with}:")
        if cur.error is not None:
            where = f" in turn {fmt.ordinal(cur.error.turn)}" if cur.error.turn is not None else ""
            blocks.append(f"Error {md_code_span(cur.error.kind)}{where}:")
            blocks.append(md_code_block(cur.error.message, "text", max_len=fmt.MAX_ERROR_CHARS))
        resources = resource_deltas(cur, base)
        if resources:
            blocks.append("Resources: " + " · ".join(resources))
        turns = [t for t in turn_evidence(cur, base) if t.interesting]
        for turn in turns[: fmt.MAX_TURNS_PER_CASE]:
            blocks.extend(_md_turn(turn, has_baseline=base is not None))
        if len(turns) > fmt.MAX_TURNS_PER_CASE:
            blocks.append(f"*… {len(turns) - fmt.MAX_TURNS_PER_CASE} more turns with differences not shown.*")
    else:
        blocks.append("*This PR has no result for this case.*")
    blocks.append("</details>")
    return "\n\n".join(blocks)


def _md_case_scores(diagnostic: CaseDiagnostic | None) -> str:
    if diagnostic is None:
        return ""
    names = list(dict.fromkeys([*diagnostic.baseline_scores, *diagnostic.current_scores]))
    if not names:
        return ""
    rows = ["| gated metric | baseline b_i | this PR c_i | c_i − b_i |", "| --- | ---: | ---: | ---: |"]
    for name in names:
        b, c = diagnostic.baseline_scores.get(name), diagnostic.current_scores.get(name)
        change = signed(c - b) if b is not None and c is not None else fmt.MISSING
        rows.append(f"| {md_inline(name, max_len=80)} | {fmt.score(b)} | {fmt.score(c)} | {change} |")
    return "\n".join(rows)


def _md_divergence(turn: TurnEvidence) -> str | None:
    found = turn.divergence()
    if found is None:
        return None
    reference, unit, d = found
    where = f"**First divergence** at {reference} {unit} {d.position}: "
    if d.reference is not None and d.actual is not None:
        return (
            where
            + f"{reference} {md_code_span(d.reference, max_len=300)}, this PR {md_code_span(d.actual, max_len=300)}"
        )
    if d.reference is not None:
        return where + f"this PR skipped {md_code_span(d.reference, max_len=300)}"
    return where + f"this PR added {md_code_span(d.actual or '', max_len=300)}"


def _md_turn(turn: TurnEvidence, *, has_baseline: bool) -> list[str]:
    blocks = [
        f"**Turn {fmt.ordinal(turn.turn)} of {turn.turn_count}** — query: "
        f"{md_inline(turn.query, max_len=fmt.MAX_QUERY_CHARS)}"
    ]
    if turn.failing:
        failing = ", ".join(
            f"{md_inline(m.name, max_len=80)} {fmt.score(m.score)} ({fmt.threshold(m.threshold, m.higher_is_better)})"
            for m in turn.failing
        )
        blocks.append(f"Failing: {failing}")
    divergence = _md_divergence(turn)
    if divergence:
        blocks.append(divergence)
    if turn.baseline_as_expected and (turn.vs_expected or turn.steps_vs_expected):
        blocks.append("The baseline made the expected calls and steps.")
    for diff, unit, reference in turn.diffs():
        what = "Tool calls" if unit == "call" else "Steps"
        blocks.append(f"{what} vs {reference} (`-` {reference}, `+` this PR):")
        blocks.append(md_code_block("\n".join(_diff_lines(diff, unit, reference)), "diff"))
        if diff.arg_diffs:
            items = [
                f"- call {fmt.ordinal(a.call_index)} {md_code_span(a.name, max_len=80)}: "
                f"{md_code_span(a.describe(), max_len=300)}"
                for a in diff.arg_diffs[: fmt.MAX_DIFF_LINES]
            ]
            blocks.append(f"Argument differences ({reference} → this PR):\n\n" + "\n".join(items))
    if turn.agent_error:
        blocks.append("The agent reported an error:")
        blocks.append(md_code_block(turn.agent_error, "text", max_len=fmt.MAX_ERROR_CHARS))
    if turn.expected_response is not None:
        blocks.append("Expected response:")
        blocks.append(md_code_block(turn.expected_response, "text", max_len=fmt.MAX_RESPONSE_CHARS))
    if turn.baseline_response is not None and turn.baseline_response == turn.expected_response:
        blocks.append("Baseline response: the expected one.")
    elif turn.baseline_response is not None:
        blocks.append("Baseline response:")
        blocks.append(md_code_block(turn.baseline_response, "text", max_len=fmt.MAX_RESPONSE_CHARS))
    if turn.current_response is not None:
        same = " (same as the baseline's)" if has_baseline and turn.baseline_response is None else ""
        blocks.append(f"This PR's response{same}:")
        blocks.append(md_code_block(turn.current_response, "text", max_len=fmt.MAX_RESPONSE_CHARS))
    return blocks


def _md_arithmetic(verdict: Verdict) -> str:
    explained = [m for m in verdict.metrics if m.explanation]
    if not explained:
        return ""
    items = [
        f"- {md_inline(m.metric, max_len=80)}: {md_inline(m.explanation, max_len=MAX_EXPLANATION_CHARS)}"
        for m in explained
    ]
    return "<details><summary>How the metric verdicts were computed</summary>\n\n" + "\n".join(items) + "\n\n</details>"


def _md_case_list(labels: list[str]) -> str:
    shown = ", ".join(md_code_span(label, max_len=120) for label in labels[:MAX_LISTED_CASES])
    if len(labels) > MAX_LISTED_CASES:
        shown += f", … and {len(labels) - MAX_LISTED_CASES} more"
    return shown


def _md_rest(verdict: Verdict, shown: set[tuple[str, str]]) -> str:
    lists = _other_lists(verdict, shown)
    info = _other_findings(verdict, shown)
    if not lists and not info:
        return ""
    summary = ", ".join(f"{len(labels)} {title.split(' (')[0].lower()}" for title, labels in lists)
    if info:
        summary += (", " if summary else "") + _plural(len(info), "note")
    blocks = [f"<details><summary>Other cases and findings: {summary}</summary>"]
    blocks += [f"**{title}** ({len(labels)}): {_md_case_list(labels)}" for title, labels in lists]
    if info:
        items = [_md_finding(f, "ℹ️") for f in info[:MAX_FINDINGS]]
        blocks.append("**Notes**\n\n" + "\n".join(_md_capped(items, len(info))))
    blocks.append("</details>")
    return "\n\n".join(blocks)


def _md_footer(verdict: Verdict, current: RunResult, baseline: RunResult | None) -> str:
    runs = f"run {md_code_span(verdict.current_run_id or current.run_id, max_len=64)}"
    base_id = verdict.baseline.run_id if verdict.baseline is not None else baseline.run_id if baseline else None
    if base_id:
        runs += f" vs {md_code_span(base_id, max_len=64)}"
    digest = md_code_span(verdict.policy_digest, max_len=80) if verdict.policy_digest else "not recorded"
    return f"<sub>Reproduce: {runs} · seed {verdict.seed} · α = {verdict.alpha:g} · policy sha256 {digest}</sub>"


def _md_cut_note(
    cut: list[tuple[str, str]], max_chars: int, details_url: str | None, *, total: int | None = None
) -> str:
    total = len(cut) if total is None else total
    kinds = [kind for kind, _ in cut]
    what = []
    if kinds.count("case"):
        what.append(_plural(kinds.count("case"), "flagged case"))
    if "arithmetic" in kinds:
        what.append("the arithmetic")
    if "rest" in kinds:
        what.append("the other cases and findings")
    where = markdown_link(details_url) if details_url else "the job summary or the JSON report artifact"
    return (
        f"✂️ **{len(cut)} of {_plural(total, 'section')} not shown** ({', '.join(what) or 'none'}) to keep this "
        f"comment under {max_chars:,} characters. Full report: {where}."
    )


# -------------------------------------------------------------------------------------- terminal


def print_verdict(current: RunResult, verdict: Verdict, console: Console, *, baseline: RunResult | None = None) -> None:
    """The verdict on the terminal: the markdown's content, as rich Text and a Table.

    Untrusted text is printed markup-free through `escape.workflow_command_safe`; names and messages on
    one line each, so they cannot forge report lines.
    """
    from rich.table import Table
    from rich.text import Text

    _label = _term_label

    def out(*parts: Text | Table) -> None:
        for part in parts:
            console.print(part, markup=False, emoji=False, highlight=False, soft_wrap=isinstance(part, Text))

    style = {"pass": "bold green", "fail": "bold red", "inconclusive": "bold yellow", "error": "bold magenta"}[
        verdict.outcome
    ]
    said = verdict.headline or verdict.reason
    out(Text.assemble((f"GATE {verdict.outcome.upper()}", style), "  ", _label(said, MAX_HEADLINE_CHARS)))
    if verdict.headline:
        out(_label(verdict.reason, MAX_REASON_CHARS))
    out(_term_baseline(verdict, baseline))
    if verdict.metrics:
        table = Table(show_edge=True, header_style="bold")
        for header, justify in (
            ("metric", "left"),
            ("baseline", "right"),
            ("this PR", "right"),
            ("Δ", "right"),
            (interval_label(verdict.alpha), "center"),
            ("p (test)", "left"),
            ("verdict", "left"),
        ):
            # fold, not ellipsis: a metric name cut short could name a different metric
            table.add_column(header, justify=justify, overflow="fold")  # type: ignore[arg-type]
        verdict_style = {"regressed": "red", "pass": "green", "inconclusive": "yellow"}
        for m in verdict.metrics:
            name = _label(m.metric, 80).append(f" ({sample_text(m)})", style="dim")
            word = m.verdict.upper() + ("" if m.gated else " (reported)")
            table.add_row(
                name,
                Text(fmt.score(m.baseline_mean)),
                Text(fmt.score(m.current_mean)),
                Text(delta_text(m)),
                Text(bounds_text(m.ci_low, m.ci_high)),
                Text(p_text(m)),
                Text(word, style=verdict_style[m.verdict]),
            )
        out(table)
    for m in clustered_metrics(verdict):
        out(Text.assemble(("Clustered ", "bold"), _label(m.metric, 80), f": {cluster_facts(m)}; {CLUSTERED_TEXT}."))
    for severity, heading, mark, colour in (
        ("blocking", "Blocking:", "✗", "red"),
        ("warning", "Warnings:", "!", "yellow"),
    ):
        found = [f for f in verdict.findings if f.severity == severity]
        if not found:
            continue
        out(Text(heading, style="bold"))
        for finding in found[:MAX_FINDINGS]:
            out(
                Text.assemble(
                    ("  " + mark + " ", colour), f"{finding.kind}: ", _label(finding.message, MAX_MESSAGE_CHARS)
                )
            )
        if len(found) > MAX_FINDINGS:
            out(Text(f"  … and {len(found) - MAX_FINDINGS} more"))
    c = verdict.counts
    out(
        Text(
            f"Cases: {c.compared} compared, {c.added} added, {c.removed} removed, {c.changed} changed, "
            f"{c.errored} errored, {c.quarantined} quarantined"
        )
    )
    if verdict.per_case_tests is not None:
        out(Text.assemble(("Per-case tests", "bold"), f": {per_case_heading(verdict.per_case_tests)}."))
        for d in per_case_flagged(verdict)[:MAX_FINDINGS]:
            out(
                Text("  ✗ ", style="red")
                .append_text(_label(f"{d.eval_set_id}/{d.case_id}"))
                .append(f"  {per_case_numbers(d)}")
            )
    for m in verdict.metrics:
        if m.verdict == "inconclusive":
            out(Text.assemble(("Inconclusive ", "yellow"), _label(m.metric, 80), f": {_inconclusive_line(m)}."))

    flagged = flagged_cases(verdict)
    if flagged:
        out(Text("Flagged cases:", style="bold"))
    for case in flagged:
        for line in _term_case(case, current, baseline):
            out(line)
    shown = {(c.eval_set_id, c.case_id) for c in flagged}
    for title, labels in _other_lists(verdict, shown):
        line = Text(f"{title} ({len(labels)}): ", style="bold")
        for index, label in enumerate(labels[:MAX_LISTED_CASES]):
            if index:
                line.append(", ")
            line.append_text(_label(label))
        if len(labels) > MAX_LISTED_CASES:
            line.append(f", … and {len(labels) - MAX_LISTED_CASES} more")
        out(line)
    info = _other_findings(verdict, shown)
    for finding in info[:MAX_FINDINGS]:
        out(Text.assemble(("  i ", "cyan"), f"{finding.kind}: ", _label(finding.message, MAX_MESSAGE_CHARS)))
    if len(info) > MAX_FINDINGS:
        out(Text(f"  … and {len(info) - MAX_FINDINGS} more notes"))
    digest = verdict.policy_digest or "not recorded"
    out(Text(f"Reproduce: seed {verdict.seed}, α = {verdict.alpha:g}, policy sha256 {digest}", style="dim"))


def _term_label(text: str, max_len: int = 120) -> Text:
    """Untrusted text on one line, log-safe and markup-free (terminal.py's rule for names)."""
    from evalward.report.terminal import _label

    return _label(text, max_len)


def _term_baseline(verdict: Verdict, baseline: RunResult | None) -> Text:
    from rich.text import Text

    label = _term_label

    info = verdict.baseline
    if info is None and baseline is None:
        return Text("Baseline: " + NO_BASELINE_TEXT + ".")
    line = Text("Baseline: run ")
    run_id = info.run_id if info is not None else baseline.run_id if baseline is not None else ""
    commit = info.commit if info is not None else baseline.context.commit if baseline is not None else None
    branch = info.branch if info is not None else baseline.context.branch if baseline is not None else None
    line.append_text(label(run_id, 64))
    if commit:
        line.append(", commit ").append_text(label(commit[:12], 12))
    if branch:
        line.append(", branch ").append_text(label(branch, 80))
    if info is not None and info.age_s is not None:
        line.append(f", {age_text(info.age_s)} old")
    chosen = info.chosen_by if info is not None else ""
    if chosen:
        line.append(", chosen by ").append_text(label(chosen, 300))
    else:
        line.append(", how it was chosen is not recorded")
    for note in (info.notes if info is not None else [])[:10]:
        line.append("\n  - ").append_text(label(note, 300))
    return line


def _term_case(case: FlaggedCase, current: RunResult, baseline: RunResult | None) -> list[Text]:
    from rich.text import Text

    label = _term_label

    before, now = case.passes(current, baseline)
    head = Text("  ✗ ", style="red").append_text(label(case.label))
    head.append("  ").append_text(label("; ".join(case.reasons), 200))
    head.append(f"  passes {before} → {now}")
    lines = [head]
    d = case.diagnostic
    if d is not None and d.fisher_p is not None:
        outcome = "regressed (per-case test)" if d.per_case_regressed else "not significant on its own"
        lines.append(
            Text(
                f"      per-case test: one-sided Fisher exact p = {P_FORMAT.format(d.fisher_p)}, "
                f"Benjamini–Hochberg q = {P_FORMAT.format(d.fisher_q)} → {outcome}"
            )
        )
    if d is not None:
        for name in dict.fromkeys([*d.baseline_scores, *d.current_scores]):
            b, c = d.baseline_scores.get(name), d.current_scores.get(name)
            change = signed(c - b) if b is not None and c is not None else fmt.MISSING
            lines.append(
                Text("      ").append_text(label(name, 80)).append(f": {fmt.score(b)} → {fmt.score(c)} ({change})")
            )
    cur, base = pick_repetitions(current, baseline, case.eval_set_id, case.case_id)
    if cur is None:
        return lines
    if cur.error is not None:
        lines.append(
            Text(f"      error {cur.error.kind}: ", style="magenta").append_text(label(cur.error.message, 300))
        )
    resources = resource_deltas(cur, base)
    if resources:
        lines.append(Text("      " + ", ".join(resources)))
    turns = [t for t in turn_evidence(cur, base) if t.interesting]
    for turn in turns[: fmt.MAX_TURNS_PER_CASE]:
        lines.append(
            Text(f"      turn {fmt.ordinal(turn.turn)} of {turn.turn_count}: ").append_text(label(turn.query, 200))
        )
        if turn.baseline_as_expected and (turn.vs_expected or turn.steps_vs_expected):
            lines.append(Text("        the baseline made the expected calls and steps", style="dim"))
        for diff, unit, reference in turn.diffs():
            lines.append(Text(f"        {'tool calls' if unit == 'call' else 'steps'} vs {reference}:", style="bold"))
            for text in _diff_lines(diff, unit, reference):
                shown = label(text, 300)
                shown.stylize({"-": "red", "+": "green", "!": "yellow"}.get(text[:1], ""))
                lines.append(Text("          ").append_text(shown))
            for a in diff.arg_diffs[: fmt.MAX_DIFF_LINES]:
                lines.append(
                    Text(f"          call {fmt.ordinal(a.call_index)} ").append_text(
                        label(f"{a.name}: {a.describe()}", 300)
                    )
                )
        for name, response in (
            ("expected response", turn.expected_response),
            ("baseline response", turn.baseline_response),
            ("this PR's response", turn.current_response),
            ("agent error", turn.agent_error),
        ):
            if response is not None:
                lines.append(Text(f"        {name}: ", style="bold").append_text(label(response, 300)))
    return lines
