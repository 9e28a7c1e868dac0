"""Combining the shards of one logical run (`evalward merge`), failing closed on anything missing.

A sharded run declares `context.shard_count = n` on every shard and a manifest of planned items per
shard. The merge is complete only when shards 1..n are all present, each is `complete`, each has a
result for every planned item, and they agree on what was run (fingerprint, commit, n). Anything else
is a GateInputError that names every problem: a silent partial merge would let the gate pass a PR on
half of its cases (docs/gate.md §2, §9).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from evalward.errors import GateInputError, UsageError
from evalward.model import CaseResult, EvalSetInfo, RunResult
from evalward.store.rows import unique_keys

if TYPE_CHECKING:
    from evalward.store.repository import Store


def merge_stored_shards(
    store: Store,
    run_ids: Sequence[str] | None,
    *,
    group_id: str | None,
    new_run_id: str,
    finalize: Callable[[RunResult], RunResult] | None,
) -> RunResult:
    """Combine the stored shards of one logical run into a new complete run, or fail closed.

    Shards are given by id or by `group_id` (then the newest run per shard index). Raises GateInputError,
    naming every problem at once, when: a shard of 1..shard_count is missing or given twice, a shard is not
    complete, a shard's planned case × repetition has no result, shards disagree on fingerprint, commit or
    shard count, or two shards hold the same case × repetition. `finalize` (the pipeline's summariser)
    recomputes summaries over the merged cases; without it the merged run has no summary and passes only
    when every shard passed.
    """
    if (run_ids is None) == (group_id is None):
        raise UsageError("merge needs either run ids or a group id (not both)")
    if group_id is not None:
        rows = store.list_runs_in_group(group_id)
        if not rows:
            raise GateInputError(f"no runs with group id {group_id!r} in the history database")
        run_ids = pick_group_shards(rows)
    assert run_ids is not None
    if store.has_run(new_run_id):
        raise UsageError(f"run {new_run_id!r} already exists; choose another id for the merged run")
    shards = [store.load_run(run_id) for run_id in dict.fromkeys(run_ids)]
    missing = {run.run_id: store.missing_items(run.run_id) for run in shards}
    plans = {run.run_id: store.planned_items(run.run_id) for run in shards}
    merged = combine_shards(shards, missing=missing, new_run_id=new_run_id, duplicates=len(run_ids))
    if finalize is not None:
        merged = finalize(merged)
    planned = [key for run in shards for key in plans[run.run_id]]
    store.insert_complete_run(merged, unique_keys(planned))
    return store.load_run(new_run_id)


def pick_group_shards(rows: Sequence[tuple[str, int | None, int | None, str]]) -> list[str]:
    """From (run_id, shard_index, shard_count, status) rows newest first, one run per shard index:
    the newest complete attempt, else the newest attempt (which then fails the completeness check)."""
    chosen: dict[int | None, tuple[str, str]] = {}
    for run_id, index, _count, status in rows:
        current = chosen.get(index)
        if current is None or (current[1] != "complete" and status == "complete"):
            chosen[index] = (run_id, status)
    return [run_id for run_id, _status in chosen.values()]


def combine_shards(
    shards: Sequence[RunResult],
    *,
    missing: Mapping[str, Sequence[tuple[str, str, int]]],
    new_run_id: str,
    duplicates: int | None = None,
) -> RunResult:
    """The merged run, or GateInputError listing every reason it cannot be trusted.

    `missing[run_id]` = the shard's planned items without a result. `duplicates` = how many run ids
    were given (more than `len(shards)` means an id was repeated).
    """
    problems: list[str] = []
    if not shards:
        raise GateInputError("nothing to merge: no shard runs given")
    if duplicates is not None and duplicates > len(shards):
        problems.append("a run id was given more than once")
    counts = {run.context.shard_count for run in shards}
    not_shards = [run.run_id for run in shards if run.context.shard_count is None]
    if not_shards:
        problems.append(f"runs {not_shards} are not shards (no --shard i/n recorded)")
    declared = max((n for n in counts if n is not None), default=None)
    if len(counts - {None}) > 1:
        problems.append(f"shards disagree on the shard count: {sorted(n for n in counts if n is not None)}")
    by_index: dict[int, list[str]] = {}
    for run in shards:
        if run.context.shard_index is not None:
            by_index.setdefault(run.context.shard_index, []).append(run.run_id)
    for index, ids in sorted(by_index.items()):
        if len(ids) > 1:
            problems.append(f"shard {index}/{declared} is given twice: {ids}")
    if declared is not None:
        absent = [i for i in range(1, declared + 1) if i not in by_index]
        if absent:
            problems.append(
                "missing shard" + ("s " if len(absent) > 1 else " ") + ", ".join(f"{i}/{declared}" for i in absent)
            )
        extra = [i for i in by_index if not 1 <= i <= declared]
        if extra:
            problems.append(f"shard indexes {sorted(extra)} are outside 1..{declared}")
    for run in shards:
        where = f"shard {run.context.shard_index}/{run.context.shard_count} (run {run.run_id})"
        if run.status != "complete":
            problems.append(f"{where} is {run.status}, not complete")
        lacking = list(missing.get(run.run_id, ()))
        if lacking:
            shown = ", ".join(f"{e}/{c}#{r}" for e, c, r in lacking[:5])
            more = f" and {len(lacking) - 5} more" if len(lacking) > 5 else ""
            problems.append(f"{where} lacks {len(lacking)} planned case results: {shown}{more}")
    first = shards[0]
    for run in shards[1:]:
        if run.fingerprint != first.fingerprint:
            problems.append(
                f"run {run.run_id} has fingerprint {run.fingerprint[:12]}, run {first.run_id} has "
                f"{first.fingerprint[:12]} (other eval files, criteria or agent)"
            )
        if run.context.commit != first.context.commit:
            problems.append(
                f"run {run.run_id} is for commit {run.context.commit}, run {first.run_id} for {first.context.commit}"
            )
    seen: dict[tuple[str, str, int], str] = {}
    for run in shards:
        for case in run.cases:
            if case.key in seen:
                problems.append(
                    f"{case.eval_set_id}/{case.case_id}#{case.repetition} is in both {seen[case.key]} and {run.run_id}"
                )
            seen.setdefault(case.key, run.run_id)
    if problems:
        raise GateInputError("cannot merge shards: " + "; ".join(problems))

    ordered = sorted(shards, key=lambda run: run.context.shard_index or 0)
    cases: list[CaseResult] = [case for run in ordered for case in run.cases]
    infos: dict[str, EvalSetInfo] = {}
    for run in ordered:
        for info in run.eval_sets:
            infos.setdefault(info.eval_set_id, info)
    warnings = list(dict.fromkeys(w for run in ordered for w in run.warnings))
    warnings.append("merged from shards " + ", ".join(run.run_id for run in ordered))
    starts = [run.started_at for run in ordered if run.started_at is not None]
    ends = [run.finished_at for run in ordered if run.finished_at is not None]
    return first.model_copy(
        update={
            "run_id": new_run_id,
            "status": "complete",
            "passed": all(run.passed for run in ordered),
            "started_at": min(starts) if starts else None,
            "finished_at": max(ends) if ends else None,
            "eval_sets": list(infos.values()),
            "context": first.context.model_copy(update={"shard_index": None, "shard_count": None}),
            "summary": {},
            "case_summaries": [],
            "cases": cases,
            "warnings": warnings,
        }
    )
