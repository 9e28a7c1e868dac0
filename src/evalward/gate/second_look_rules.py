"""The second look after a top-up (docs/gate.md §6): `gate.decide` on the first look's repetitions plus the top-up's.

What to top up and how the two looks share α are `gate.sequential`'s; this module runs the top-up through a
`RunMore` and decides, so that `gate.decide`, which reads `sequential`'s second-look inputs, and the planning
never import each other.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from evalward.gate.decide import decide
from evalward.gate.findings import case_name
from evalward.gate.policy import GatePolicy
from evalward.gate.sequential import (
    SecondLookInputs,
    TopUpPlan,
    TopUpResults,
    blocking_besides_strict,
    next_repetition,
    only,
    second,
    top_up_message,
    what_ran,
    with_more_repetitions,
)
from evalward.model import CaseResult, RunResult
from evalward.model.cases import CaseKey
from evalward.model.verdict import TopUp, Verdict


def decide_second_look(
    first: Verdict,
    current: RunResult,
    baseline: RunResult,
    policy: GatePolicy,
    plan: TopUpPlan,
    ran: TopUpResults,
    *,
    flip_rates: Mapping[CaseKey, float] | None = None,
) -> Verdict:
    """The second look (module docstring): `decide` on the first look's repetitions plus the even top-up's, with
    the aggregate tests combined with the first look's and the suspects tested on their fresh repetitions; the
    verdict carries what the top-up ran."""
    if first.look is None:
        raise ValueError("the first verdict records no look plan")
    both_sides = bool(ran.even_current) and bool(ran.even_baseline)
    confirmed = bool(ran.confirm_current) and bool(ran.confirm_baseline)
    inputs = SecondLookInputs(
        first=first,
        weight_first=plan.weight_first,
        fresh=(only(current, ran.even_current), only(baseline, ran.even_baseline)) if both_sides else None,
        confirm=(only(current, ran.confirm_current), only(baseline, ran.confirm_baseline)) if confirmed else None,
    )
    verdict = decide(
        with_more_repetitions(current, ran.even_current),
        with_more_repetitions(baseline, ran.even_baseline),
        policy,
        flip_rates=flip_rates,
        look=second(first.look),
        second=inputs,
    )
    record = TopUp(
        cases=[case_name(key) for key in plan.cases] if ran.even_current else [],
        extra_repetitions=plan.extra_repetitions if ran.even_current else 0,
        head_only=bool(ran.even_current) and not ran.even_baseline,
        confirmed_cases=[case_name(key) for key in plan.suspects] if confirmed else [],
        confirm_repetitions=plan.confirm_repetitions if confirmed else 0,
        current_runs=ran.current_runs,
        baseline_runs=ran.baseline_runs,
        first_outcome=first.outcome,
        second_outcome=verdict.outcome,
        message=top_up_message(first, verdict, plan, ran),
    )
    return verdict.model_copy(
        update={
            "top_up": record,
            "headline": f"{verdict.headline} (Decided at the second look: {what_ran(plan, ran)}.)",
        }
    )


RunMore = Callable[[Sequence[CaseKey], int, int, bool], tuple[Sequence[CaseResult], Sequence[CaseResult]]]
"""Runs the agent again: (cases, first repetition number, repetitions, base side too?) → (current results, baseline
results). The flow runs the real agents (`_gating.top_up`); the benchmark draws them (`benchmarks/gate_power.py`)."""


def run_second_look(
    first: Verdict,
    current: RunResult,
    baseline: RunResult,
    policy: GatePolicy,
    plan: TopUpPlan,
    run_more: RunMore,
    *,
    flip_rates: Mapping[CaseKey, float] | None = None,
) -> Verdict:
    """The top-up and the second look, in the order that spends fewest runs: the suspects first (cheap); when they
    break again and that alone blocks, the even repetitions are not needed; else the even repetitions, then the
    second look on everything. Repetitions are numbered after the run's own (the even ones first, then the
    confirmations), so a seeded agent draws anew."""
    touched = [*plan.cases, *plan.suspects]
    start = max(next_repetition(current, touched), next_repetition(baseline, touched))
    confirm_start = start + plan.extra_repetitions
    ran = TopUpResults()
    if plan.suspects:
        confirm_current, confirm_baseline = run_more(plan.suspects, confirm_start, plan.confirm_repetitions, True)
        ran = TopUpResults(confirm_current=list(confirm_current), confirm_baseline=list(confirm_baseline))
        early = decide_second_look(first, current, baseline, policy, plan, ran, flip_rates=flip_rates)
        if blocking_besides_strict(early) or not plan.cases:
            return early
    even_current, even_baseline = run_more(plan.cases, start, plan.extra_repetitions, not plan.head_only)
    ran = TopUpResults(
        confirm_current=ran.confirm_current,
        confirm_baseline=ran.confirm_baseline,
        even_current=list(even_current),
        even_baseline=list(even_baseline),
    )
    return decide_second_look(first, current, baseline, policy, plan, ran, flip_rates=flip_rates)
