"""Top up an inconclusive verdict: run its cases again, then decide once more (docs/gate.md §6).

An inconclusive gated metric saw no drop it could call a regression, but its interval still admits one larger
than δ_ni. Rather than leave a pull request undecided, the gate spends a bounded number of agent runs on more
repetitions and decides again (the policy's `top_up`):

- **Which cases, how many.** One more repetition of a case at k cuts its variance by 1/(k(k+1)) of one run's, most
  at small k, so the budget is spread: every compared case gets the same number of extra repetitions, up to
  `max_repetitions` (k_max) and within `max_runs` agent runs (both sides counted); when the budget cannot give
  each case one, the cases known to flip on the base branch go first, then an order drawn from the verdict's
  seed. Never the cases this comparison found discordant: topping up only those shrinks Δ̂ toward zero
  (`top_up_order`). The base side, run on demand at the merge-base and interleaved with the current side, gets
  the same repetitions when it can run here; else the current side alone.
- **What may change.** This is a second look at the same comparison, with no α-spending rule, so the extra
  runs may narrow the interval but never make a regression: the second verdict stands when nothing but `strict`
  blocks it (a pass, or still inconclusive with a narrower interval); when it would block, the first
  (inconclusive) verdict stands, with a warning saying what the second look saw.

The added repetitions are numbered after the run's own (an agent seeded by the repetition draws new samples);
they are the second verdict's evidence (its `top_up` record says what ran), not stored as runs of their own, so the
stored runs stay as the run and the base side made them.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from evalward.gate.context import sub_seed
from evalward.gate.findings import case_name, plural
from evalward.gate.metric_verdicts import MIN_UNITS
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
    """The cases to run again, in `top_up_order`, and how many more repetitions each gets on each side."""

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


def top_up_order(verdict: Verdict, flaky_flip_rate: float) -> list[CaseKey]:
    """The compared cases in the order the top-up takes them: cases known to flip on the base branch first (their
    history, most flipping first), then the rest in an order drawn from the verdict's seed.

    Never ordered by this comparison's own results: rerunning only the cases that came out discordant, and
    averaging their new repetitions with the old, pulls exactly those cases toward their true difference while
    the concordant ones keep an observed difference of zero: Δ̂ shrinks toward 0, and a true drop looks smaller
    and passes (measured: `benchmarks/top_up_power.py --design targeted`). A case chosen independently of its
    results keeps its mean unbiased however many repetitions it gets."""
    compared = [c for c in verdict.cases if c.label not in _NOT_COMPARED and not c.quarantined]
    seed = sub_seed(verdict.seed, "top_up")

    def rank(case: CaseDiagnostic) -> tuple[int, float, str]:
        known = case.flip_rate is not None and case.flip_rate >= flaky_flip_rate
        draw = hashlib.sha256(f"{seed}|{case.eval_set_id}|{case.case_id}".encode()).hexdigest()
        return (0 if known else 1, -(case.flip_rate or 0.0) if known else 0.0, draw)

    return [(c.eval_set_id, c.case_id) for c in sorted(compared, key=rank)]


def plan_top_up(
    verdict: Verdict,
    policy: GatePolicy,
    *,
    repetitions: int,
    base_side: bool,
    cost_per_run: float | None = None,
) -> tuple[TopUpPlan | None, str]:
    """What to run again for `verdict` under `policy.top_up` (None, and why not, when nothing should run).
    `repetitions`: the current run's repetitions per case; `cost_per_run`: the mean recorded cost of one agent run
    (US dollars; None when the run recorded none), which turns `max_cost_usd` into runs.

    The budget goes where it narrows the interval most: one more repetition of a case at k repetitions cuts its
    variance by 1/(k(k+1)) of one run's, most at small k, so every compared case gets the same number of extra
    repetitions (as many as the budget and k_max allow); when the budget cannot give each of them one, the first
    cases of `top_up_order` get one each."""
    settings = policy.top_up
    if not undecided(verdict):
        return None, "the verdict is not an inconclusive comparison"
    if settings.max_repetitions == 0 or settings.max_runs == 0:
        return None, "the top-up is turned off (gate.top_up)"
    open_metrics = inconclusive_metrics(verdict)
    units = [m.n_clusters or m.n_cases for m in verdict.metrics if m.metric in open_metrics]
    if units and max(units) < MIN_UNITS:
        return None, (
            f"only {max(units)} independent case(s) were compared, too few for any number of repetitions to show "
            f"that nothing got worse (at least {MIN_UNITS} are needed): only more cases can"
        )
    current_k = max([repetitions, *(c.current_k or 0 for c in verdict.cases)])
    room = settings.max_repetitions - current_k
    if room <= 0:
        return None, (
            f"the cases already ran {current_k} times, the top-up's limit (gate.top_up.max_repetitions = "
            f"{settings.max_repetitions})"
        )
    order = top_up_order(verdict, policy.flaky_flip_rate)
    if not order:
        return None, "no case was compared"
    budget, budget_text = settings.max_runs, f"gate.top_up.max_runs = {settings.max_runs}"
    if settings.max_cost_usd is not None and cost_per_run:
        affordable = math.floor(settings.max_cost_usd / cost_per_run + 1e-9)
        if affordable < budget:
            budget = affordable
            budget_text = f"gate.top_up.max_cost_usd = {settings.max_cost_usd:g} at ${cost_per_run:.4g} a run"
    sides = 2 if base_side else 1
    rounds = min(room, budget // (sides * len(order)))
    if rounds >= 1:
        return TopUpPlan(cases=tuple(order), extra_repetitions=rounds, base_side=base_side), ""
    fit = budget // sides
    if fit == 0:
        return None, f"one more repetition of one case on each side is more than the budget ({budget_text})"
    return TopUpPlan(cases=tuple(order[:fit]), extra_repetitions=1, base_side=base_side), ""


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
    """`outcome` decided again with more repetitions of its compared cases (module docstring); `outcome`
    itself when nothing should or could run. The stored runs are not changed."""
    from evalward._gating.flow import start_base_side
    from evalward._pipeline import run_pair

    first = outcome.verdict
    if outcome.baseline is None or not undecided(first):
        return outcome
    base_side = (
        plan.base_side_possible and plan.problem is None and plan.merge_base is not None and repo_dir is not None
    )
    # Reading every result for their cost only when there is a cost budget to turn into runs.
    cost_per_run = _cost_per_run(outcome) if policy.top_up.max_cost_usd is not None else None
    chosen, why_not = plan_top_up(
        first, policy, repetitions=prepared.options.repeat, base_side=base_side, cost_per_run=cost_per_run
    )
    if chosen is not None and prepared.options.agent.startswith("replay:"):
        chosen, why_not = (
            None,
            "a replay: agent answers from its recordings, so more repetitions would draw nothing new",
        )
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
            why = f"The top-up could not run ({type(exc).__name__}: {str(exc)[:300]})"
            return _replace_verdict(outcome, _first_stands(first, chosen, why))
    if runs.current.status == "cancelled":
        raise KeyboardInterrupt  # the job was cancelled while topping up: as for the run itself
    if runs.current.status != "complete":
        return _replace_verdict(outcome, _first_stands(first, chosen, f"The top-up run ended {runs.current.status}"))
    base_results = list(runs.base.cases) if runs.base is not None and runs.base.status == "complete" else []
    current_results = list(runs.current.cases)
    second = _decide_again(outcome, policy, plan, current_results, base_results)
    return _replace_verdict(outcome, settle(first, second, chosen, len(current_results), len(base_results)))


def settle(first: Verdict, second: Verdict, chosen: TopUpPlan, current_runs: int, baseline_runs: int) -> Verdict:
    """The verdict that stands after a top-up (module docstring): `second` (the decision with the added
    repetitions) when nothing but `strict` blocks it, else `first` with a warning; either with its `top_up` record.
    `current_runs`, `baseline_runs`: the agent runs added on each side (0 on a side that could not run)."""
    what = (
        f"{plural(len(chosen.cases), 'case')} ran {chosen.extra_repetitions} more "
        f"{'time' if chosen.extra_repetitions == 1 else 'times'} "
        + ("on each side" if baseline_runs else "on this side (the base side could not run here)")
        + f" ({plural(current_runs + baseline_runs, 'agent run')})"
    )
    record = TopUp(
        cases=_names(chosen.cases),
        extra_repetitions=chosen.extra_repetitions,
        current_runs=current_runs,
        baseline_runs=baseline_runs,
        first_outcome=first.outcome,
        second_outcome=second.outcome,
    )
    if second.outcome != "error" and not _blocking_besides_strict(second):
        record = record.model_copy(
            update={"kept": "second", "message": f"Inconclusive at first; {what}, and the gate decided again."}
        )
        return second.model_copy(
            update={
                "baseline": first.baseline,
                "top_up": record,
                "headline": f"{second.headline} (Decided after a top-up: {what}.)",
            }
        )
    after = "A top-up saw a possible drop it may not block on: see below."
    if second.outcome == "error":
        message = f"Inconclusive at first; {what}, but with them the gate reached no verdict: the first one stands."
        after = "A top-up reached no verdict: see below."
    else:
        seen = "; ".join(f.message.rstrip(".") for f in _blocking_besides_strict(second)[:3])
        message = (
            f"Inconclusive at first; {what}. With them the gate would block ({seen}), but a second look without an "
            "α-spending rule may only narrow the interval, never make a regression: the first verdict stands. Run "
            "more repetitions from the start (`repeat`) to settle it."
        )
    record = record.model_copy(update={"kept": "first", "message": message})
    warning = Finding(kind="inconclusive", severity="warning", message=message[:1500])
    return first.model_copy(
        update={
            "top_up": record,
            "findings": _after_blocking(first.findings, warning),
            "headline": f"{first.headline} {after}",
        }
    )


def _cost_per_run(outcome: GateOutcome) -> float | None:
    """The mean recorded cost (US dollars) of one agent run of the current run; None when none was recorded."""
    costs = [
        result.usage.cost_usd
        for result in outcome.current.cases  # one record at a time: a large run's records stay in their file
        if result.usage is not None and result.usage.cost_usd is not None
    ]
    return sum(costs) / len(costs) if costs else None


def _first_stands(first: Verdict, chosen: TopUpPlan, why: str) -> Verdict:
    """`first` with a record of the top-up that was planned but did not finish (`why`)."""
    record = TopUp(
        cases=_names(chosen.cases),
        extra_repetitions=chosen.extra_repetitions,
        first_outcome=first.outcome,
        message=f"{why}; the first verdict stands.",
    )
    return first.model_copy(update={"top_up": record})


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
    return replace(outcome, verdict=verdict)


def _after_blocking(findings: Sequence[Finding], warning: Finding) -> list[Finding]:
    """`warning` placed first among the warnings (findings are ordered blocking, warning, info)."""
    at = next((i for i, f in enumerate(findings) if f.severity != "blocking"), len(findings))
    return [*findings[:at], warning, *findings[at:]]


def _names(cases: Sequence[CaseKey]) -> list[str]:
    return [case_name(key) for key in cases]
