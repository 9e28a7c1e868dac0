"""Where history and the gate meet: find the baseline for a stored run, then `gate.decide`.

Used by `evalward gate`, `evalward ci` and the daemon, so a verdict is reached the same way everywhere.
Baseline selection never falls back to "whatever ran last": it is the merge-base run, else the nearest
first-parent ancestor with a comparable run, else none — reported as such.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from evalward.errors import EvalFileError, FileProblem, GateInputError
from evalward.model import RunResult
from evalward.model.verdict import BaselineInfo, Verdict

if TYPE_CHECKING:
    from evalward.gate import GatePolicy
    from evalward.remote_history import BaselineQuery
    from evalward.store import BaselineSearch, Store

RemoteSearch = Callable[["BaselineQuery"], "tuple[BaselineSearch, dict[tuple[str, str], float]]"]
"""Asks a server for the baseline search and the flip rates (`RemoteHistory.search_baseline` bound to a run)."""


@dataclass
class GateOutcome:
    """A verdict with everything needed to render it."""

    current: RunResult
    baseline: RunResult | None
    verdict: Verdict
    search: BaselineSearch


def load_policy(
    settings: dict[str, Any], *, config_path: str | None = None, overrides: dict[str, Any] | None = None
) -> GatePolicy:
    """The gate policy from the settings file's `[gate]` table, with command-line overrides applied."""
    from evalward.gate import GatePolicy

    data = {**settings, **{k: v for k, v in (overrides or {}).items() if v is not None}}
    try:
        return GatePolicy.model_validate(data)
    except ValidationError as exc:
        problems = [
            FileProblem(
                path=config_path or "<gate policy>",
                json_path=".".join(["gate", *(str(p) for p in error["loc"])]),
                message="unknown key" if error["type"] == "extra_forbidden" else error["msg"],
            )
            for error in exc.errors()
        ]
        raise EvalFileError(problems) from exc


def resolve_merge_base(current: RunResult, *, base_branch: str | None, repo_dir: Path) -> str | None:
    """The merge-base recorded with the run, else computed with git from its base SHA or base branch."""
    from evalward.store import git_merge_base

    ctx = current.context
    if ctx.merge_base:
        return ctx.merge_base
    if not ctx.commit:
        return None
    for ref in (ctx.base_sha, f"origin/{base_branch}" if base_branch else None, base_branch):
        if ref:
            found = git_merge_base(repo_dir, ref, ctx.commit)
            if found:
                return found
    return None


def gate_run(
    store: Store,
    current: RunResult,
    policy: GatePolicy,
    *,
    baseline_spec: str = "auto",
    base_branch: str | None = None,
    allow_mismatch: bool = False,
    repo_dir: Path | None = None,
    remote: RemoteSearch | None = None,
    record: str | None = None,
) -> GateOutcome:
    """Select the baseline for `current` and decide. Mismatched explicit baselines are refused.

    With `remote`, the baseline and the flip rates come from an evalward server's history (see
    `evalward.remote_history`); a server that cannot be reached gives "no baseline" with the reason.
    With `record` (gate, ci, serve), the verdict is kept in the history database as the one that gated the
    run, so the dashboard shows what the pull request got rather than a recomputation."""
    from evalward.errors import InfrastructureError
    from evalward.gate import decide
    from evalward.remote_history import MAX_ANCESTORS, BaselineQuery
    from evalward.store import BaselineSearch, git_first_parent_ancestors, search_baseline

    repo = repo_dir or Path.cwd()
    base_branch = base_branch or current.context.base_branch
    merge_base = resolve_merge_base(current, base_branch=base_branch, repo_dir=repo)
    ancestors = git_first_parent_ancestors(repo, merge_base) if merge_base else []
    flip_rates: dict[tuple[str, str], float] | None = None
    if remote is not None:
        query = BaselineQuery(
            spec=baseline_spec, base_branch=base_branch, merge_base=merge_base, ancestors=ancestors[:MAX_ANCESTORS]
        )
        try:
            search, flip_rates = remote(query)
        except InfrastructureError as exc:
            search = BaselineSearch(choice=None, searched=[f"the history server could not be asked ({exc})"])
    else:
        search = search_baseline(
            store, baseline_spec, current=current, base_branch=base_branch, merge_base=merge_base, ancestors=ancestors
        )
        if base_branch:
            flip_rates = store.flip_rates(base_branch, fingerprint=current.fingerprint)
    choice = search.choice
    if choice is not None:
        blocking_notes = [n for n in choice.notes if n.startswith("not comparable")]
        if blocking_notes and not allow_mismatch:
            raise GateInputError(
                f"baseline run {choice.run.run_id} is not comparable with run {current.run_id}: "
                + "; ".join(blocking_notes)
                + " (pass --allow-mismatch to compare anyway)"
            )
    baseline = choice.run if choice is not None else None
    verdict = decide(current, baseline, policy, flip_rates=flip_rates or None)
    if choice is not None:
        info = verdict.baseline or BaselineInfo(run_id=choice.run.run_id)
        created = choice.run.finished_at or choice.run.started_at
        age = (datetime.now(UTC) - created).total_seconds() if created else None
        verdict = verdict.model_copy(
            update={"baseline": info.model_copy(update={"chosen_by": choice.how, "age_s": age})}
        )
    elif search.searched or search.refused:
        # Say what was looked for and why candidates were passed over, so "no baseline" can be acted on.
        looked = " Looked for: " + "; ".join(search.searched) + "." if search.searched else ""
        refused = "".join(
            f" Passed over run {r.run_id} ({(r.commit or '?')[:12]}): {r.reason}." for r in search.refused[:5]
        )
        verdict = verdict.model_copy(update={"reason": verdict.reason + looked + refused})
    if record is not None and store.has_run(current.run_id):
        store.record_verdict(verdict, source=record)
    return GateOutcome(current=current, baseline=baseline, verdict=verdict, search=search)


def load_current_run(store: Store, ref: str) -> RunResult:
    """`latest` = the newest stored run (any status: an unfinished run is judged incomplete, not skipped)."""
    if ref == "latest":
        rows = store.list_runs(limit=1)
        if not rows:
            raise GateInputError("the history database has no runs yet; run `evalward run` first")
        ref = rows[0].run_id
    return store.load_run(ref)
