"""A judged metric's results, as the case shows them: the result of a judge that failed, the verdict an
explanation ends with, and the case's result from its turns' results.

Case score: the mean over the turns where the judge applies (single turn: that turn's score and arithmetic);
the first turn whose judge failed makes the case's result an `error`. `per_turn_user_simulator_quality_v1`
scores the share of valid simulated-user turns, and is not applicable to a scripted case.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalward.metrics.judge.replies import JudgeReplyError
from evalward.metrics.scoring import metric_status
from evalward.model import MetricResult, MetricSpec

if TYPE_CHECKING:
    from evalward.judging.judge_client import JudgeCallError
    from evalward.judging.judged_case import ResolvedJudge


def judge_error_result(judge: ResolvedJudge, exc: JudgeCallError | JudgeReplyError) -> MetricResult:
    """The `error` result of a judge that failed, or answered something unreadable after its retries."""
    kind = "answered something unreadable" if isinstance(exc, JudgeReplyError) else "failed"
    return MetricResult(
        name=judge.spec.metric,
        score=None,
        status="error",
        explanation=f"judge {judge.model!r} {kind}: {exc}",
        details={"judge": judge.identity(), "judge_error": str(exc)},
    )


def with_verdict(explanation: str, value: float, threshold: float | None) -> str:
    """`explanation` ending with the threshold verdict (`; 0.750 >= 0.7`); as it is without a threshold."""
    if threshold is None:
        return explanation
    ok = value >= threshold
    return f"{explanation}; {value:.3f} {'>=' if ok else 'not >='} {threshold:g}"


def case_result_from_turns(spec: MetricSpec, judge: ResolvedJudge, per_turn: list[MetricResult | None]) -> MetricResult:
    """The case's result from its turns' results (module docstring): the first error, a single turn's own
    result, else the mean over the judged turns."""
    errored = [r for r in per_turn if r is not None and r.status == "error"]
    if errored:
        return errored[0].model_copy(update={"threshold": spec.threshold})
    scored = [(t, r) for t, r in enumerate(per_turn) if r is not None and r.score is not None]
    if not scored and len(per_turn) == 1 and per_turn[0] is not None:
        return per_turn[0]  # its own explanation says why it is not applicable
    if not scored:
        return MetricResult(
            name=spec.name,
            score=None,
            threshold=spec.threshold,
            status="not_applicable",
            explanation="not applicable: no turn carries what the judge needs (e.g. a reference response)",
            details={"judge": judge.identity()},
        )
    if len(per_turn) == 1:
        return scored[0][1]
    values = [r.score for _, r in scored if r.score is not None]
    mean = sum(values) / len(values)
    terms = " + ".join(f"{v:.3f}" for v in values)
    explanation = f"mean over {len(values)} judged turn(s) of {len(per_turn)}: ({terms})/{len(values)} = {mean:.3f}"
    return MetricResult(
        name=spec.name,
        score=mean,
        threshold=spec.threshold,
        status=metric_status(mean, spec.threshold, True),
        explanation=with_verdict(explanation, mean, spec.threshold),
        details={"judge": judge.identity(), "turn_scores": {str(t): r.score for t, r in scored}},
    )


def not_simulated_result(spec: MetricSpec, judge: ResolvedJudge, scripted: bool) -> MetricResult:
    """`per_turn_user_simulator_quality_v1` where no simulated user played: not applicable, saying why."""
    why = "a scripted case has no simulated user (only conversation_scenario cases do)" if scripted else "no turn ran"
    return MetricResult(
        name=spec.name,
        score=None,
        threshold=spec.threshold,
        status="not_applicable",
        explanation=f"not applicable: {why}",
        details={"judge": judge.identity()},
    )


def simulated_user_case_result(
    spec: MetricSpec, judge: ResolvedJudge, per_turn: list[MetricResult | None]
) -> MetricResult:
    """The case's `per_turn_user_simulator_quality_v1`: #valid turns / #turns, with the arithmetic."""
    results = [r for r in per_turn if r is not None]
    errored = [r for r in results if r.status == "error"]
    if errored:
        return errored[0].model_copy(update={"threshold": spec.threshold})
    values = [r.score or 0.0 for r in results]
    value = sum(values) / len(values)
    terms = " + ".join(f"{v:.0f}" for v in values)
    explanation = f"valid simulated-user turns: ({terms})/{len(values)} = {value:.3f}"
    return MetricResult(
        name=spec.name,
        score=value,
        threshold=spec.threshold,
        status=metric_status(value, spec.threshold, True),
        explanation=with_verdict(explanation, value, spec.threshold),
        details={"judge": judge.identity(), "turn_scores": {str(t): v for t, v in enumerate(values)}},
    )
