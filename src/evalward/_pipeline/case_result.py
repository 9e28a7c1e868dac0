"""A finished case × repetition turned into its `CaseResult`, and case results folded into a run.

`score_finished_case` hands the case, its outputs and the run's handles (judges, the agent for teacher forcing)
to `metrics.evaluation`, which scores every criterion through its metric. `finalize` folds finished results
into a run's summaries and verdict; `EmptyAnswers` collects the one warning about answers evalward cannot
score.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from evalward.loaders.load import ADK_FORMATS
from evalward.metrics.evaluation import score_case_run
from evalward.metrics.rouge import stem
from evalward.metrics.run_fold import RunFold
from evalward.metrics.scoring_context import ScoringContext
from evalward.model import (
    AgentOutput,
    CaseResult,
    CaseSummary,
    EvalCase,
    EvalSet,
    RunResult,
)
from evalward.model.cases import HAS_OWN_METRICS, cases_with, content_hash_of
from evalward.model.records import in_key_order
from evalward.runners.teacher_forcing_driver import AgentTeacher
from evalward.spill import RecordLog

if TYPE_CHECKING:
    from evalward._pipeline.options import RunOptions
    from evalward.judging.judged_case import Judging
    from evalward.runners.agent_contract import Agent
    from evalward.runners.executor import CaseRun, WorkItem


def played_case(item: WorkItem, case_run: CaseRun) -> EvalCase:
    """The case as it was played: a scenario case's turns are the user messages its simulator sent."""
    return item.case.played(case_run.queries) if item.case.scenario is not None else item.case


async def score_finished_case(
    item: WorkItem,
    case_run: CaseRun,
    agent: Agent | None,
    judging: Judging | None,
    options: RunOptions,
    *,
    recorded: CaseResult | None = None,
) -> CaseResult:
    """Score one finished case × repetition into its `CaseResult` (`metrics.evaluation.score_case_run`): every
    criterion of the case through its metric, with the run's judges and the agent (teacher forcing) as handles.

    Without an `agent` (re-scoring a baseline's recorded outputs) the step metrics cannot be recomputed; those
    of `recorded`, the original result, are kept. ADK-format sets are also scored by ADK's informational
    efficiency metrics, as ADK appends them to every eval."""
    eval_set, case = item.eval_set, played_case(item, case_run)
    teacher = None
    if agent is not None:
        teacher = AgentTeacher(
            agent,
            eval_set.eval_set_id,
            case,
            item.repetition,
            case_run.outputs,
            timeout_s=options.timeout_s,
            max_retries=options.max_retries,
        )
    context = ScoringContext(
        eval_set_id=eval_set.eval_set_id,
        case=case,
        repetition=item.repetition,
        specs=eval_set.metrics_for(case),
        adk_efficiency=eval_set.format in ADK_FORMATS,
        eval_format=eval_set.format,
        outputs=case_run.outputs,
        turn_latencies_s=case_run.turn_latencies_s,
        latency_s=case_run.latency_s,
        usage=case_run.usage,
        final_state=case_run.final_state,
        agent_error=case_run.error,
        simulation=case_run.simulation,
        content_hash=item.case.content_hash if item.place is None else content_hash_of(eval_set.cases, item.place[1]),
        must_pass=case.must_pass,
        cluster=case.cluster,
        started_at=case_run.started_at,
        finished_at=case_run.finished_at,
        judge=judging,
        teacher=teacher,
        recorded=recorded,
        stepwise=options.stepwise,
    )
    return await score_case_run(context)


ROUGE_METRICS = frozenset({"response_match_score", "response_rouge1"})


def warm_up_metrics(sets: Sequence[EvalSet]) -> None:
    """Import what scoring needs before agents start, so that no first-use import on the event loop stalls
    running turns and inflates their measured latency (the ROUGE modules are small since evalward stems
    with its own Porter stemmer instead of nltk's)."""
    names = {spec.name for s in sets for spec in s.criteria.metrics}
    names |= {spec.name for s in sets for case in cases_with(s.cases, HAS_OWN_METRICS) for spec in case.metrics}
    if names & ROUGE_METRICS:
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
