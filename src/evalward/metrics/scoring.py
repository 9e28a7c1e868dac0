"""Per-case scoring: run every metric on a case's turns and fold them into a case status.

Rules:
1. A turn metric scores each turn the agent answered; its case score is the **mean over the turns where it
   applies** (ADK's mean), or what its `turn_aggregate` says (`sum` for counts, `mean_all` for ADK's
   token average). No applicable turn → `not_applicable`, score None.
2. A case metric scores the case once (state, latency, cost).
3. Status of a score: threshold None → `informational`; else `passed` iff score ≥ threshold (≤ for
   lower-is-better metrics), else `failed`.
4. A metric that raises → `error` with the message (on the turn and for the case); the case gets
   `CaseError(kind="metric_error")`.
5. Case status: `error` if any metric errored; else `failed` if any metric failed; else `passed` if at
   least one metric passed; else `failed` with the explanation "no gating metric applied" (never a silent
   pass).
`outputs` may be shorter than `case.turns` when the agent failed mid-case: what exists is scored.

Each criterion's options are validated once (`registry.options_of` keeps them) and handed to every turn's
context; options that do not validate make the criterion `error` (a run checks them before any agent starts,
so only a caller scoring unchecked criteria sees this). An async metric (`Metric.awaits`) has its score awaited;
a sync one's is used as it is returned.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from evalward.metrics.base import CaseContext, Metric, Score, TurnContext
from evalward.metrics.metric_options import OptionsError
from evalward.metrics.registry import get_metric, options_of
from evalward.metrics.scoring_context import CaseScores, ScoringContext
from evalward.metrics.spec_lists import SpecListCache
from evalward.metrics.usage import with_adk_efficiency
from evalward.model import AgentOutput, CaseError, CaseStatus, EvalCase, MetricResult, MetricSpec, MetricStatus, Usage

NO_GATING_METRIC = "no gating metric applied"


@dataclass
class ScoredCase:
    """The scores of one case × repetition."""

    metric_results: list[MetricResult]
    """Case-level result per metric spec, in spec order."""
    turn_results: list[list[MetricResult]]
    """Per turn (one list per output), the results of the turn-scoped metrics."""
    status: CaseStatus
    error: CaseError | None = None
    explanation: str = ""
    """Why the case has its status when no single metric says it (e.g. "no gating metric applied")."""
    notes: list[str] = field(default_factory=list)


def metric_status(score: float, threshold: float | None, higher_is_better: bool) -> MetricStatus:
    """`informational` without a threshold; else passed iff score ≥ threshold (≤ when lower is better)."""
    if threshold is None:
        return "informational"
    passed = score >= threshold if higher_is_better else score <= threshold
    return "passed" if passed else "failed"


def _result(spec: MetricSpec, metric: Metric | None, score: Score | None) -> MetricResult:
    higher = metric.higher_is_better if metric is not None else True
    if score is None:
        return MetricResult(
            name=spec.name,
            score=None,
            threshold=spec.threshold,
            status="not_applicable",
            higher_is_better=higher,
            explanation=metric.not_applicable if metric is not None else Metric.not_applicable,
        )
    return MetricResult(
        name=spec.name,
        score=score.value,
        threshold=spec.threshold,
        status=metric_status(score.value, spec.threshold, higher),
        higher_is_better=higher,
        explanation=_with_verdict(score.explanation, score.value, spec.threshold, higher),
        details=dict(score.details),
    )


def _with_verdict(explanation: str, value: float, threshold: float | None, higher: bool) -> str:
    if threshold is None:
        return explanation
    op = ">=" if higher else "<="
    ok = value >= threshold if higher else value <= threshold
    verdict = f"{value:.3f} {op} {threshold:g}" if ok else f"{value:.3f} not {op} {threshold:g}"
    return f"{explanation}; {verdict}" if explanation else verdict


def _error_result(spec: MetricSpec, metric: Metric | None, exc: BaseException, turn: int | None) -> MetricResult:
    where = f" on turn {turn}" if turn is not None else ""
    return MetricResult(
        name=spec.name,
        score=None,
        threshold=spec.threshold,
        status="error",
        higher_is_better=metric.higher_is_better if metric is not None else True,
        explanation=f"metric raised{where}: {type(exc).__name__}: {exc}",
        details={"exception": type(exc).__name__, "turn": turn},
    )


def _mean_over_turns(
    spec: MetricSpec,
    metric: Metric,
    per_turn: list[tuple[MetricResult, Score | None]],
    not_applicable: MetricResult | None = None,
) -> MetricResult:
    """Case-level result of a turn metric: error if any turn errored, else the mean of applicable turns."""
    errored = [(t, r) for t, (r, _) in enumerate(per_turn) if r.status == "error"]
    if errored:
        return MetricResult(
            name=spec.name,
            score=None,
            threshold=spec.threshold,
            status="error",
            higher_is_better=metric.higher_is_better,
            explanation=errored[0][1].explanation,
            details={"errored_turns": [t for t, _ in errored]},
        )
    if len(per_turn) == 1:
        # One turn: the case's result is that turn's, with its own arithmetic and diagnostics (the very same
        # object: results are never changed in place, and building it again was a tenth of a case's scoring).
        return per_turn[0][0]
    scored = [(t, score) for t, (_, score) in enumerate(per_turn) if score is not None]
    if not scored:
        return not_applicable if not_applicable is not None else _result(spec, metric, None)
    values = [score.value for _, score in scored]
    terms = " + ".join(f"{v:.3f}" for v in values)
    if metric.turn_aggregate == "sum":
        value = sum(values)
        explanation = f"sum over {len(values)} applicable turn(s) of {len(per_turn)}: {terms} = {value:.3f}"
    elif metric.turn_aggregate == "mean_all":
        value = sum(values) / len(per_turn)
        missing = len(per_turn) - len(values)
        shown = terms + "".join(" + 0 (n/a)" for _ in range(missing))
        explanation = f"mean over all {len(per_turn)} turn(s): ({shown})/{len(per_turn)} = {value:.3f}"
    else:
        value = sum(values) / len(values)
        explanation = (
            f"mean over {len(values)} applicable turn(s) of {len(per_turn)}: ({terms})/{len(values)} = {value:.3f}"
        )
    return MetricResult(
        name=spec.name,
        score=value,
        threshold=spec.threshold,
        status=metric_status(value, spec.threshold, metric.higher_is_better),
        higher_is_better=metric.higher_is_better,
        explanation=_with_verdict(explanation, value, spec.threshold, metric.higher_is_better),
        details={"turn_scores": {str(t): score.value for t, score in scored}, "turns_applicable": len(values)},
    )


def score_case(
    case: EvalCase,
    specs: Sequence[MetricSpec],
    outputs: Sequence[AgentOutput],
    *,
    initial_state: dict[str, Any] | None = None,
    final_state: Any = None,
    latency_s: float | None = None,
    usage: Usage | None = None,
    turn_latencies_s: Sequence[float | None] = (),
) -> ScoredCase:
    """Score one case × repetition with `specs` (see the module docstring for the rules).

    `turn_latencies_s[i]` is the wall-clock time of turn i, when timed (read by `invocation_duration_v1`).
    An async metric is awaited in place; one that waits on something (a service, a timer) needs an event loop:
    score such criteria with `Metric.evaluate` (RuntimeError here).
    """
    scoring = _score_case(
        case,
        specs,
        outputs,
        initial_state=initial_state,
        final_state=final_state,
        latency_s=latency_s,
        usage=usage,
        turn_latencies_s=turn_latencies_s,
    )
    return _finish(scoring)


ResultT = TypeVar("ResultT")


def _finish(coroutine: Coroutine[Any, Any, ResultT]) -> ResultT:
    """Run `coroutine` to its end without an event loop: it may await only what completes at once (an
    async metric that computes and returns). The sync caller gets the same scoring code as `evaluate`."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coroutine.close()
    raise RuntimeError("an async metric waited on something: score its criteria with Metric.evaluate")


async def _score_case(
    case: EvalCase,
    specs: Sequence[MetricSpec],
    outputs: Sequence[AgentOutput],
    *,
    initial_state: dict[str, Any] | None,
    final_state: Any,
    latency_s: float | None,
    usage: Usage | None,
    turn_latencies_s: Sequence[float | None],
) -> ScoredCase:
    n_turns = min(len(outputs), len(case.turns))
    turn_results: list[list[MetricResult]] = [[] for _ in range(len(outputs))]
    case_results: list[MetricResult] = []
    # What every turn metric's context of a turn holds besides its criterion: made once per turn, when needed.
    turn_fields: list[dict[str, Any]] | None = None
    for criterion in criteria_of(specs):
        spec, metric_class = criterion.spec, criterion.metric_class
        if metric_class is None or criterion.problem is not None:
            assert criterion.problem is not None
            metric = metric_class() if metric_class is not None else None
            case_results.append(_error_result(spec, metric, criterion.problem, None))
            continue
        metric, options = metric_class(), criterion.options
        if metric.scope == "turn":
            if turn_fields is None:
                turn_fields = [
                    {
                        "case": case,
                        "turn": index,
                        "expected": case.turns[index],
                        "actual": outputs[index],
                        "latency_s": turn_latencies_s[index] if index < len(turn_latencies_s) else None,
                    }
                    for index in range(n_turns)
                ]
            per_turn: list[tuple[MetricResult, Score | None]] = []
            for index in range(n_turns):
                ctx = _turn_context(turn_fields[index], spec, options)
                score: Score | None = None
                try:
                    scored = metric.score_turn(ctx)
                    score = await scored if metric.awaits and inspect.isawaitable(scored) else _sync(scored)
                    result = criterion.not_applicable if score is None else _result(spec, metric, score)
                except Exception as exc:  # a metric's failure is data, never a crash of the run
                    result = _error_result(spec, metric, exc, index)
                turn_results[index].append(result)
                per_turn.append((result, score))
            case_results.append(_mean_over_turns(spec, metric, per_turn, criterion.not_applicable))
        else:
            case_ctx = CaseContext(
                case=case,
                turns=list(zip(case.turns[:n_turns], outputs[:n_turns], strict=True)),
                spec=spec,
                initial_state=dict(initial_state or {}),
                final_state=final_state,
                latency_s=latency_s,
                usage=usage,
                options=options,
            )
            try:
                scored = metric.score_case(case_ctx)
                score = await scored if metric.awaits and inspect.isawaitable(scored) else _sync(scored)
                case_results.append(criterion.not_applicable if score is None else _result(spec, metric, score))
            except Exception as exc:  # a metric's failure is data, never a crash of the run
                case_results.append(_error_result(spec, metric, exc, None))
    return _fold(case_results, turn_results)


def _turn_context(fields: dict[str, Any], spec: MetricSpec, options: Any) -> TurnContext[Any]:
    """`TurnContext(**fields, spec=spec, options=options)`, for options the criterion validated: the frozen
    dataclass's constructor sets each field through `object.__setattr__` and checks the options again, 4 µs
    for every metric of every turn (a fifth of an informational metric's whole cost in a run)."""
    context: TurnContext[Any] = object.__new__(TurnContext)
    state = context.__dict__
    state.update(fields)
    state["spec"] = spec
    state["options"] = options
    return context


@dataclass(frozen=True, slots=True)
class Criterion:
    """A criterion as the scoring loop uses it, worked out once for all the cases that share it (`criteria_of`):
    its metric's class and validated options, or the problem every case reports for it instead of a score."""

    spec: MetricSpec
    metric_class: type[Metric] | None
    options: Any
    problem: Exception | None
    not_applicable: MetricResult
    """The result when the metric returns None: the same for every case, so made once (results are never changed
    in place, and making it again for every case and turn was a tenth of an ADK case's scoring)."""


def _criterion(spec: MetricSpec) -> Criterion:
    metric_class: type[Metric] | None = None
    problem: Exception | None = None
    options: Any = None
    try:
        metric_class = type(get_metric(spec.name))
        options = options_of(spec)
    except (KeyError, OptionsError) as exc:
        problem = exc
    not_applicable = _result(spec, metric_class() if metric_class is not None else None, None)
    return Criterion(spec, metric_class, options, problem, not_applicable)


criteria_of: SpecListCache[tuple[Criterion, ...]] = SpecListCache(lambda specs: tuple(map(_criterion, specs)))
"""The `Criterion`s of a list of specs, worked out once per list (`metrics.spec_lists`)."""


def _sync(scored: Score | Awaitable[Score | None] | None) -> Score | None:
    """A sync metric's score (`Metric.awaits` is false, so it returned no awaitable)."""
    return scored  # type: ignore[return-value]


def _fold(case_results: list[MetricResult], turn_results: list[list[MetricResult]]) -> ScoredCase:
    errored = [r for r in case_results if r.status == "error"]
    if errored:
        message = "; ".join(f"{r.name}: {r.explanation}" for r in errored)
        turn = next((r.details.get("turn") for r in errored if r.details.get("turn") is not None), None)
        if turn is None:
            turn = next((r.details["errored_turns"][0] for r in errored if r.details.get("errored_turns")), None)
        error = CaseError(kind="metric_error", message=message, turn=turn)
        return ScoredCase(case_results, turn_results, "error", error, explanation=message)
    failed = [r.name for r in case_results if r.status == "failed"]
    if failed:
        return ScoredCase(case_results, turn_results, "failed", explanation=f"failed: {', '.join(failed)}")
    if any(r.status == "passed" for r in case_results):
        return ScoredCase(case_results, turn_results, "passed")
    return ScoredCase(case_results, turn_results, "failed", explanation=NO_GATING_METRIC)


async def score_outputs(specs: Sequence[MetricSpec], ctx: ScoringContext) -> CaseScores:
    """The `outputs` batch of a case (`Metric.evaluate`): `score_case` over `specs` (with ADK's efficiency
    metrics for the ADK formats). A case the agent failed before answering anything has no such results:
    "not applicable" rows would only hide its error."""

    if ctx.adk_efficiency:
        specs = with_adk_efficiency(specs)
    scored = await _score_case(
        ctx.case,
        specs,
        ctx.outputs,
        initial_state=ctx.initial_state,
        final_state=ctx.final_state,
        latency_s=ctx.latency_s,
        usage=ctx.usage,
        turn_latencies_s=ctx.turn_latencies_s,
    )
    case_level = [] if ctx.agent_error is not None and not ctx.outputs else scored.metric_results
    return CaseScores(case_level, dict(enumerate(scored.turn_results)), scored.error)


class OutputMetrics(Metric):
    """The `outputs` batch's metric (`registry.batch_metric`): `Metric.evaluate` sends each criterion to its own
    metric. It runs for every case, with no criterion too: the fold gives such a case its "no gating metric
    applied" status, and the ADK formats their efficiency metrics."""

    name = "outputs"
    scores_without_criteria: ClassVar[bool] = True
    description = "Metrics scored from the agent's outputs alone."
