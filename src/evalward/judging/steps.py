"""Judged teacher-forced steps: ask the judge where `metrics.step_judge` says to, and read credits from it.

For each step of a turn (in order): the rules of `metrics.step_judge` decide whether the credit is known
without a judge (an error, no calls, the exact calls, calls at the final step, an empty or unreferenced
final answer); otherwise `Judging.judge_step` asks (or reads the cache) and the folded verdict is c_j.
Each step's note names the verdict; its `judge` entry keeps the verdict, the judge's reasoning and how many
samples came from the cache. A step whose judge fails (unreachable after retries, unreadable replies) has
no credit: the turn's step metrics become a judge error, never a zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalward.metrics import stepwise as sw
from evalward.metrics.scoring_context import JudgedSteps
from evalward.metrics.step_judge import answer_prompt, calls_prompt

if TYPE_CHECKING:  # `judging.judged_case` imports this module
    from evalward.judging.judged_case import Judging, ResolvedJudge


@dataclass(frozen=True)
class StepJudging:
    """The run's judge bound to the step criterion with `match: judge` (`metrics.scoring_context.StepJudge`)."""

    judging: Judging
    judge: ResolvedJudge

    @property
    def metric(self) -> str:
        return self.judge.spec.metric

    async def credits(
        self,
        reference: sw.Reference,
        actions: Sequence[sw.NextAction],
        *,
        request: str,
        reference_answer: str | None,
        final_check: sw.FinalCheck,
    ) -> JudgedSteps:
        return await judged_credits(
            reference,
            actions,
            request=request,
            reference_answer=reference_answer,
            final_check=final_check,
            judging=self.judging,
            judge=self.judge,
        )


def _verdict(result_details: dict[str, Any], ok: bool, similar: bool) -> str:
    label = ("SIMILAR" if ok else "DIFFERENT") if similar else ("CORRECT" if ok else "INCORRECT")
    samples = result_details.get("samples") or []
    if len(samples) > 1:
        agreeing = sum(1 for sample in samples if (sample.get("value") == 1.0) == ok)
        label += f" ({agreeing}/{len(samples)} samples)"
    return label


async def judged_credits(
    reference: sw.Reference,
    actions: Sequence[sw.NextAction],
    *,
    request: str,
    reference_answer: str | None,
    final_check: sw.FinalCheck,
    judging: Judging,
    judge: ResolvedJudge,
) -> JudgedSteps:
    """The credits of one turn's teacher-forced `actions` (action j-1 is step j) under `match: judge`."""
    out = JudgedSteps()
    for j, action in enumerate(actions, start=1):
        final = j > reference.m
        expected = None if final else reference.steps[j - 1]
        answer = (action.response or "").strip()
        if (
            action.error is not None
            or (expected is not None and (not action.calls or sw.same_multiset(action.calls, expected.calls)))
            or (final and (bool(action.calls) or not answer or reference_answer is None))
        ):
            credit, note = sw.step_credit(j, reference, action, final_check)
            if expected is not None and credit == 1.0:
                note += " (exact match: no judge asked)"
            out.credits.append(credit)
            out.notes.append(note)
            out.details.append({})
            continue
        if expected is not None:
            prompt = calls_prompt(request, expected.calls, action.calls)
        else:
            assert reference_answer is not None
            prompt = answer_prompt(request, reference_answer, answer)
        result = await judging.judge_step(judge, prompt)
        if result.status == "error" or result.score is None:
            return JudgedSteps(out.credits, out.notes, out.details, error=f"step {j}: {result.explanation}")
        ok = result.score == 1.0
        verdict = _verdict(result.details, ok, similar=expected is not None)
        if expected is not None:
            note = f"step {j}: {action.signature()} vs {expected.signature()}: judged {verdict} -> {int(ok)}"
        else:
            note = f"step {j} (final): {action.signature()}: judged {verdict} against the reference answer -> {int(ok)}"
        out.credits.append(1.0 if ok else 0.0)
        out.notes.append(note)
        out.details.append(
            {
                "judge": {
                    "verdict": verdict,
                    "reasoning": result.details.get("reasoning", ""),
                    "cached_samples": result.details.get("cached_samples", 0),
                    "model": judge.model,
                }
            }
        )
    return out
