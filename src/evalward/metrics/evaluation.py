"""One finished case × repetition scored into its `CaseResult`: every criterion through `Metric.evaluate`.

`score_case_run(ctx)` takes the case's criteria to their metrics (`registry.metric_for`), calls each
batch's `evaluate` once, in `BATCHES` order (a batch with no criterion is called only when its metric
`scores_without_criteria`), and folds what they return:

1. Case-level results: each batch's, in order; a result replaces an earlier one of the same name, else it
   is appended. Per-turn results likewise, turn by turn. The order is part of the stored result (reports and
   the JSON list metrics as they come), which is why the batches have a fixed order: what the outputs alone
   decide first, then what needs the agent again, user code, and judges.
2. The case error: the agent's (it did not finish the case), else the first a batch reports (a failed
   judge), else, at the first batch after which some case-level result is `error`, a `metric_error` naming
   the errored results.
3. Status: `error` with an error; else `failed` if a result failed; else `passed` if one passed; else
   `failed` ("no gating metric applied": never a silent pass).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from evalward.metrics.registry import batch_metric, batch_of
from evalward.metrics.scoring_context import CaseScores, ScoringContext
from evalward.metrics.spec_lists import SpecListCache
from evalward.model import CaseError, CaseResult, CaseStatus, InvocationResult, MetricResult, MetricSpec

BATCHES: tuple[str, ...] = ("outputs", "teacher_forcing", "user_code", "judge")
"""The order batches are scored and their results listed in (module docstring, rule 1)."""


def replace_or_append(existing: Sequence[MetricResult], new: Iterable[MetricResult]) -> list[MetricResult]:
    """`existing` with each of `new` replacing the result of the same name, or appended."""
    by_name = {r.name: r for r in new}
    merged = [by_name.pop(r.name, r) for r in existing]
    merged.extend(by_name.values())
    return merged


def batched(specs: Sequence[MetricSpec]) -> dict[str, list[MetricSpec]]:
    """`specs` by the batch of their metric, each in criterion order."""
    batches: dict[str, list[MetricSpec]] = {batch: [] for batch in BATCHES}
    for spec in specs:
        batches[batch_of(spec)].append(spec)
    return batches


_batches_of: SpecListCache[list[tuple[str, list[MetricSpec]]]] = SpecListCache(lambda specs: [*batched(specs).items()])
"""`batched`, worked out once per list of specs (`metrics.spec_lists`); read, never changed."""


async def score_case_run(ctx: ScoringContext) -> CaseResult:
    """The case's `CaseResult` (module docstring)."""

    case_level: list[MetricResult] = []
    per_turn: dict[int, list[MetricResult]] = {}
    error = ctx.agent_error
    for batch, specs in _batches_of(ctx.specs):
        metric = batch_metric(batch)
        if not specs and not metric.scores_without_criteria:
            continue
        scores: CaseScores = await metric.evaluate(specs, ctx)
        if not scores.case_level and not scores.per_turn and scores.error is None:
            continue
        case_level = replace_or_append(case_level, scores.case_level)
        for turn, results in scores.per_turn.items():
            per_turn[turn] = replace_or_append(per_turn.get(turn, []), results)
        if error is None:
            error = scores.error or metric_error(case_level)
    return CaseResult(
        eval_set_id=ctx.eval_set_id,
        case_id=ctx.case.case_id,
        repetition=ctx.repetition,
        status=case_status(case_level, error),
        metric_results=case_level,
        invocations=_invocations(ctx, per_turn),
        error=error,
        latency_s=ctx.latency_s,
        usage=ctx.usage,
        final_state=ctx.final_state,
        simulation=ctx.simulation,
        content_hash=ctx.content_hash,
        must_pass=ctx.must_pass,
        cluster=ctx.cluster,
        started_at=ctx.started_at,
        finished_at=ctx.finished_at,
    )


def case_status(case_level: Sequence[MetricResult], error: CaseError | None) -> CaseStatus:
    """Rule 3 of the module docstring."""
    if error is not None:
        return "error"
    if any(r.status == "failed" for r in case_level):
        return "failed"
    if any(r.status == "passed" for r in case_level):
        return "passed"
    return "failed"


def metric_error(case_level: Sequence[MetricResult]) -> CaseError | None:
    """A `metric_error` naming every errored result of `case_level` (rule 2); None when none errored."""
    errored = [r for r in case_level if r.status == "error"]
    if not errored:
        return None
    return CaseError(kind="metric_error", message="; ".join(f"{r.name}: {r.explanation}" for r in errored))


def _invocations(ctx: ScoringContext, per_turn: dict[int, list[MetricResult]]) -> list[InvocationResult]:
    outputs = ctx.outputs
    latencies = ctx.turn_latencies_s
    invocations: list[InvocationResult] = []
    for index, turn in enumerate(ctx.case.turns):
        output = outputs[index] if index < len(outputs) else None
        invocations.append(
            InvocationResult(
                turn=index,
                invocation_id=turn.invocation_id,
                query=turn.query,
                expected_response=turn.expected_response,
                actual_response=output.response if output else None,
                expected_tool_calls=turn.expected_tool_calls,
                actual_tool_calls=list(output.tool_calls) if output else [],
                expected_trajectory=turn.expected_trajectory,
                actual_trajectory=output.steps() if output else [],
                output=output,
                metric_results=per_turn.get(index, []),
                latency_s=latencies[index] if index < len(latencies) else None,
            )
        )
    return invocations
