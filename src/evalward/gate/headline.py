"""The first line of every report: what the gate found, in plain words a newcomer understands.

`headline(verdict)` reads only the verdict (pure). It leads with the one thing that decided the outcome —
"3 cases passed 3 of 3, now 0 of 3: a, b, c." — then adds what a reviewer must not miss (cases the
change removes while they were failing, cases still failing as before). The statistics stay in
`Verdict.reason`, the metric table and the findings below it. Case names are untrusted text: renderers escape
the headline like any other.

Newly broken cases are described by their counts, passes over repetitions at the baseline and now; "always" only
when the base branch's history says so (every such case has a recorded flip rate of 0: it never changed outcome
between the base branch's runs).
"""

from __future__ import annotations

from collections.abc import Sequence

from evalward.gate.policy import CASE_PASS_METRIC, ERROR_RATE_METRIC
from evalward.model.verdict import CaseDiagnostic, Finding, MetricComparison, Verdict

NAMES_SHOWN = 5
"""Case names a headline lists before "and N more"."""


def headline(verdict: Verdict) -> str:
    """One to three plain sentences (see the module docstring)."""
    sentences = [_main(verdict)]
    if verdict.outcome != "fail":
        broken = [f for f in verdict.findings if f.kind == "newly_broken"]
        if broken and verdict.newly_broken is not None and verdict.newly_broken.cases:
            sentences.append(
                f"{_newly_broken(verdict, verdict.newly_broken.cases)} That could still be chance with this many "
                "cases and repetitions: worth a look."
            )
    removed = [f for f in verdict.findings if f.kind == "removed_case" and f.case_id is None]
    if removed:
        failing = [f for f in verdict.findings if f.kind == "removed_case" and f.case_id and "failing" in f.message]
        sentences.append(
            f"This change also removes {_count(len(failing), 'case')} that failed at the baseline: "
            f"{_names([_key(f) for f in failing])}."
        )
    if verdict.counts.still_failing and verdict.outcome != "fail":
        count = verdict.counts.still_failing
        sentences.append(
            f"{_count(count, 'case')} still {_verb(count, 'miss', 'misses')} {_their(count)} thresholds in some "
            "repetition, as at the baseline."
        )
    return " ".join(sentences)


def _main(verdict: Verdict) -> str:
    if verdict.outcome == "error":
        if any(f.kind == "nothing_compared" for f in verdict.findings):
            return "No verdict: no case was comparable with the baseline, so nothing was compared (see below for why)."
        return "No verdict: no baseline could be made, so nothing was compared (see below for why)."
    if verdict.outcome == "fail":
        return _failure(verdict)
    if verdict.outcome == "pass":
        return _passed(verdict)
    return _inconclusive(verdict)


def _failure(verdict: Verdict) -> str:
    blocking = verdict.blocking()
    lead, lead_kind = _lead(verdict, blocking)
    others = {f.kind for f in blocking} - {lead_kind}
    if lead_kind == "newly_broken":
        # The pass-rate regression and the newly broken cases are one piece of evidence seen twice.
        others.discard("regression")
    if len(blocking) > 1 and others:
        lead += f" Other blocking problems: {', '.join(sorted(k.replace('_', ' ') for k in others))}."
    return lead


def _lead(verdict: Verdict, blocking: Sequence[Finding]) -> tuple[str, str]:
    """The sentence a failed verdict leads with, and the kind of finding it speaks for (most telling first)."""
    kinds = {f.kind for f in blocking}
    gated = {m.metric: m for m in verdict.metrics if m.gated}
    if any(f.kind == "error" and f.metric == ERROR_RATE_METRIC for f in blocking):
        m = gated.get(ERROR_RATE_METRIC)
        lead = (
            f"More runs error: {_pct(m.baseline_mean)} → {_pct(m.current_mean)} of repetitions errored, more than "
            "the baseline's errors explain."
            if m is not None
            else "More runs error than at the baseline."
        )
        return lead, "error"
    if "newly_broken" in kinds and verdict.newly_broken is not None:
        lead = _newly_broken(verdict, verdict.newly_broken.cases)
        rate = gated.get(CASE_PASS_METRIC)
        if rate is not None and rate.baseline_mean is not None and rate.current_mean is not None and rate.delta:
            lead += f" Repetitions passing: {_pct(rate.baseline_mean)} → {_pct(rate.current_mean)}."
        return lead, "newly_broken"
    if "regression" in kinds:
        finding = next(f for f in blocking if f.kind == "regression")
        # At a second look the suspects' own test speaks for them (a blocking newly_broken leads instead).
        broken = verdict.newly_broken.cases if verdict.newly_broken is not None and verdict.confirmation is None else []
        if finding.metric == CASE_PASS_METRIC and broken:
            # The pass rate fell and these cases died: name them first, the rate follows (one piece of evidence).
            return f"{_newly_broken(verdict, broken)} {_regression(finding, gated)}", "regression"
        return _regression(finding, gated), "regression"
    if "must_pass" in kinds:
        cases = _keys_of(blocking, "must_pass")
        return f"Must-pass {_plural_word(len(cases), 'case')} failed: {_names(cases)}.", "must_pass"
    if "threshold" in kinds:
        cases = _keys_of(blocking, "threshold")
        lead = f"{_count(len(cases), 'case')} {_verb(len(cases), 'miss', 'misses')} {_their(len(cases))} thresholds: {_names(cases)}."
        if any(f.kind == "no_baseline" for f in verdict.findings):
            lead += " (There is no base side to compare with, so the thresholds alone decide.)"
        return lead, "threshold"
    if "error" in kinds:
        cases = _keys_of(blocking, "error")
        if cases:
            return f"{_count(len(cases), 'case')} errored: {_names(cases)}.", "error"
        return next(f for f in blocking if f.kind == "error").message, "error"
    if "missing_case" in kinds:
        cases = _keys_of(blocking, "missing_case")
        return (
            f"{_count(len(cases), 'case')} {_verb(len(cases), 'have', 'has')} no results: {_names(cases)}.",
            "missing_case",
        )
    if kinds & {"cost", "latency"}:
        finding = next(f for f in blocking if f.kind in ("cost", "latency"))
        what = "Cost" if finding.kind == "cost" else "Latency"
        ratio = f" ×{finding.effect:.2f} per case" if finding.effect is not None else ""
        return f"{what} rose{ratio}, more than allowed.", finding.kind
    if "no_baseline" in kinds:
        return "There is no baseline to compare with, and the policy fails without one.", "no_baseline"
    if "inconclusive" in kinds:
        return "Not enough evidence either way, and strict mode fails an undecided comparison.", "inconclusive"
    if blocking:
        return blocking[0].message, blocking[0].kind
    return "The gate failed.", ""


def _newly_broken(verdict: Verdict, cases: Sequence[str]) -> str:
    """`1 case passed 3 of 3, now 0 of 3: a.`, with `It always passed on the base branch before.` only when its
    recorded flip rate is 0 (module docstring)."""
    diagnostics = {f"{d.eval_set_id}/{d.case_id}": d for d in verdict.cases}
    found = [diagnostics[name] for name in cases if name in diagnostics]
    counts = {(d.baseline_passes, d.baseline_k, d.current_passes, d.current_k) for d in found}
    if len(found) == len(cases) and len(counts) == 1:
        passes_before, k_before, passes_now, k_now = counts.pop()
        moved = f"passed {passes_before} of {k_before}, now {passes_now} of {k_now}"
    else:
        moved = "passed every repetition at the baseline, now none"
    confirmed = verdict.confirmation
    if confirmed is not None and cases and set(cases) <= set(confirmed.still_broken):
        r = confirmed.repetitions
        moved += f", and again 0 of {r} ({r} of {r} at the baseline) when re-run"
    text = f"{_count(len(cases), 'case')} {moved}: {_names(cases)}."
    if cases and len(found) == len(cases) and all(_never_flipped(d) for d in found):
        text += f" {'It' if len(cases) == 1 else 'Each'} always passed on the base branch before."
    return text


def _never_flipped(diagnostic: CaseDiagnostic) -> bool:
    """The base branch's history has the case and it never changed outcome there (flip rate 0)."""
    return diagnostic.flip_rate is not None and diagnostic.flip_rate == 0.0


def _regression(finding: Finding, gated: dict[str, MetricComparison]) -> str:
    m = gated.get(finding.metric or "")
    if m is None or m.baseline_mean is None or m.current_mean is None or m.delta is None:
        return f"{finding.metric or 'A gated metric'} got worse, more than noise explains."
    if m.metric == CASE_PASS_METRIC:
        return (
            f"Fewer runs pass: {_pct(m.baseline_mean)} → {_pct(m.current_mean)} of repetitions over "
            f"{_count(m.n_cases, 'case')} ({100 * m.delta:+.1f} points), more than noise explains."
        )
    direction = "rose" if not m.higher_is_better else "fell"
    return (
        f"{m.metric} {direction} from {m.baseline_mean:.3f} to {m.current_mean:.3f} over {_count(m.n_cases, 'case')} "
        f"({m.delta:+.3f}), more than noise explains."
    )


def _passed(verdict: Verdict) -> str:
    gated = [m for m in verdict.metrics if m.gated and not m.guard]
    if not gated:
        return "Every case met its thresholds (a first run: there is no base side to compare with yet)."
    m = gated[0]
    if m.baseline_mean is None or m.current_mean is None:
        return "No regression found."
    if m.metric == CASE_PASS_METRIC:
        return (
            f"No regression: {_pct(m.current_mean)} of repetitions pass, against {_pct(m.baseline_mean)} at the "
            f"baseline, over {_count(m.n_cases, 'case')} (within the {100 * m.delta_ni:g}-point margin)."
        )
    return (
        f"No regression: {m.metric} {m.baseline_mean:.3f} → {m.current_mean:.3f} over {_count(m.n_cases, 'case')}, "
        f"within the {m.delta_ni:g} margin."
    )


def _inconclusive(verdict: Verdict) -> str:
    if verdict.baseline is None and any(f.kind == "no_baseline" for f in verdict.findings):
        return "No baseline to compare with, so no regression check ran; the absolute checks passed."
    if verdict.counts.compared == 0:
        return "Nothing could be compared: no case is the same on both sides."
    pending = [m for m in verdict.metrics if m.gated and not m.guard and m.verdict == "inconclusive"]
    if not pending:
        return "Not enough evidence either way."
    m = pending[0]
    if m.baseline_mean is None or m.current_mean is None or m.delta is None:
        return f"Not enough evidence either way: {m.metric} could not be compared."
    if m.metric == CASE_PASS_METRIC:
        moved = (
            f"{_pct(m.current_mean)} of repetitions pass, {_pct(m.baseline_mean)} at the baseline "
            f"({100 * m.delta:+.1f} points over {_count(m.n_cases, 'case')})"
        )
    else:
        moved = f"{m.metric} {m.baseline_mean:.3f} → {m.current_mean:.3f} over {_count(m.n_cases, 'case')}"
    if m.frame == "suite" and m.advice:
        tail = f"; {m.advice}"
    elif m.mde is not None and m.mde >= 1.0 and m.higher_is_better:
        tail = f"; {_count(m.n_cases, 'case')} are too few to detect any drop"
    elif m.mde is not None and m.metric == CASE_PASS_METRIC:
        tail = f"; this run can only detect drops of {100 * m.mde:.0f} points or more"
    elif m.mde is not None:
        tail = f"; this run can only detect drops of {m.mde:.3f} or more"
    else:
        tail = "; too few cases differ to tell"
    return f"Not enough evidence either way: {moved}{tail}."


def _keys_of(findings: Sequence[Finding], kind: str) -> list[str]:
    return list(dict.fromkeys(_key(f) for f in findings if f.kind == kind and f.case_id is not None))


def _key(finding: Finding) -> str:
    return f"{finding.eval_set_id}/{finding.case_id}" if finding.eval_set_id else str(finding.case_id)


def _names(names: Sequence[str]) -> str:
    shown = ", ".join(names[:NAMES_SHOWN])
    return shown + (f" and {len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else "")


def _count(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _plural_word(count: int, word: str) -> str:
    return word if count == 1 else word + "s"


def _verb(count: int, plural: str, singular: str | None = None) -> str:
    return plural if count != 1 else (singular or plural + "s")


def _their(count: int) -> str:
    return "its" if count == 1 else "their"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%".replace(".0%", "%")
