"""A finished case scored with a judge through the one metric contract (`metrics.evaluation`), as a run does."""

from __future__ import annotations

from collections.abc import Sequence

from evalward.judging.judged_case import Judging
from evalward.metrics.evaluation import score_case_run
from evalward.metrics.scoring_context import ScoringContext
from evalward.model import AgentOutput, CaseResult, EvalCase, MetricSpec


async def judge_case(
    case: EvalCase, specs: Sequence[MetricSpec], outputs: Sequence[AgentOutput], judging: Judging
) -> CaseResult:
    context = ScoringContext(eval_set_id="e2e", case=case, repetition=0, specs=specs, outputs=outputs, judge=judging)
    return await score_case_run(context)
