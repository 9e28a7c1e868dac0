"""Which stored run a PR's run is compared against (docs/gate.md §9). Never "whatever ran last".

`--baseline auto` (the default), in order:
1. the newest complete, comparable, unsharded run on the base branch at the PR's merge-base commit;
2. else the same at the nearest first-parent ancestor of the merge-base that has one
   (`ancestors`, nearest first, computed by the caller with git);
3. else no baseline (None): the caller runs the base side on demand or reports "no baseline".

Usable = complete, on the base branch, not a single shard, and at least one case that asks the agent the
same thing (same eval set, case id and input hash; `comparability.py`). The agent is the treatment and
never a reason to pass a run over; a run scored with other criteria or another grader is usable too (the
caller re-scores it from its recorded outputs). At the chosen commit, up to `COMPOSE_MAX` usable runs are
combined, newest first per case, so cases run on demand for one pull request complete the baseline of the
next. Every candidate passed over is recorded with the reason ("run X at 1a2b3c4: it is cancelled").

Explicit specs: `<run_id>` (used even when not comparable — the differences become notes),
`commit:SHA` (newest complete comparable run at that commit, any branch), `branch:NAME` (newest complete
comparable run on that branch), `none` (no baseline).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from evalward.errors import GateInputError
from evalward.model import RunResult
from evalward.model.records import in_key_order, iter_record_keys, joined, pick_where
from evalward.store.baseline_choice import BaselineChoice, BaselineSearch, Refusal
from evalward.store.comparability import (
    agent_changes,
    case_keys,
    comparability_key,
    input_overlap,
    instrument_differences,
    same_input,
    scorer_version,
)
from evalward.store.engine import read_transaction
from evalward.store.repository import Store
from evalward.store.schema import runs_table

COMPOSE_MAX = 10
"""Usable runs at one commit combined into the baseline, newest first."""

__all__ = [
    "BaselineChoice",
    "BaselineSearch",
    "Refusal",
    "comparability_key",
    "compose",
    "search_baseline",
    "select_baseline",
]


def select_baseline(
    store: Store,
    spec: str,
    *,
    current: RunResult,
    base_branch: str | None,
    merge_base: str | None,
    ancestors: Sequence[str] = (),
) -> BaselineChoice | None:
    """The baseline for `current` under `spec` (see the module docstring); None when there is none."""
    return search_baseline(
        store, spec, current=current, base_branch=base_branch, merge_base=merge_base, ancestors=ancestors
    ).choice


def search_baseline(
    store: Store,
    spec: str,
    *,
    current: RunResult,
    base_branch: str | None,
    merge_base: str | None,
    ancestors: Sequence[str] = (),
) -> BaselineSearch:
    """Like `select_baseline`, also returning the refused candidates and what was searched."""
    spec = (spec or "auto").strip()
    if spec == "auto":
        return _auto(store, current, base_branch, merge_base, ancestors)
    if spec == "none":
        return BaselineSearch(choice=None, searched=["no baseline requested (--baseline none)"])
    if spec in {"latest", "last"}:
        raise GateInputError(
            f"--baseline {spec} is not supported: comparing with whatever ran last hides regressions; "
            "use auto, RUN_ID, commit:SHA or branch:NAME"
        )
    if spec.startswith("commit:"):
        sha = spec.removeprefix("commit:").strip()
        if len(sha) < 4:
            raise GateInputError(f"--baseline {spec}: expected commit:SHA with at least 4 hex digits")
        return _explicit_commit(store, current, sha)
    if spec.startswith("branch:"):
        name = spec.removeprefix("branch:").strip()
        if not name:
            raise GateInputError(f"--baseline {spec}: expected branch:NAME")
        return _explicit_branch(store, current, name)
    run = store.load_run(spec)  # GateInputError for an unknown id
    notes = _notes(current, run)
    if run.status != "complete":
        notes.insert(0, f"the baseline run is {run.status}, not complete")
    if run.context.shard_count is not None and run.context.shard_count > 1:
        notes.insert(0, f"the baseline run is only shard {run.context.shard_index}/{run.context.shard_count}")
    if input_overlap(current, run)[0] == 0 and any(i.case_hashes for i in current.eval_sets):
        notes.insert(0, "not comparable: no case asks the agent the same thing in both runs")
    return BaselineSearch(choice=BaselineChoice(run=run, how="explicit run id", notes=notes))


# -- candidates -----------------------------------------------------------------------------------


class _Candidate(BaseModel):
    run_id: str
    commit: str | None
    branch: str | None
    status: str
    key: str
    shard_index: int | None
    shard_count: int | None
    started_at: datetime | None
    finished_at: datetime | None


def _candidates(
    store: Store,
    *,
    commits: Sequence[str] = (),
    prefix: str | None = None,
    branch: str | None = None,
    limit: int | None = None,
) -> list[_Candidate]:
    """Runs at any of `commits` (or at a SHA starting with `prefix`, or on `branch`), newest first."""
    from sqlalchemy import select

    c = runs_table.c
    query = select(
        c.run_id,
        c.commit_sha,
        c.branch,
        c.status,
        c.comparability_key,
        c.shard_index,
        c.shard_count,
        c.started_at,
        c.finished_at,
    )
    if commits:
        query = query.where(c.commit_sha.in_(list(commits)))
    if prefix is not None:
        query = query.where(c.commit_sha.startswith(prefix.lower(), autoescape=True))
    if branch is not None:
        query = query.where(c.branch == branch)
    query = query.order_by(c.finished_at.desc().nulls_last(), c.started_at.desc().nulls_last(), c.run_id)
    if limit is not None:
        query = query.limit(limit)
    with read_transaction(store.engine) as conn:
        rows = conn.execute(query).all()
    return [
        _Candidate(
            run_id=r.run_id,
            commit=r.commit_sha,
            branch=r.branch,
            status=r.status,
            key=r.comparability_key,
            shard_index=r.shard_index,
            shard_count=r.shard_count,
            started_at=r.started_at,
            finished_at=r.finished_at,
        )
        for r in rows
    ]


def _header(store: Store, run_id: str) -> RunResult:
    """The stored run without its cases (enough to check which cases it has)."""
    return store.load_run_header(run_id)


def _notes(current: RunResult, baseline: RunResult) -> list[str]:
    notes: list[str] = list(agent_changes(baseline, current))
    same, changed, added, removed = input_overlap(current, baseline)
    if changed or added or removed:
        notes.append(
            f"{same} cases ask the same as in the baseline run; {changed} with changed inputs, {added} added, "
            f"{removed} removed"
        )
    notes.extend(f"measured differently: {reason}" for reason in instrument_differences(current, baseline))
    if baseline.evalward_version != current.evalward_version and scorer_version(
        baseline.evalward_version
    ) == scorer_version(current.evalward_version):
        notes.append(
            f"baseline made with evalward {baseline.evalward_version}, this run with {current.evalward_version}"
        )
    return notes


def _judge(store: Store, current: RunResult, candidate: _Candidate, *, base_branch: str | None) -> str | None:
    """Why `candidate` cannot be the baseline of `current`; None when it can (before the case check).

    The agent and the instrument are never reasons (module docstring)."""
    if candidate.run_id == current.run_id:
        return "it is the current run"
    if base_branch is not None and candidate.branch != base_branch:
        return f"it ran on branch {candidate.branch!r}, not the base branch {base_branch!r}"
    if candidate.status != "complete":
        return f"it is {candidate.status}, not complete"
    if candidate.shard_count is not None and candidate.shard_count > 1:
        return f"it is only shard {candidate.shard_index}/{candidate.shard_count} (merge the shards first)"
    return None


def _first_acceptable(
    store: Store,
    current: RunResult,
    candidates: Sequence[_Candidate],
    *,
    base_branch: str | None,
    refused: list[Refusal],
) -> tuple[RunResult, list[str]] | None:
    """The usable runs among `candidates` (newest first), combined (`compose`), with the notes; None if none."""
    usable: list[RunResult] = []
    for candidate in candidates:
        if len(usable) >= COMPOSE_MAX:
            break
        reason = _judge(store, current, candidate, base_branch=base_branch)
        if reason is None:
            header = _header(store, candidate.run_id)
            same, *_ = input_overlap(current, header)
            if same == 0 and any(i.case_hashes for i in current.eval_sets):
                reason = "no case asks the agent the same thing in both runs (ids or inputs differ)"
            else:
                usable.append(store.load_run(candidate.run_id))
                continue
        refused.append(Refusal(run_id=candidate.run_id, commit=candidate.commit, reason=reason))
    if not usable:
        return None
    run = compose(current, usable)
    notes = _notes(current, run)
    added_from = [r.run_id for r in usable[1:] if r.run_id in _sources(run)]
    if added_from:
        notes.append(
            f"completed with cases of {len(added_from)} older run(s) at the same commit: {', '.join(added_from)}"
        )
    return run, notes


def _sources(run: RunResult) -> set[str]:
    """Run ids whose cases a composed baseline holds (recorded in its warnings by `compose`)."""
    prefix = "composed from run "
    return {w.removeprefix(prefix) for w in run.warnings if w.startswith(prefix)}


def _case_in(keys: set[tuple[str, str]]) -> Callable[[tuple[Any, ...]], bool]:
    """Whether a record's key names one of the cases `keys`."""
    return lambda key: (key[0], key[1]) in keys


def compose(current: RunResult, runs: Sequence[RunResult]) -> RunResult:
    """One baseline from the usable runs at a commit (newest first): the newest run's cases, then each case the
    current run lists (same input) that it lacks, from the next run that has it. Eval-set records are merged the
    same way. With one run, that run unchanged."""
    if len(runs) == 1:
        return runs[0]
    wanted = case_keys(current)
    newest = runs[0]
    parts = [newest.cases]  # views of each run's records: none is read to compose them
    have = {(key[0], key[1]) for key in iter_record_keys(newest.cases)}
    infos = {i.eval_set_id: i.model_copy(deep=True) for i in newest.eval_sets}
    warnings: list[str] = []
    for older in runs[1:]:
        theirs = case_keys(older)
        take = {
            key for key, value in theirs.items() if key not in have and key in wanted and same_input(wanted[key], value)
        }
        if not take:
            continue
        parts.append(pick_where(older.cases, _case_in(take)))
        for info in older.eval_sets:
            target = infos.setdefault(
                info.eval_set_id,
                info.model_copy(update={"case_hashes": {}, "case_input_hashes": {}, "case_sources": {}}),
            )
            hashes, input_hashes, sources = (
                dict(target.case_hashes),
                dict(target.case_input_hashes),
                dict(target.case_sources),
            )
            for set_id, case_id in take:
                if set_id != info.eval_set_id:
                    continue
                hashes[case_id] = info.case_hashes[case_id]
                if case_id in info.case_input_hashes:
                    input_hashes[case_id] = info.case_input_hashes[case_id]
                if case_id in info.case_sources:
                    sources[case_id] = info.case_sources[case_id]
            infos[info.eval_set_id] = target.model_copy(
                update={"case_hashes": hashes, "case_input_hashes": input_hashes, "case_sources": sources}
            )
        have |= take
        warnings.append(f"composed from run {older.run_id}")
    if not warnings:
        return newest
    return newest.model_copy(
        update={
            "cases": in_key_order(joined(*parts)),
            "eval_sets": list(infos.values()),
            "warnings": [*newest.warnings, *warnings],
        }
    )


def _auto(
    store: Store,
    current: RunResult,
    base_branch: str | None,
    merge_base: str | None,
    ancestors: Sequence[str],
) -> BaselineSearch:
    on = f" on {base_branch}" if base_branch else ""
    chain = [sha for sha in ancestors if sha != merge_base]
    # Distance from the merge-base: the caller may or may not include the merge-base itself in `ancestors`.
    offset = 0 if ancestors and ancestors[0] == merge_base else 1
    commits = ([merge_base] if merge_base else []) + chain
    searched: list[str] = []
    refused: list[Refusal] = []
    if not merge_base and base_branch:
        searched.append(f"no merge-base with {base_branch} known (shallow clone, or the branch not fetched?)")
    elif not merge_base:
        searched.append("no merge-base known (no base branch or base commit)")
    if not commits:
        return BaselineSearch(choice=None, refused=refused, searched=searched)
    by_commit: dict[str, list[_Candidate]] = {}
    for start in range(0, len(commits), 500):  # stay under bound-parameter limits
        for candidate in _candidates(store, commits=commits[start : start + 500]):
            by_commit.setdefault(candidate.commit or "", []).append(candidate)
    for position, sha in enumerate(commits):
        found = _first_acceptable(store, current, by_commit.get(sha, []), base_branch=base_branch, refused=refused)
        if found is not None:
            run, notes = found
            if merge_base and position == 0:
                how = f"merge-base {sha[:7]}{on}"
            else:
                back = position - (1 if merge_base else 0) + offset
                how = f"ancestor {back} commit{'s' if back != 1 else ''} back from the merge-base"
                how += f" {merge_base[:7]}{on}" if merge_base else on
                how += f" (at {sha[:7]})"
            choice = BaselineChoice(run=run, how=how, notes=notes, refused=refused)
            return BaselineSearch(choice=choice, refused=refused, searched=searched)
    if merge_base:
        searched.append(f"no comparable complete run at the merge-base {merge_base[:7]}{on}")
    if chain:
        searched.append(f"none at its {len(chain)} nearest first-parent ancestors either")
    return BaselineSearch(choice=None, refused=refused, searched=searched)


def _explicit_commit(store: Store, current: RunResult, sha: str) -> BaselineSearch:
    refused: list[Refusal] = []
    candidates = _candidates(store, prefix=sha)
    found = _first_acceptable(store, current, candidates, base_branch=None, refused=refused)
    if found is None:
        return BaselineSearch(choice=None, refused=refused, searched=[f"no comparable complete run at commit {sha}"])
    run, notes = found
    how = f"explicit commit {(run.context.commit or sha)[:7]}"
    return BaselineSearch(choice=BaselineChoice(run=run, how=how, notes=notes, refused=refused), refused=refused)


def _explicit_branch(store: Store, current: RunResult, name: str) -> BaselineSearch:
    refused: list[Refusal] = []
    candidates = _candidates(store, branch=name, limit=200)
    found = _first_acceptable(store, current, candidates, base_branch=name, refused=refused)
    if found is None:
        return BaselineSearch(choice=None, refused=refused, searched=[f"no comparable complete run on branch {name}"])
    run, notes = found
    commit = (run.context.commit or "?")[:7]
    how = f"newest comparable run on branch {name} (explicit), at {commit}"
    return BaselineSearch(choice=BaselineChoice(run=run, how=how, notes=notes, refused=refused), refused=refused)
