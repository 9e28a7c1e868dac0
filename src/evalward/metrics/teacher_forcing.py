"""The step metrics as a `Metric`: teacher forcing through `ScoringContext.teacher` (docs/metrics.md §6).

For every answered turn with `reference_messages`, the teacher (the agent under test) is asked for its next
action after each reference prefix (`runners.teacher_forcing_driver`); each answer's first step is compared with the
reference step exactly (`metrics.stepwise.step_credit`), or by the judge when a step criterion says
`match: judge` (`metrics.step_judge`; a judge that fails makes the step metrics a judge error). The normal
run's output gives the free-running survival. Formulas: `metrics.stepwise`.

The step metrics share one set of teacher-forced answers, so they are scored together: every step metric is
reported for a case with a reference (informational unless a criterion names it, mode `auto`), none when no
turn has one and no criterion names them, or the mode is `off`. Without a teacher (a stored run re-scored:
the agent is not there) the step results of `ctx.recorded` are kept as they were.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import BaseModel

from evalward.metrics.base import Metric
from evalward.metrics.metric_options import OptionProblem, unit_threshold
from evalward.metrics.registry import is_stepwise
from evalward.metrics.scoring_context import CaseScores, ScoringContext
from evalward.metrics.step_judge import step_judge_spec, step_options_model
from evalward.model import CaseError, CaseResult, Message, MetricResult, MetricSpec


class StepMetric(Metric):
    """Every teacher-forcing metric (`metrics.registry.STEPWISE_METRICS`, aliases included)."""

    name = "teacher_forcing"
    batch: ClassVar[str] = "teacher_forcing"
    scores_without_criteria: ClassVar[bool] = True
    description = "Teacher-forced step metrics: step accuracy, survival and free-running comparisons."

    @classmethod
    def options_model(cls, spec: MetricSpec) -> type[BaseModel]:
        return step_options_model(spec)

    @classmethod
    def threshold_problem(cls, spec: MetricSpec) -> OptionProblem | None:
        """A share of steps lies between 0 and 1, and so does its threshold; a step index has no bound."""
        from evalward.metrics import stepwise as sw  # start-up: the step scorers, only for step criteria

        if spec.threshold is None or spec.name not in sw.BOUNDED_METRICS:
            return None
        return unit_threshold(spec.name, spec.threshold)

    async def evaluate(self, specs: Sequence[MetricSpec], ctx: ScoringContext) -> CaseScores:
        if ctx.teacher is None:
            return _recorded(ctx.recorded) if ctx.recorded is not None else CaseScores()
        named = {s.name: s for s in specs}
        answered = list(zip(ctx.case.turns, ctx.outputs, strict=False))
        has_reference = any(turn.reference_messages is not None for turn, _ in answered)
        if not named and (ctx.stepwise == "off" or (ctx.stepwise == "auto" and not has_reference)):
            return CaseScores()  # most cases: no step criterion and no reference trajectory to score
        # Loaded here, not with this module: every case passes through this batch, few have steps to score.
        from evalward.metrics import stepwise as sw  # start-up: the step scorers, only for step criteria

        if ctx.stepwise == "off":  # step criteria named, teacher forcing off: each reports it was not computed
            return _scores(sw.metric_results({}, named))
        judged = step_judge_spec(ctx.specs)
        judge = ctx.judge.step_judge(judged) if ctx.judge is not None and judged is not None else None
        if judged is not None and judge is None:
            message = f"{judged.name}: match: judge needs a judge model, and none is configured (--judge-model)"
            return _error(named, message)
        per_turn: dict[int, dict[str, Any]] = {}
        for index, (turn, output) in enumerate(answered):
            if turn.reference_messages is None:
                continue
            reference = sw.parse_reference(turn.reference_messages)
            lead = list(reference.lead) or [Message(role="user", content=turn.query)]
            prefixes = [reference.prefix(j) for j in range(1, reference.m + 2)]
            answers = await ctx.teacher.next_actions(index, lead, prefixes)
            final_check = sw.final_check_for(ctx.case, index, ctx.specs, reference)
            credits: list[float] = []
            notes: list[str] = []
            actions: list[sw.NextAction] = []
            for answer in answers:
                size = len(reference.steps[answer.step - 1].calls) if answer.step <= reference.m else 1
                action = (
                    sw.NextAction(error=answer.error) if answer.output is None else sw.first_step(answer.output, size)
                )
                actions.append(action)
                if judge is None:
                    credit, note = sw.step_credit(answer.step, reference, action, final_check)
                    credits.append(credit)
                    notes.append(note)
            step_details = None
            if judge is not None:
                steps = await judge.credits(
                    reference,
                    actions,
                    request=next((m.content for m in reversed(lead) if m.role == "user" and m.content), turn.query),
                    reference_answer=reference.final_response or turn.expected_response,
                    final_check=final_check,
                )
                if steps.error is not None:
                    return _error(named, f"{judge.metric} (match: judge): {steps.error}")
                credits, notes, step_details = steps.credits, steps.notes, steps.details
            per_turn[index] = sw.stepwise_scores(credits, notes, sw.free_run(output, reference), step_details)
        return _scores(sw.metric_results(per_turn, named))


def _scores(results: tuple[list[MetricResult], dict[int, list[MetricResult]]]) -> CaseScores:
    return CaseScores(results[0], results[1])


def _error(named: dict[str, MetricSpec], message: str) -> CaseScores:
    from evalward.metrics import stepwise as sw  # start-up: the step scorers, only for step criteria

    return CaseScores(sw.error_results(named, message), {}, CaseError(kind="judge_error", message=message))


def _recorded(recorded: CaseResult) -> CaseScores:
    """The step results `recorded` has (they need the agent to recompute)."""
    case_level = [m for m in recorded.metric_results if is_stepwise(m.name)]
    per_turn = {
        turn.turn: [m for m in turn.metric_results if is_stepwise(m.name)]
        for turn in recorded.invocations
        if any(is_stepwise(m.name) for m in turn.metric_results)
    }
    return CaseScores(case_level, per_turn)
