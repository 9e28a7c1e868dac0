"""Top up an inconclusive verdict: run its uncertain cases again, then decide once more (docs/gate.md §6).

An inconclusive gated metric saw no drop it could call a regression, but its interval still admits one larger
than δ_ni. Rather than leave a pull request undecided, the gate spends a bounded number of agent runs where they
can settle it (the policy's `top_up`):

- **Which cases.** Compared cases whose result is uncertain: *discordant* ones (their mean on an inconclusive
  metric differs between the sides: they carry the difference), largest difference first, then *flaky* ones
  (mixed results on a side). A case that gave the same result every time on both sides is not run again: more
  of the same narrows nothing, and when every case is like that only more cases can help (the report's
  "cases needed").
- **How much.** Each chosen case is raised to `max_repetitions` (k_max) on the current side and gets the same
  number of extra repetitions on the base side, run on demand at the merge-base, interleaved with the current
  side's, when the base side can run here; cases are taken in order while the agent runs fit `max_runs`.
- **What may change.** This is a second look at the same comparison, with no α-spending rule, so the extra
  runs may narrow the interval but never make a regression: the second verdict stands when it passes
  (non-inferiority shown) or stays inconclusive; when it would block, the first (inconclusive) verdict stands,
  with a warning saying what the second look saw.

The added repetitions are the second verdict's evidence (its `top_up` record says what ran); they are not
stored as runs of their own, so the stored runs stay as the run and the base side made them.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from evalward.model import CaseResult, RunResult
from evalward.model.records import in_key_order, iter_record_keys, joined
from evalward.model.verdict import CaseDiagnostic, Finding, TopUp, Verdict

if TYPE_CHECKING:
    from evalward._gating.flow import BaselinePlan, GateOutcome
    from evalward._pipeline import PreparedRun
    from evalward.gate import GatePolicy

CaseKey = tuple[str, str]

_NOT_COMPARED = frozenset({"new", "removed", "changed"})


@dataclass(frozen=True)
class TopUpPlan:
    """The cases to run again, most uncertain first, and how many more repetitions each gets on each side."""

    cases: tuple[CaseKey, ...]
    extra_repetitions: int
    base_side: bool
    """Whether the base side runs the extra repetitions too (it can run here)."""

    @property
    def agent_runs(self) -> int:
        return len(self.cases) * self.extra_repetitions * (2 if self.base_side else 1)


def inconclusive_metrics(verdict: Verdict) -> list[str]:
    """The gated metrics (guards excepted: they never make a verdict inconclusive) left inconclusive."""
    return [m.metric for m in verdict.metrics if m.gated and not m.guard and m.verdict == "inconclusive"]


def _blocking_besides_strict(verdict: Verdict) -> list[Finding]:
    """The blocking findings other than `strict`'s (which fails an inconclusive verdict and is not evidence)."""
    return [f for f in verdict.findings if f.severity == "blocking" and f.kind != "inconclusive"]


def undecided(verdict: Verdict) -> bool:
    """Inconclusive on a gated metric with nothing else blocking (under `strict` its outcome is `fail`)."""
    return (
        verdict.outcome in ("inconclusive", "fail")
        and bool(inconclusive_metrics(verdict))
        and not _blocking_besides_strict(verdict)
    )


def _discord(case: CaseDiagnostic, metrics: Sequence[str]) -> float:
    """The largest |c_i − b_i| of the case over `metrics` (0 when no metric was scored on both sides)."""
    gaps = [
        abs(current - baseline)
        for metric in metrics
        if (current := case.current_scores.get(metric)) is not None
        and (baseline := case.baseline_scores.get(metric)) is not None
    ]
    return max(gaps, default=0.0)


def _mixed(passes: int | None, repetitions: int | None) -> bool:
    return passes is not None and repetitions is not None and 0 < passes < repetitions


def uncertain_cases(verdict: Verdict) -> list[CaseKey]:
    """The compared cases worth running again (module docstring), most uncertain first: discordant cases by
    their largest difference, then flaky ones; ties in case order."""
    metrics = inconclusive_metrics(verdict)
    ranked: list[tuple[float, int, CaseKey]] = []
    for case in verdict.cases:
        if case.label in _NOT_COMPARED or case.quarantined:
            continue
        discord = _discord(case, metrics)
        flaky = (
            case.label == "flaky"
            or _mixed(case.current_passes, case.current_k)
            or _mixed(case.baseline_passes, case.baseline_k)
        )
        if discord > 0 or flaky:
            ranked.append((-discord, 0 if discord > 0 else 1, (case.eval_set_id, case.case_id)))
    ranked.sort()
    return [key for _, _, key in ranked]


def plan_top_up(
    verdict: Verdict, policy: GatePolicy, *, repetitions: int, base_side: bool
) -> tuple[TopUpPlan | None, str]:
    """What to run again for `verdict` under `policy.top_up` (None, and why not, when nothing should run).
    `repetitions`: the current run's repetitions per case."""
    settings = policy.top_up
    if not undecided(verdict):
        return None, "the verdict is not an inconclusive comparison"
    if settings.max_repetitions == 0 or settings.max_runs == 0:
        return None, "the top-up is turned off (gate.top_up)"
    current_k = max([repetitions, *(c.current_k or 0 for c in verdict.cases)])
    extra = settings.max_repetitions - current_k
    if extra <= 0:
        return None, (
            f"the cases already ran {current_k} times, the top-up's limit (gate.top_up.max_repetitions = "
            f"{settings.max_repetitions})"
        )
    candidates = uncertain_cases(verdict)
    if not candidates:
        return None, (
            "every compared case gave the same result each time on both sides, so more repetitions cannot settle "
            "it: only more cases can"
        )
    per_case = extra * (2 if base_side else 1)
    fit = settings.max_runs // per_case
    if fit == 0:
        return None, (
            f"one case needs {per_case} agent runs, more than the budget (gate.top_up.max_runs = {settings.max_runs})"
        )
    return TopUpPlan(cases=tuple(candidates[:fit]), extra_repetitions=extra, base_side=base_side), ""


def next_repetitions(run: RunResult, cases: Sequence[CaseKey]) -> int:
    """The first repetition number none of `cases` has used in `run` (the top-up numbers its runs from here)."""
    wanted = set(cases)
    return max((key[2] + 1 for key in iter_record_keys(run.cases) if (key[0], key[1]) in wanted), default=0)


def with_more_repetitions(run: RunResult, extra: Sequence[CaseResult]) -> RunResult:
    """`run` with `extra` results added as further repetitions of their cases; a repetition number the run has
    already used is a programming error (the top-up numbers its runs after the run's own)."""
    if not extra:
        return run
    wanted = {(r.eval_set_id, r.case_id) for r in extra}
    used = {key for key in iter_record_keys(run.cases) if (key[0], key[1]) in wanted}
    clashes = [r.key for r in extra if r.key in used]
    if clashes:
        raise ValueError(f"the top-up reused repetition numbers of the run: {clashes[:3]}")
    return run.model_copy(update={"cases": in_key_order(joined(run.cases, list(extra)))})


def top_up(
    outcome: GateOutcome,
    prepared: PreparedRun,
    policy: GatePolicy,
    plan: BaselinePlan,
    *,
    base_branch: str | None,
    repo_dir: Path | None,
) -> GateOutcome:
    """`outcome` decided again with more repetitions of its uncertain cases (module docstring); `outcome`
    itself when nothing should or could run. The stored runs are not changed."""
    from evalward._gating.flow import start_base_side
    from evalward._pipeline import run_pair

    first = outcome.verdict
    if outcome.baseline is None or not undecided(first):
        return outcome
    base_side = (
        plan.base_side_possible and plan.problem is None and plan.merge_base is not None and repo_dir is not None
    )
    chosen, why_not = plan_top_up(first, policy, repetitions=prepared.options.repeat, base_side=base_side)
    if chosen is None:
        record = TopUp(first_outcome=first.outcome, message=f"No top-up: {why_not}.")
        return _replace_verdict(outcome, first.model_copy(update={"top_up": record}))
    subset = _subset(prepared, chosen, first_repetition=next_repetitions(outcome.current, chosen.cases))
    with ExitStack() as stack:
        base = None
        if chosen.base_side and repo_dir is not None:
            base_plan = replace(plan, base_side_cases=list(chosen.cases), problem=None)
            base = start_base_side(stack, subset, base_plan, base_branch=base_branch, repo_dir=repo_dir)
            if base is not None:
                first_base = next_repetitions(outcome.baseline, chosen.cases)
                base[0].options = replace(base[0].options, first_repetition=first_base)
        try:
            runs = run_pair(subset, base, store=None)
        except Exception as exc:  # the first verdict stands; the failure is reported, never a crash of the gate
            record = TopUp(
                cases=_names(chosen.cases),
                extra_repetitions=chosen.extra_repetitions,
                first_outcome=first.outcome,
                message=f"The top-up could not run ({type(exc).__name__}: {str(exc)[:300]}); the first verdict stands.",
            )
            return _replace_verdict(outcome, first.model_copy(update={"top_up": record}))
    if runs.current.status == "cancelled":
        raise KeyboardInterrupt  # the job was cancelled while topping up: as for the run itself
    if runs.current.status != "complete":
        record = TopUp(
            cases=_names(chosen.cases),
            extra_repetitions=chosen.extra_repetitions,
            first_outcome=first.outcome,
            message=f"The top-up run ended {runs.current.status}; the first verdict stands.",
        )
        return _replace_verdict(outcome, first.model_copy(update={"top_up": record}))
    base_results = list(runs.base.cases) if runs.base is not None and runs.base.status == "complete" else []
    current_results = list(runs.current.cases)
    second = _decide_again(outcome, policy, plan, current_results, base_results)
    record = TopUp(
        cases=_names(chosen.cases),
        extra_repetitions=chosen.extra_repetitions,
        current_runs=len(current_results),
        baseline_runs=len(base_results),
        first_outcome=first.outcome,
        second_outcome=second.outcome,
    )
    what = (
        f"{_count(len(chosen.cases), 'uncertain case')} ran {chosen.extra_repetitions} more "
        f"{'time' if chosen.extra_repetitions == 1 else 'times'} "
        + ("on each side" if base_results else "on this side (the base side could not run here)")
        + f" ({_count(len(current_results) + len(base_results), 'agent run')})"
    )
    if second.outcome != "error" and not _blocking_besides_strict(second):
        record = record.model_copy(
            update={"kept": "second", "message": f"Inconclusive at first; {what}, and the gate decided again."}
        )
        verdict = second.model_copy(
            update={
                "baseline": first.baseline,
                "top_up": record,
                "headline": f"{second.headline} (Decided after a top-up: {what}.)",
            }
        )
        return _replace_verdict(outcome, verdict)
    if second.outcome == "error":
        message = f"Inconclusive at first; {what}, but with them the gate reached no verdict: the first one stands."
    else:
        seen = "; ".join(f.message.rstrip(".") for f in _blocking_besides_strict(second)[:3])
        message = (
            f"Inconclusive at first; {what}. With them the gate would block ({seen}), but a second look without an "
            "α-spending rule may only narrow the interval, never make a regression: the first verdict stands. Run "
            "more repetitions from the start (`repeat`) to settle it."
        )
    record = record.model_copy(update={"kept": "first", "message": message})
    warning = Finding(kind="inconclusive", severity="warning", message=message[:1500])
    findings = _after_blocking(first.findings, warning)
    verdict = first.model_copy(
        update={
            "top_up": record,
            "findings": findings,
            "headline": f"{first.headline} A top-up saw a possible drop it may not block on: see below.",
        }
    )
    return _replace_verdict(outcome, verdict)


def _decide_again(
    outcome: GateOutcome,
    policy: GatePolicy,
    plan: BaselinePlan,
    current_results: Sequence[CaseResult],
    base_results: Sequence[CaseResult],
) -> Verdict:
    from evalward.gate import decide

    assert outcome.baseline is not None
    current = with_more_repetitions(outcome.current, current_results)
    baseline = with_more_repetitions(outcome.baseline, base_results)
    return decide(current, baseline, policy, flip_rates=plan.flip_rates or None)


def _subset(prepared: PreparedRun, chosen: TopUpPlan, *, first_repetition: int) -> PreparedRun:
    """The current run's instrument and agent for the chosen cases only, `extra_repetitions` times each,
    numbered from `first_repetition`."""
    from evalward._gating.base_side import select_cases
    from evalward._pipeline import PreparedRun as Prepared

    options = replace(
        prepared.options,
        repeat=chosen.extra_repetitions,
        first_repetition=first_repetition,
        run_id=None,
        shard=None,
        case_patterns=[],
        sample=None,
    )
    return Prepared(
        options=options, sets=select_cases(prepared.sets, chosen.cases), warnings=[], judges=prepared.judges
    )


def _replace_verdict(outcome: GateOutcome, verdict: Verdict) -> GateOutcome:
    from evalward._gating.flow import GateOutcome

    return GateOutcome(current=outcome.current, baseline=outcome.baseline, verdict=verdict, search=outcome.search)


def _after_blocking(findings: Sequence[Finding], warning: Finding) -> list[Finding]:
    """`warning` placed first among the warnings (findings are ordered blocking, warning, info)."""
    at = next((i for i, f in enumerate(findings) if f.severity != "blocking"), len(findings))
    return [*findings[:at], warning, *findings[at:]]


def _names(cases: Sequence[CaseKey]) -> list[str]:
    return [f"{eval_set_id}/{case_id}" for eval_set_id, case_id in cases]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
