"""The LLM-judged metrics as a `Metric`: scored by the run's judge (`ScoringContext.judge`, `evalward.judging`).

Every judged criterion of a case is scored in one call, on the turns the agent answered: per turn (or once
per conversation, or per simulated-user turn, `judging.judged_case`), folded over the turns as the formulas in
`metrics.judge` say. A judge that fails after its retries makes the case a `judge_error`, never a zero. With
no judge (a re-scored run whose criteria judge nothing) or no answered turn there is nothing to judge. A run
with a judged criterion and no reachable judge is refused before any agent runs (`judging.judged_case`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from pydantic import BaseModel

from evalward.metrics.base import Metric
from evalward.metrics.registry import MetricUnavailable
from evalward.metrics.scoring_context import CaseScores, ScoringContext
from evalward.model import MetricSpec


class JudgedMetric(Metric):
    """Every metric of `registry.JUDGE_METRICS`."""

    name = "llm_judge"
    batch: ClassVar[str] = "judge"
    description = "LLM-judged metrics (ADK's judged and rubric metrics, answer_correctness, llm_judge)."

    @classmethod
    def options_model(cls, spec: MetricSpec) -> type[BaseModel]:
        """The options model of the criterion's kind of judgement (`judge.spec.JUDGE_OPTIONS`)."""
        from evalward.metrics.judge.spec import (  # start-up: the judge's options, only when a criterion is judged
            JUDGE_OPTIONS,
            JUDGED_METRICS,
            no_judge_message,
        )

        kind = JUDGED_METRICS.get(spec.name)
        if kind is None:
            raise MetricUnavailable(no_judge_message(spec.name))
        return JUDGE_OPTIONS[kind]

    async def evaluate(self, specs: Sequence[MetricSpec], ctx: ScoringContext) -> CaseScores:
        if ctx.judge is None or not ctx.outputs:
            return CaseScores()
        return await ctx.judge.score_judged(ctx.case, specs, ctx.outputs)
