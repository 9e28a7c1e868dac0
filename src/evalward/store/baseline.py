"""Which stored run a PR's run is compared against (GATE.md §9). Never "whatever ran last".

`--baseline auto` (the default), in order:
1. the newest complete, comparable, unsharded run on the base branch at the PR's merge-base commit;
2. else the same at the nearest first-parent ancestor of the merge-base that has one
   (`ancestors`, nearest first, computed by the caller with git);
3. else no baseline (None): the caller runs the base side on demand or reports "no baseline".

Comparable = equal `comparability_key` (comparability.py) and at least one case whose content hash is
the same on both sides. Every candidate passed over is recorded with the reason, so a report can say
"run X at 1a2b3c4 refused: criteria of eval set 'smoke' differ".

Explicit specs: `<run_id>` (used even when not comparable — the differences become notes),
`commit:SHA` (newest complete comparable run at that commit, any branch), `branch:NAME` (newest complete
comparable run on that branch), `none` (no baseline).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evalward.errors import GateInputError
from evalward.model import RunResult
from evalward.store.comparability import (
    comparability_differences,
    comparability_key,
    scorer_version,
)
from evalward.store.engine import read_transaction
from evalward.store.repository import Store
from evalward.store.schema import runs_table

__all__ = [
    "BaselineChoice",
    "BaselineSearch",
    "Refusal",
    "comparability_key",
    "search_baseline",
    "select_baseline",
]


class Refusal(BaseModel):
    """A stored run that was considered as the baseline and passed over, and why."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    commit: str | None
    reason: str


class BaselineChoice(BaseModel):
    """The chosen baseline, how it was chosen, and what differs from the current run."""

    model_config = ConfigDict(frozen=True)

    run: RunResult
    how: str = Field(description="E.g. `merge-base 1a2b3c4 on main`, `ancestor 3 commits back …`, `explicit run id`.")
    notes: list[str] = Field(default_factory=list, description="Mismatches and case-set differences to report.")
    refused: list[Refusal] = Field(default_factory=list, description="Candidates passed over on the way.")

    @property
    def commit(self) -> str | None:
        return self.run.context.commit


class BaselineSearch(BaseModel):
    """The outcome of a search: the choice (or None) and everything refused or not found on the way."""

    model_config = ConfigDict(frozen=True)

    choice: BaselineChoice | None
    refused: list[Refusal] = Field(default_factory=list)
    searched: list[str] = Field(default_factory=list, description="What was looked for, for 'no baseline' reports.")


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
    notes[:0] = [f"not comparable: {reason}" for reason in comparability_differences(current, run)]
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
    """The stored run without its cases (enough to explain a comparability mismatch)."""
    from sqlalchemy import select

    with read_transaction(store.engine) as conn:
        data: dict[str, Any] = dict(
            conn.execute(select(runs_table.c.run_json).where(runs_table.c.run_id == run_id)).scalar_one()
        )
    data["cases"] = []
    return RunResult.model_validate(data)


def _case_overlap(current: RunResult, baseline: RunResult) -> tuple[int, int, int, int]:
    """(same, changed, added, removed) case counts by (eval set, case id) and content hash."""
    mine = {(i.eval_set_id, case): h for i in current.eval_sets for case, h in i.case_hashes.items()}
    theirs = {(i.eval_set_id, case): h for i in baseline.eval_sets for case, h in i.case_hashes.items()}
    same = sum(1 for key, h in mine.items() if theirs.get(key) == h)
    changed = sum(1 for key, h in mine.items() if key in theirs and theirs[key] != h)
    added = sum(1 for key in mine if key not in theirs)
    removed = sum(1 for key in theirs if key not in mine)
    return same, changed, added, removed


def _notes(current: RunResult, baseline: RunResult) -> list[str]:
    notes: list[str] = []
    same, changed, added, removed = _case_overlap(current, baseline)
    if changed or added or removed:
        notes.append(
            f"{same} cases comparable; {changed} changed content, {added} added, {removed} removed "
            "(only comparable cases are paired)"
        )
    if baseline.evalward_version != current.evalward_version and scorer_version(
        baseline.evalward_version
    ) == scorer_version(current.evalward_version):
        notes.append(
            f"baseline made with evalward {baseline.evalward_version}, this run with {current.evalward_version}"
        )
    return notes


def _judge(store: Store, current: RunResult, candidate: _Candidate, key: str, *, base_branch: str | None) -> str | None:
    """Why `candidate` cannot be the baseline of `current`; None when it can (before the case check)."""
    if candidate.run_id == current.run_id:
        return "it is the current run"
    if base_branch is not None and candidate.branch != base_branch:
        return f"it ran on branch {candidate.branch!r}, not the base branch {base_branch!r}"
    if candidate.status != "complete":
        return f"it is {candidate.status}, not complete"
    if candidate.shard_count is not None and candidate.shard_count > 1:
        return f"it is only shard {candidate.shard_index}/{candidate.shard_count} (merge the shards first)"
    if candidate.key != key:
        reasons = comparability_differences(current, _header(store, candidate.run_id))
        return "not comparable: " + ("; ".join(reasons) or "comparability key differs")
    return None


def _first_acceptable(
    store: Store,
    current: RunResult,
    candidates: Sequence[_Candidate],
    *,
    base_branch: str | None,
    refused: list[Refusal],
) -> tuple[RunResult, list[str]] | None:
    key = comparability_key(current)
    for candidate in candidates:
        reason = _judge(store, current, candidate, key, base_branch=base_branch)
        if reason is None:
            run = store.load_run(candidate.run_id)
            same, *_ = _case_overlap(current, run)
            if same == 0 and any(i.case_hashes for i in current.eval_sets):
                reason = "no case has the same content in both runs"
            else:
                return run, _notes(current, run)
        refused.append(Refusal(run_id=candidate.run_id, commit=candidate.commit, reason=reason))
    return None


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
    if not merge_base:
        searched.append("no merge-base known (shallow clone or no base branch?)")
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
