"""A finished case × repetition turned into its `CaseResult`, and case results folded into a run.

`build_case_result` scores what the outputs alone decide (`metrics.scoring.score_case`); `score_outside` adds
what needs more calls or user code: teacher-forced step metrics (`score_stepwise`), user evaluators and ADK
custom metrics, judged metrics. `finalize` folds finished results into a run's summaries and verdict;
`EmptyAnswers` collects the one warning about answers evalward cannot score.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from evalward.model import (
    AgentOutput,
    CaseError,
    CaseResult,
    CaseSummary,
    EvalCase,
    EvalSet,
    InvocationResult,
    MetricResult,
    RunResult,
)
from evalward.model.cases import HAS_OWN_METRICS, cases_with, content_hash_of
from evalward.spill import RecordLog

if TYPE_CHECKING:
    from evalward.judging.scoring import Judging
    from evalward.pipeline.options import RunOptions
    from evalward.runners.base import Agent
    from evalward.runners.executor import CaseRun, WorkItem


def played_case(item: WorkItem, case_run: CaseRun) -> EvalCase:
    """The case as it was played: a scenario case's turns are the user messages its simulator sent."""
    return item.case.played(case_run.queries) if item.case.scenario is not None else item.case


def build_case_result(item: WorkItem, case_run: CaseRun) -> CaseResult:
    """Score one finished case × repetition and assemble its result (pure apart from the metrics).

    ADK-format sets are also scored by ADK's informational efficiency metrics, as ADK appends them to
    every eval (`metrics.usage.with_adk_efficiency`)."""
    from evalward.loaders.load import ADK_FORMATS
    from evalward.metrics.registry import is_custom, is_stepwise, requires_judge
    from evalward.metrics.scoring import score_case
    from evalward.metrics.usage import with_adk_efficiency

    eval_set, case = item.eval_set, played_case(item, case_run)
    # Judged, stepwise and custom metrics need more calls (or may be async); `score_outside` adds them.
    specs = [
        s
        for s in eval_set.metrics_for(case)
        if not requires_judge(s.name) and not is_stepwise(s.name) and not is_custom(s)
    ]
    if eval_set.format in ADK_FORMATS:
        specs = with_adk_efficiency(specs)
    outputs: list[AgentOutput] = list(case_run.outputs)
    initial_state = case.session_input.state if case.session_input else {}
    scored = score_case(
        case,
        specs,
        outputs,
        initial_state=initial_state,
        final_state=case_run.final_state,
        latency_s=case_run.latency_s,
        usage=case_run.usage,
        turn_latencies_s=list(case_run.turn_latencies_s),
    )
    invocations: list[InvocationResult] = []
    for index, turn in enumerate(case.turns):
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
                metric_results=scored.turn_results[index] if index < len(scored.turn_results) else [],
                latency_s=case_run.turn_latencies_s[index] if index < len(case_run.turn_latencies_s) else None,
            )
        )
    error: CaseError | None = case_run.error or scored.error
    status = "error" if error is not None else scored.status
    case_metrics = scored.metric_results
    if case_run.error is not None and not outputs:
        # Nothing ran, so there is nothing to score: no "not applicable" rows that would hide the error.
        case_metrics = []
    return CaseResult(
        eval_set_id=eval_set.eval_set_id,
        case_id=case.case_id,
        repetition=item.repetition,
        status=status,
        metric_results=case_metrics,
        invocations=invocations,
        error=error,
        latency_s=case_run.latency_s,
        usage=case_run.usage,
        final_state=case_run.final_state,
        simulation=case_run.simulation,
        content_hash=item.case.content_hash if item.place is None else content_hash_of(eval_set.cases, item.place[1]),
        must_pass=case.must_pass,
        cluster=case.cluster,
        started_at=case_run.started_at,
        finished_at=case_run.finished_at,
    )


async def score_outside(
    result: CaseResult,
    item: WorkItem,
    case_run: CaseRun,
    agent: Agent | None,
    judging: Judging | None,
    options: RunOptions,
    *,
    recorded: CaseResult | None = None,
) -> CaseResult:
    """Add what `score_case` cannot compute from the outputs alone: teacher-forced step metrics (more agent
    calls), user evaluators and ADK custom metrics (user code, possibly async) and judged metrics (judge calls), then
    recompute the case status (`judging.merge`).

    Without an `agent` (re-scoring a baseline's recorded outputs), step metrics cannot be recomputed; those of
    `recorded`, the original result, are kept."""
    from evalward.judging.merge import merge_metric_results
    from evalward.metrics.custom import is_custom, score_evaluator

    case = played_case(item, case_run)
    if case is not item.case:
        from evalward.runners.executor import WorkItem as _WorkItem

        item = _WorkItem(item.eval_set, case, item.repetition)
    if agent is not None:
        stepwise = await score_stepwise(item, case_run, agent, options, judging)
        if stepwise is not None:
            result = merge_metric_results(result, *stepwise)
    elif recorded is not None:
        result = _keep_stepwise(result, recorded)
    custom = [s for s in item.eval_set.metrics_for(item.case) if is_custom(s)]
    if custom and case_run.outputs:
        for spec in custom:
            case_level, turn_level = await score_evaluator(
                spec, item.case, case_run.outputs, list(case_run.turn_latencies_s)
            )
            result = merge_metric_results(result, case_level, turn_level)
    if judging is not None:
        from evalward.judging.scoring import apply_judges

        specs = item.eval_set.metrics_for(item.case)
        result = await apply_judges(result, item.case, specs, case_run.outputs, judging)
    return result


def _keep_stepwise(result: CaseResult, recorded: CaseResult) -> CaseResult:
    """`result` with the teacher-forced step metrics of `recorded` (they need the agent to recompute)."""
    from evalward.judging.merge import merge_metric_results
    from evalward.metrics.registry import is_stepwise

    case_level = [m for m in recorded.metric_results if is_stepwise(m.name)]
    turn_level = {
        turn.turn: [m for m in turn.metric_results if is_stepwise(m.name)]
        for turn in recorded.invocations
        if any(is_stepwise(m.name) for m in turn.metric_results)
    }
    if not case_level and not turn_level:
        return result
    return merge_metric_results(result, case_level, turn_level)


async def score_stepwise(
    item: WorkItem, case_run: CaseRun, agent: Agent, options: RunOptions, judging: Judging | None = None
) -> tuple[list[MetricResult], dict[int, list[MetricResult]], CaseError | None] | None:
    """Teacher forcing for every answered turn with `reference_messages` (docs/metrics.md §6, `metrics.stepwise`).

    Each such turn's steps go to the agent with `next_action_only` (runners/stepwise.py), the earlier turns
    in its history as the normal run had them; the normal run's output gives the free-running survival.
    Steps are compared exactly, or by `judging` when a step criterion says `match: judge`
    (`metrics.step_judge`); a judge that fails makes the step metrics a judge error.
    None when step-by-step evaluation does not apply to the case (mode `auto` without references, or `off`).
    """
    from evalward.metrics import stepwise as sw
    from evalward.metrics.registry import is_stepwise
    from evalward.metrics.step_judge import step_judge_spec
    from evalward.model import Message
    from evalward.runners.conversation import Conversation
    from evalward.runners.stepwise import teacher_forced_steps

    case = item.case
    specs = item.eval_set.metrics_for(case)
    named = {s.name: s for s in specs if is_stepwise(s.name)}
    answered = list(zip(case.turns, case_run.outputs, strict=False))
    has_reference = any(turn.reference_messages is not None for turn, _ in answered)
    if options.stepwise == "off" or (options.stepwise == "auto" and not has_reference and not named):
        return (*sw.metric_results({}, named), None) if named else None
    judged = step_judge_spec(specs)
    judge = judging.resolve(judged) if judging is not None and judged is not None else None
    if judged is not None and judge is None:
        message = f"{judged.name}: match: judge needs a judge model, and none is configured (--judge-model)"
        return sw.error_results(named, message), {}, CaseError(kind="judge_error", message=message)
    # The same requests the run sent (runners.conversation), in a session of their own.
    conversation = Conversation.of(item.eval_set.eval_set_id, case, item.repetition, "teacher-forcing")
    per_turn: dict[int, dict[str, Any]] = {}
    for index, (turn, output) in enumerate(answered):
        request = conversation.request(index, turn.query, turn.inputs)
        if turn.reference_messages is not None:
            reference = sw.parse_reference(turn.reference_messages)
            lead = list(reference.lead) or [Message(role="user", content=turn.query)]
            prefixes = [reference.prefix(j) for j in range(1, reference.m + 2)]
            attempts = await teacher_forced_steps(
                agent, request, lead, prefixes, timeout_s=options.timeout_s, max_retries=options.max_retries
            )
            final_check = sw.final_check_for(case, index, specs, reference)
            credits: list[float] = []
            notes: list[str] = []
            actions: list[sw.NextAction] = []
            for attempt in attempts:
                size = len(reference.steps[attempt.step - 1].calls) if attempt.step <= reference.m else 1
                action = (
                    sw.NextAction(error=attempt.error)
                    if attempt.output is None
                    else sw.first_step(attempt.output, size)
                )
                actions.append(action)
                if judge is None:
                    credit, note = sw.step_credit(attempt.step, reference, action, final_check)
                    credits.append(credit)
                    notes.append(note)
            step_details = None
            if judge is not None and judging is not None:
                from evalward.judging.steps import judged_credits

                steps = await judged_credits(
                    reference,
                    actions,
                    request=next((m.content for m in reversed(lead) if m.role == "user" and m.content), turn.query),
                    reference_answer=reference.final_response or turn.expected_response,
                    final_check=final_check,
                    judging=judging,
                    judge=judge,
                )
                if steps.error is not None:
                    message = f"{judge.spec.metric} (match: judge): {steps.error}"
                    return sw.error_results(named, message), {}, CaseError(kind="judge_error", message=message)
                credits, notes, step_details = steps.credits, steps.notes, steps.details
            per_turn[index] = sw.stepwise_scores(credits, notes, sw.free_run(output, reference), step_details)
        conversation.answered(request, output)
    return (*sw.metric_results(per_turn, named), None)


ROUGE_METRICS = frozenset({"response_match_score", "response_rouge1"})


def warm_up_metrics(sets: Sequence[EvalSet]) -> None:
    """Import what scoring needs before agents start, so that no first-use import on the event loop stalls
    running turns and inflates their measured latency (the ROUGE modules are small since evalward stems
    with its own Porter stemmer instead of nltk's)."""
    names = {spec.name for s in sets for spec in s.criteria.metrics}
    names |= {spec.name for s in sets for case in cases_with(s.cases, HAS_OWN_METRICS) for spec in case.metrics}
    if names & ROUGE_METRICS:
        from evalward.metrics.rouge import stem

        stem("warming")


MAX_SHOWN_KEYS = 5
"""How many of an unreadable answer's keys the empty-answer warning names."""


@dataclass
class EmptyAnswers:
    """Counts the case runs in which the agent answered a turn with nothing evalward can score, for one warning
    per run (`warning`) instead of one line per case.

    A turn's answer is empty when it has no response, no tool calls and no step names, and nothing else the
    case expects (none of its `outputs` keys among the turn's expected outputs; no `state` where the case
    expects one): typically an object in a shape evalward does not know, whose keys all landed in `outputs`."""

    runs: int = 0
    empty: int = 0
    first: str | None = None
    """The first empty answer by (eval set, case id, repetition, turn), whatever order cases finished in."""
    _first_key: tuple[str, str, int, int] | None = None

    def see(self, item: WorkItem, outputs: Sequence[AgentOutput]) -> None:
        self.runs += 1
        for index, output in enumerate(outputs):
            turn = item.case.turns[index] if index < len(item.case.turns) else None
            if not _is_empty_answer(output, turn.expected_outputs if turn else {}, item.case.expected_state):
                continue
            self.empty += 1
            key = (*item.key, index)
            if self._first_key is None or key < self._first_key:
                names = [repr(name) for name in output.outputs]
                shown = ", ".join(names[:MAX_SHOWN_KEYS]) + (", …" if len(names) > MAX_SHOWN_KEYS else "")
                found = f"keys {shown}" if names else "an empty object"
                self.first = f"case {item.case.case_id!r} turn {index}, {found}"
                self._first_key = key
            return

    def warning(self) -> str | None:
        """One line (short enough for the reports' 300-character warning lines): how many, what evalward reads,
        then the first such answer and the keys it had."""
        if not self.empty:
            return None
        return (
            f"agent output: {self.empty} of {self.runs} case runs had an answer with no response, tool calls or steps "
            "(scored as empty); evalward reads `response`/`tool_calls`, a string, or `output`/`intermediate_steps` "
            f"(langchain); first: {self.first}"
        )


def _is_empty_answer(output: AgentOutput, expected_outputs: Mapping[str, Any], expected_state: Any) -> bool:
    if output.response is not None or output.tool_calls or output.trajectory:
        return False
    if any(key in expected_outputs for key in output.outputs):
        return False
    return output.state is None or expected_state is None


def finalize(
    run: RunResult,
    cases: Sequence[CaseResult],
    *,
    status: str,
) -> RunResult:
    """The run with `cases` (in key order) folded into its summary and verdict under its pass rule, as
    `run_prepared` folds a run being made. `cases` may be a `RecordSequence` (a stored run read back, a
    re-scored baseline): it is read once, case by case, and its case summaries go to a `RecordLog`, so a large
    run is finalized without holding its results."""
    from evalward.metrics.aggregate import RunFold
    from evalward.model.records import in_key_order

    ordered = in_key_order(cases)
    fold = RunFold(repetitions=run.repetitions, pass_rule=run.pass_rule)
    summaries: RecordLog[CaseSummary] = RecordLog(CaseSummary)
    for summary in fold.add_in_key_order(ordered):
        summaries.append(summary, (summary.eval_set_id, summary.case_id), "passed" if summary.passed else "failed")
    return run.model_copy(
        update={
            "cases": ordered,
            "summary": fold.metric_summaries(),
            "case_summaries": summaries,
            "passed": fold.passed and status == "complete" and bool(len(ordered)),
            "status": status,
            "finished_at": datetime.now(UTC),
        }
    )
