"""The top-up: run the agent again for the second look, where the agent is at hand (docs/gate.md §6).

What to run and how to decide are pure (`gate.sequential.plan_top_up`, `gate.second_look_rules.run_second_look`); this
module runs the agents. The suspects' confirmations and the even repetitions run through the same pipeline as the run itself, the
current side with the run's agent and instrument, the base side at the merge-base in a worktree with its own agent,
interleaved under one concurrency limit (`_pipeline.run_pair`). The added repetitions are numbered after the run's
own, so an agent seeded by the repetition draws new samples. They are the second look's evidence, not runs of their
own: the history keeps the run and the base side as they ran.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from evalward._gating.base_side import select_cases, start_base_side
from evalward._pipeline import PreparedRun, run_pair
from evalward.gate import decide
from evalward.gate.gate_context import single_look
from evalward.gate.second_look_rules import run_second_look
from evalward.gate.sequential import TopUpPlan, blocking_besides_strict, plan_top_up, undecided_metrics
from evalward.model import CaseResult
from evalward.model.cases import CaseKey
from evalward.model.verdict import TopUp, Verdict

if TYPE_CHECKING:
    from evalward._gating.flow import BaselinePlan, GateOutcome
    from evalward.gate import GatePolicy

REPLAY_PREFIX = "replay:"
"""A replay agent answers from its recordings: more repetitions would only repeat them."""


def agent_can_run_again(prepared: PreparedRun | None) -> bool:
    """Whether a second look is possible here: the run's agent and eval sets are at hand, and the agent draws anew.
    Known before the first look, so the first look can be given its share of α (`gate.sequential.plan_looks`)."""
    return prepared is not None and not prepared.options.agent.startswith(REPLAY_PREFIX)


class TopUpFailed(Exception):
    """The top-up could not run to the end; the first look's verdict stands."""


def top_up(
    outcome: GateOutcome,
    prepared: PreparedRun,
    policy: GatePolicy,
    plan: BaselinePlan,
    *,
    base_branch: str | None,
    repo_dir: Path | None,
) -> GateOutcome:
    """`outcome` decided at the second look when the first one planned it and left something open (module
    docstring); `outcome` itself, with a note on why, when nothing should or could run."""
    first = outcome.verdict
    if outcome.baseline is None or first.look is None:
        return outcome
    if first.look.planned < 2:
        if not undecided_metrics(first) or blocking_besides_strict(first):
            return outcome
        why = (
            "the top-up is turned off (gate.top_up)"
            if not policy.top_up.enabled
            else "a replay: agent answers from its recordings, so more repetitions would draw nothing new"
        )
        record = TopUp(
            first_outcome=first.outcome,
            message=f"No top-up: {why}, so the first look was the only one, at the whole α.",
        )
        return _with_verdict(outcome, first.model_copy(update={"top_up": record}))
    base_side = (
        plan.base_side_possible and plan.problem is None and plan.merge_base is not None and repo_dir is not None
    )
    # Reading every result for their cost only when there is a cost budget to turn into runs.
    cost_per_run = _cost_per_run(outcome) if policy.top_up.max_cost_usd is not None else None
    chosen, why_not = plan_top_up(
        first, policy, repetitions=prepared.options.repeat, base_side=base_side, cost_per_run=cost_per_run
    )
    if chosen is None:
        if first.outcome == "pass" or first.outcome == "error":
            return outcome
        record = TopUp(first_outcome=first.outcome, message=f"No top-up: {why_not}.")
        return _with_verdict(outcome, first.model_copy(update={"top_up": record}))
    with ExitStack() as stack:
        runner = _Runner(stack, prepared, plan, chosen, base_branch=base_branch, repo_dir=repo_dir)
        try:
            second = run_second_look(
                first, outcome.current, outcome.baseline, policy, chosen, runner.run, flip_rates=plan.flip_rates
            )
        except TopUpFailed as exc:
            why = f"The top-up could not run to the end ({exc})"
            return _with_verdict(outcome, _one_look(outcome, policy, plan, why))
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # one look decides; the failure is reported, never a crash of the gate
            why = f"The top-up could not run ({type(exc).__name__}: {str(exc)[:300]})"
            return _with_verdict(outcome, _one_look(outcome, policy, plan, why))
    runs = first.agent_runs
    if runs is not None and second.top_up is not None:
        runs = runs.model_copy(
            update={"top_up_current": second.top_up.current_runs, "top_up_baseline": second.top_up.baseline_runs}
        )
    return _with_verdict(outcome, second.model_copy(update={"baseline": first.baseline, "agent_runs": runs}))


class _Runner:
    """Runs one part of the top-up (`gate.second_look_rules.RunMore`): the chosen cases, numbered from a repetition, on the
    current side and, when asked, on the base side at the merge-base in a worktree."""

    def __init__(
        self,
        stack: ExitStack,
        prepared: PreparedRun,
        plan: BaselinePlan,
        chosen: TopUpPlan,
        *,
        base_branch: str | None,
        repo_dir: Path | None,
    ) -> None:
        self.stack, self.prepared, self.plan, self.chosen = stack, prepared, plan, chosen
        self.base_branch, self.repo_dir = base_branch, repo_dir

    def run(
        self, cases: Sequence[CaseKey], first_repetition: int, repetitions: int, base_side: bool
    ) -> tuple[list[CaseResult], list[CaseResult]]:
        if not cases or repetitions <= 0:
            return [], []
        subset = _subset(self.prepared, cases, repetitions, first_repetition=first_repetition)
        base = None
        if base_side:
            if self.repo_dir is None:
                raise TopUpFailed("the base side cannot run without a checkout")
            base_plan = replace(self.plan, base_side_cases=list(cases), problem=None)
            base = start_base_side(self.stack, subset, base_plan, base_branch=self.base_branch, repo_dir=self.repo_dir)
            if base is None:
                raise TopUpFailed(f"the base side could not run: {base_plan.problem or 'unknown reason'}")
            base[0].options = replace(base[0].options, repeat=repetitions, first_repetition=first_repetition)
        runs = run_pair(subset, base, store=None)
        if runs.current.status == "cancelled":
            raise KeyboardInterrupt  # the job was cancelled while topping up: as for the run itself
        if runs.current.status != "complete":
            raise TopUpFailed(f"the top-up run ended {runs.current.status}")
        if base_side and (runs.base is None or runs.base.status != "complete"):
            raise TopUpFailed(f"the base side's top-up ended {runs.base.status if runs.base else runs.base_error}")
        return list(runs.current.cases), list(runs.base.cases) if runs.base is not None else []


def _cost_per_run(outcome: GateOutcome) -> float | None:
    """The mean recorded cost (US dollars) of one agent run of the current run; None when none was recorded."""
    costs = [
        result.usage.cost_usd
        for result in outcome.current.cases  # one record at a time: a large run's records stay in their file
        if result.usage is not None and result.usage.cost_usd is not None
    ]
    return sum(costs) / len(costs) if costs else None


def _one_look(outcome: GateOutcome, policy: GatePolicy, plan: BaselinePlan, why: str) -> Verdict:
    """The first look decided again as the only one, at the whole α, when the planned second could not run (`why`).

    Whether the top-up can run (a checkout, an agent that starts) does not depend on what the first look saw, so
    giving the first look back the second's share keeps the false-alarm rate at α; the top-up's partial results,
    if any, are not used."""
    first = outcome.verdict
    assert outcome.baseline is not None
    alone = decide(
        outcome.current, outcome.baseline, policy, flip_rates=plan.flip_rates or None, look=single_look(policy)
    )
    record = TopUp(
        first_outcome=first.outcome,
        second_outcome=None,
        message=f"{why}; the first look was the only one, at the whole α.",
    )
    return alone.model_copy(
        update={
            "baseline": first.baseline,
            "agent_runs": first.agent_runs,
            "top_up": record,
            "headline": f"{alone.headline} {why}: one look decided.",
        }
    )


def _subset(prepared: PreparedRun, cases: Sequence[CaseKey], repetitions: int, *, first_repetition: int) -> PreparedRun:
    """The current run's instrument and agent for `cases` only, `repetitions` times each, numbered from
    `first_repetition`."""
    options = replace(
        prepared.options,
        repeat=repetitions,
        first_repetition=first_repetition,
        run_id=None,
        shard=None,
        case_patterns=[],
        sample=None,
    )
    return PreparedRun(options=options, sets=select_cases(prepared.sets, cases), warnings=[], judges=prepared.judges)


def _with_verdict(outcome: GateOutcome, verdict: Verdict) -> GateOutcome:
    return replace(outcome, verdict=verdict)
