"""Step 7 of `gate.decide`: each case labelled, tested on its own when it has the repetitions, and flagged for
review (docs/gate.md §8). Diagnostic only: nothing here blocks. The flags' words say so without claiming the
case is not gated — another step may block on the same case (a threshold, a must-pass case, the newly-broken
test) — so a report that shows a blocked case's flag never contradicts the block.

Labels come from the pass rates (regressed/improved when they moved by ≥ 0.5, flaky when mixed on a side or
known to flip on the base branch, stable_pass, stable_fail, new, removed, changed). Per-case tests: a one-sided
Fisher exact test of the baseline's passes against the current run's for every compared case with ≥
`PER_CASE_MIN_RUNS` repetitions on both sides, then Benjamini–Hochberg q across those cases.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass

from evalward.gate import stats
from evalward.gate.findings import case_name, finding, fmt_num, fmt_p, plural
from evalward.gate.gate_context import GateContext
from evalward.gate.pairing import PairedMetric
from evalward.gate.scores import ScoredResult
from evalward.model.cases import CaseKey
from evalward.model.verdict import CaseDiagnostic, CaseLabel, Finding, PerCaseTests

LIKELY_REGRESSED_DROP = 0.5
"""b_i − c_i at or above this marks a case "likely regressed" (docs/gate.md §8)."""

PER_CASE_MIN_RUNS = 5
"""Repetitions a case needs on both sides for its own Fisher test: with 3, even 3/3 → 0/3 gives p = 0.05."""

PER_CASE_Q = 0.1
"""Benjamini–Hochberg q below which a tested case is "regressed (per-case test)" (docs/gate.md §8)."""


@dataclass(frozen=True)
class PerCaseResults:
    """The per-case tests: {case: (Fisher p, BH q)} for the tested cases, and their summary for the verdict."""

    tested: Mapping[CaseKey, tuple[float, float]]
    summary: PerCaseTests | None
    """None when nothing was compared."""


def per_case_tests(ctx: GateContext, compared: Sequence[CaseKey]) -> PerCaseResults:
    """{case: (Fisher p, BH q)} for the compared cases with ≥ PER_CASE_MIN_RUNS repetitions on both sides.

    Passes are repetitions with status `passed` (an errored one is not a pass, docs/gate.md §2), the same
    counts the case's diagnostic shows.
    """
    if ctx.baseline is None or not compared:
        return PerCaseResults(tested={}, summary=None)
    tested: list[CaseKey] = []
    p_values: list[float] = []
    for key in compared:
        before, after = ctx.base[key], ctx.cur[key]
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
    summary = PerCaseTests(
        min_runs=PER_CASE_MIN_RUNS,
        q_threshold=PER_CASE_Q,
        tested=len(tested),
        untested=len(compared) - len(tested),
        flagged=sum(q < PER_CASE_Q for q in q_values),
        k_baseline=min(len(ctx.base[key]) for key in compared),
        k_current=min(len(ctx.cur[key]) for key in compared),
    )
    return PerCaseResults(
        tested={key: (p, q) for key, p, q in zip(tested, p_values, q_values, strict=True)}, summary=summary
    )


def diagnose_cases(
    ctx: GateContext,
    compared: Sequence[CaseKey],
    changed: Set[CaseKey],
    paired: Mapping[str, PairedMetric],
    per_case: PerCaseResults,
) -> tuple[list[CaseDiagnostic], list[Finding]]:
    """A diagnostic for every case of either run, and an info finding for each case worth a review."""
    compared_set = set(compared)
    # One position map per metric instead of a list scan per case (O(n) → O(1)).
    positions = {name: {k: i for i, k in enumerate(p.keys)} for name, p in paired.items()}
    diagnostics: list[CaseDiagnostic] = []
    findings: list[Finding] = []
    for key in sorted(set(ctx.cur) | set(ctx.base)):
        before, after = ctx.base.get(key), ctx.cur.get(key)
        flip = ctx.flip_rates.get(key)
        b_scores = {n: _mean(positions[n], key, p.b) for n, p in paired.items()}
        c_scores = {n: _mean(positions[n], key, p.c) for n, p in paired.items()}
        likely = sorted(
            name
            for name, p in paired.items()
            if key in compared_set and _drop(p, b_scores[name], c_scores[name]) >= LIKELY_REGRESSED_DROP
        )
        label = _label(ctx, key, before, after, flip, changed)
        tested = per_case.tested.get(key)
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
                quarantined=key in ctx.quarantined,
                cluster=ctx.cluster_label(key),
                fisher_p=tested[0] if tested else None,
                fisher_q=tested[1] if tested else None,
                per_case_regressed=tested is not None and tested[1] < PER_CASE_Q,
            )
        )
        if likely or label == "regressed" or (tested is not None and tested[1] < PER_CASE_Q):
            findings.extend(_case_findings(ctx, key, likely, flip, b_scores, c_scores, tested, per_case.summary))
    return diagnostics, findings


def _mean(positions: Mapping[CaseKey, int], key: CaseKey, side: Sequence[float]) -> float | None:
    """The case's mean on one side (a metric's `b` or `c`), None when the case is not in its paired data."""
    index = positions.get(key)
    if index is None:
        return None
    return side[index]


def _drop(paired: PairedMetric, b: float | None, c: float | None) -> float:
    if b is None or c is None:
        return 0.0
    return b - c if paired.higher_is_better else c - b


def _label(
    ctx: GateContext,
    key: CaseKey,
    before: Sequence[ScoredResult] | None,
    after: Sequence[ScoredResult] | None,
    flip: float | None,
    changed: Set[CaseKey],
) -> CaseLabel:
    if before is None:
        return "new"
    if after is None:
        return "removed"
    if key in changed:
        return "changed"
    b_rate = sum(r.status == "passed" for r in before) / len(before)
    c_rate = sum(r.status == "passed" for r in after) / len(after)
    known_flaky = flip is not None and flip >= ctx.policy.flaky_flip_rate
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


def _case_findings(
    ctx: GateContext,
    key: CaseKey,
    likely: list[str],
    flip: float | None,
    b_scores: Mapping[str, float | None],
    c_scores: Mapping[str, float | None],
    tested: tuple[float, float] | None,
    summary: PerCaseTests | None,
) -> list[Finding]:
    """The case's info finding: it flips (likely noise), its per-case test, or "likely regressed"; none when
    quarantined (it has its `quarantined` finding)."""
    metric = likely[0] if likely else None
    b = b_scores.get(metric) if metric else None
    c = c_scores.get(metric) if metric else None
    values = f"{metric} {fmt_num(b)} → {fmt_num(c)}" if metric else "pass rate fell by ≥ 0.5"
    if flip is not None and flip >= ctx.policy.flaky_flip_rate:
        return [
            finding(
                "flaky",
                "info",
                f"Case {case_name(key)}: {values}, but it flips in {flip:.0%} of base-branch runs, so this is likely "
                "noise.",
                key=key,
                metric=metric,
                baseline_value=b,
                current_value=c,
            )
        ]
    if key in ctx.quarantined:
        return []
    if tested is not None:
        assert summary is not None
        return [_tested_case_finding(ctx, key, likely, values, metric, b, c, tested, summary)]
    return [
        finding(
            "regression",
            "info",
            f"Case {case_name(key)} likely regressed: {values} (drop ≥ {LIKELY_REGRESSED_DROP}); shown for "
            f"review: a single case needs k ≥ {PER_CASE_MIN_RUNS} repetitions to be tested on its own, and this "
            "flag alone never fails the gate.",
            key=key,
            metric=metric,
            baseline_value=b,
            current_value=c,
        )
    ]


def _tested_case_finding(
    ctx: GateContext,
    key: CaseKey,
    likely: list[str],
    values: str,
    metric: str | None,
    b: float | None,
    c: float | None,
    tested: tuple[float, float],
    summary: PerCaseTests,
) -> Finding:
    p, q = tested
    before, after = ctx.base[key], ctx.cur[key]
    passes = (
        f"passes {sum(r.status == 'passed' for r in before)}/{len(before)} → "
        f"{sum(r.status == 'passed' for r in after)}/{len(after)}"
    )
    test = f"one-sided Fisher exact p = {fmt_p(p)}, Benjamini–Hochberg q = {fmt_p(q)}"
    across = f"across {plural(summary.tested, 'tested case')}"
    if q < PER_CASE_Q:
        head = f"Case {case_name(key)} regressed (per-case test): {passes}, {test} < {PER_CASE_Q:g} {across}"
        if likely:
            head += f"; {values}"
    else:
        head = (
            f"Case {case_name(key)} likely regressed: {values} (drop ≥ {LIKELY_REGRESSED_DROP}), but its per-case "
            f"test is not significant ({passes}, {test} ≥ {PER_CASE_Q:g} {across})"
        )
    return finding(
        "regression",
        "info",
        head + "; shown for review: a per-case test alone never fails the gate.",
        key=key,
        metric=metric,
        baseline_value=b,
        current_value=c,
        p_value=q,
        test="fisher_exact",
    )
