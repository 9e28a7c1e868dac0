"""Re-score a baseline's recorded outputs under the current run's instrument (docs/gate.md §9).

A pull request that loosens a threshold, edits an expected answer, changes a match type or a judge prompt
changes how outputs are *scored*, not what the agent did. The stored baseline keeps every turn's output,
so instead of refusing it (and losing the comparison) its outputs are scored again with the current eval
sets, criteria and judges — like with like. Per baseline result:

- the case is not in the current eval sets, or its inputs differ (another input hash): kept as recorded
  (the gate lists it as removed, or as changed and not compared);
- same inputs and the same instrument (content hash, the set's criteria with the judge's identity, the
  scorer's `major.minor`): kept as recorded;
- otherwise re-scored: the recorded outputs go through `_pipeline.score_finished_case` (every criterion:
  custom metrics, judges — cached replies make a re-judged baseline cost once),
  exactly as a fresh run's would. An agent error stays an agent error; a metric or judge error is scored
  again. Teacher-forced step metrics need the base agent and are kept as recorded. A result that recorded
  no outputs cannot be re-scored and is kept (the gate then sees it as changed).

The re-scored run carries the current eval-set records for the sets it re-scored and recomputed summaries;
its id, commit and timestamps stay the baseline's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from evalward._pipeline import finalize, score_finished_case, start_judging
from evalward.model import AgentOutput, CaseResult, EvalCase, EvalSet, EvalSetInfo, RunResult
from evalward.model.records import Picked
from evalward.runners.executor import CaseRun, WorkItem
from evalward.spill import RecordLog
from evalward.store.comparability import scorer_version

if TYPE_CHECKING:
    from evalward._pipeline import PreparedRun
    from evalward.judging.judged_case import Judging
    from evalward.store import Store

SCORING_ERRORS = frozenset({"metric_error", "judge_error"})
"""Errors of the scoring, not of the agent: a re-score may well succeed."""


@dataclass
class Rescored:
    """The baseline under the current instrument, and what was done to get it."""

    run: RunResult
    rescored: int = 0
    """Case results scored again from their recorded outputs."""
    unscorable: list[str] = field(default_factory=list)
    """`set/case` of results that needed it but recorded no outputs."""


def recorded_outputs(result: CaseResult) -> list[AgentOutput]:
    """Each completed turn's output, in order, as recorded (older runs: rebuilt from the turn's fields)."""
    outputs: list[AgentOutput] = []
    for turn in sorted(result.invocations, key=lambda t: t.turn):
        if turn.output is not None:
            outputs.append(turn.output)
        elif turn.actual_response is not None or turn.actual_tool_calls:
            outputs.append(AgentOutput(response=turn.actual_response, tool_calls=list(turn.actual_tool_calls)))
        else:
            break
    return outputs


def case_run_from(result: CaseResult, eval_set: EvalSet, case: EvalCase) -> CaseRun | None:
    """The recorded run of one case × repetition, ready to score again; None when nothing was recorded."""
    outputs = recorded_outputs(result)
    agent_error = result.error if result.error is not None and result.error.kind not in SCORING_ERRORS else None
    if not outputs and agent_error is None:
        return None
    latencies = [turn.latency_s or 0.0 for turn in sorted(result.invocations, key=lambda t: t.turn)][: len(outputs)]
    return CaseRun(
        item=WorkItem(eval_set, case, result.repetition),
        outputs=outputs,
        turn_latencies_s=latencies,
        error=agent_error,
        latency_s=result.latency_s or 0.0,
        usage=result.usage,
        started_at=result.started_at,
        finished_at=result.finished_at,
        final_state=result.final_state,
        # A simulated conversation is re-scored as it was played: the simulator's messages, not the scenario's.
        queries=[t.query for t in sorted(result.invocations, key=lambda t: t.turn)] if case.scenario else [],
        simulation=result.simulation,
    )


def _same_input(info: EvalSetInfo | None, result: CaseResult, case: EvalCase) -> bool:
    recorded = info.case_input_hashes.get(case.case_id) if info is not None else None
    if recorded is None:  # recorded before input hashes were: only identical content is the same case
        return result.content_hash == case.content_hash
    return recorded == case.input_hash


async def rescore_baseline(
    baseline: RunResult, current: RunResult, prepared: PreparedRun, *, store: Store | None
) -> Rescored:
    """`baseline` under `current`'s instrument (module docstring). `prepared` holds the current eval sets,
    options and judges; `store` keeps the judge cache.

    One pass over the baseline's results, each read once: the re-scored ones go to a `RecordLog` and the run's
    cases become a view of the recorded and the re-scored results, so a large baseline is re-scored without
    holding its results (the judges start with the first result that needs them)."""
    # Where each current case is, not the case: a large set's cases are read back one at a time when used.
    where = {
        (s.eval_set_id, case_id): (s, position) for s in prepared.sets for position, case_id in enumerate(s.case_ids())
    }
    base_infos = {info.eval_set_id: info for info in baseline.eval_sets}
    cur_infos = {info.eval_set_id: info for info in current.eval_sets}
    same_scorer = scorer_version(baseline.evalward_version) == scorer_version(current.evalward_version)
    unscorable: list[str] = []
    fresh: RecordLog[CaseResult] = RecordLog(CaseResult)
    picks: list[tuple[int, int]] = []  # (0, baseline position) as recorded, (1, position in `fresh`) re-scored
    done: set[tuple[str, str]] = set()
    judging: Judging | None = None
    judging_started = False
    try:
        for index, result in enumerate(baseline.cases):
            picks.append((0, index))
            found = where.get((result.eval_set_id, result.case_id))
            if found is None:
                continue
            eval_set, position = found
            case = eval_set.cases[position]
            base_info = base_infos.get(eval_set.eval_set_id)
            cur_info = cur_infos.get(eval_set.eval_set_id)
            if not _same_input(base_info, result, case):
                continue
            same_criteria = base_info is not None and cur_info is not None and base_info.criteria == cur_info.criteria
            if result.content_hash == case.content_hash and same_criteria and same_scorer:
                continue
            case_run = case_run_from(result, eval_set, case)
            if case_run is None:
                unscorable.append(f"{result.eval_set_id}/{result.case_id}")
                continue
            if not judging_started:
                judging, judging_started = await start_judging(prepared, store), True
            scored = await score_finished_case(
                case_run.item, case_run, None, judging, prepared.options, recorded=result
            )
            picks[-1] = (1, len(fresh))
            fresh.append(scored, scored.key, scored.status)
            done.add((result.eval_set_id, result.case_id))
    finally:
        if judging is not None:
            await judging.aclose()
    if not len(fresh):
        return Rescored(run=baseline, unscorable=sorted(set(unscorable)))
    infos = [_rescored_info(info, cur_infos.get(info.eval_set_id), done) for info in baseline.eval_sets]
    finished = baseline.finished_at
    cases = Picked([baseline.cases, fresh], picks)
    run = finalize(baseline.model_copy(update={"eval_sets": infos}), cases, status=baseline.status)
    run = run.model_copy(update={"finished_at": finished, "evalward_version": current.evalward_version})
    return Rescored(run=run, rescored=len(fresh), unscorable=sorted(set(unscorable)))


def _rescored_info(info: EvalSetInfo, current: EvalSetInfo | None, done: set[tuple[str, str]]) -> EvalSetInfo:
    """A baseline eval-set record after re-scoring: the current criteria, and the current hashes for the cases
    that were re-scored (the others keep what they were recorded with)."""
    ids = {case_id for set_id, case_id in done if set_id == info.eval_set_id}
    if current is None or not ids:
        return info
    return info.model_copy(
        update={
            "criteria": list(current.criteria),
            "criteria_origin": current.criteria_origin,
            "case_hashes": {**info.case_hashes, **{k: current.case_hashes[k] for k in ids if k in current.case_hashes}},
            "case_input_hashes": {
                **info.case_input_hashes,
                **{k: current.case_input_hashes[k] for k in ids if k in current.case_input_hashes},
            },
        }
    )
