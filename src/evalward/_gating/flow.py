"""Where history, the base side and the gate meet: make the baseline, then `gate.decide`.

Used by `evalward gate`, `evalward ci` and the daemon, so a verdict is reached the same way everywhere
(docs/gate.md §9, "the agent is the treatment; the eval set, the metrics and the grader are the instrument"):

1. **Merge-base** of the run's commit with its base (recorded, else computed with git in `repo_dir`, the
   checkout; `repo_dir=None` — the daemon's API and dashboard, which have no checkout — uses only what the
   run recorded, and then no base side can run). A base branch the caller found in the checkout because the
   run recorded none (`_gating.base_branch`, for `evalward gate`) is named, with how it was found, in the
   verdict (`base_branch_note`).
2. **Stored baseline**: the newest usable run at the merge-base, else at its nearest first-parent ancestor
   (`store.baseline`; never "whatever ran last"); with `remote`, the evalward server's history.
3. **Re-scored** under the current instrument when its expectations, criteria, grader or scorer differ
   (`_gating.rescore`), so a loosened threshold or an edited answer still compares like with like.
4. **Base side on demand** (`_gating.base_side`, `baseline_run`): the cases no stored run covers are run
   with the merge-base's agent in a worktree — in `run_and_gate` interleaved with the current run —
   and stored for the next pull request.
5. **No baseline** only when neither exists: `no_base` (no merge-base, or a first-ever run whose base
   cannot run: the thresholds alone judge) or `unavailable` (the policy's `on_missing_baseline`).
6. `gate.decide`, the baseline described in the verdict (how chosen, re-scored, run on demand, what changed
   in the agent).
7. **Top-up** (`_gating.top_up`, where the agent can run): an inconclusive verdict gets more repetitions on
   both sides, within the policy's budget, and is decided again; the final verdict is recorded with `record`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from evalward import __version__
from evalward._gating import base_side as bs
from evalward._gating.base_side import BaselineRunMode, cases_to_run
from evalward._gating.rescore import rescore_baseline
from evalward._gating.top_up import agent_can_run_again, top_up
from evalward._pipeline import PreparedRun, run_blocking, run_pair, with_judge_identities
from evalward.errors import EvalFileError, FileProblem, GateInputError, InfrastructureError
from evalward.gate import GatePolicy, decide
from evalward.gate.sequential import plan_looks
from evalward.model import RunResult
from evalward.model.cases import CaseKey
from evalward.model.records import in_key_order, iter_record_keys, joined, pick_where, record_statuses, records_where
from evalward.model.verdict import AgentRuns, BaselineInfo, Look, NoBaseline, Verdict
from evalward.remote_history import MAX_ANCESTORS, BaselineQuery
from evalward.store import BaselineSearch, git_first_parent_ancestors, search_baseline
from evalward.store.comparability import agent_changes, case_keys, same_input
from evalward.store.gitinfo import resolve_merge_base

if TYPE_CHECKING:
    from evalward._pipeline import ProgressCallback
    from evalward.runners.agent_contract import Agent
    from evalward.store import Store

RemoteSearch = Callable[["BaselineQuery"], "tuple[BaselineSearch, dict[tuple[str, str], float]]"]
"""Asks a server for the baseline search and the flip rates (`RemoteHistory.search_baseline` bound to a run)."""


@dataclass
class GateOutcome:
    """A verdict with everything needed to render it."""

    current: RunResult
    baseline: RunResult | None
    verdict: Verdict
    search: BaselineSearch


@dataclass
class BaselinePlan:
    """What the gate will compare with, decided before the base side runs."""

    merge_base: str | None
    search: BaselineSearch
    flip_rates: dict[tuple[str, str], float] | None
    base_side_cases: list[CaseKey] = field(default_factory=list)
    """Cases the base side must run (by `baseline_run`)."""
    no_base: str | None = None
    """Why there is no base side at all (no merge-base, the commit is its own base)."""
    problem: str | None = None
    """Why the base side could not run (set while running it)."""
    base_side_possible: bool = True
    """False where no base side can be run (no eval sets loaded, an explicit baseline, `baseline_run=never`)."""
    base_branch_note: str | None = None
    """How the base branch was found when the run recorded none and none was given (said in the verdict)."""


def load_policy(
    settings: dict[str, Any], *, config_path: str | None = None, overrides: dict[str, Any] | None = None
) -> GatePolicy:
    """The gate policy from the settings file's `[gate]` table, with command-line overrides applied."""
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


def plan_baseline(
    store: Store,
    current: RunResult,
    *,
    baseline_spec: str,
    base_branch: str | None,
    repo_dir: Path | None,
    remote: RemoteSearch | None,
    baseline_run: BaselineRunMode,
    can_run_base_side: bool,
) -> BaselinePlan:
    """Steps 1, 2 and the choice of cases for step 4 (module docstring). `current` may be a header (no cases
    yet): only its context and eval-set records are read."""
    merge_base = resolve_merge_base(current, base_branch=base_branch, repo_dir=repo_dir)
    ancestors = git_first_parent_ancestors(repo_dir, merge_base) if merge_base and repo_dir is not None else []
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
    plan = BaselinePlan(merge_base=merge_base, search=search, flip_rates=flip_rates)
    ctx = current.context
    if baseline_spec.strip() == "none":
        plan.no_base = "no baseline was asked for (--baseline none)"
    elif merge_base is None:
        if not (ctx.base_sha or base_branch):
            plan.no_base = "no base branch or base commit is known for this run, so there is no base side"
        elif repo_dir is None:
            plan.problem = (
                f"the run did not record the merge-base of {(ctx.commit or 'the run')[:12]} with "
                f"{ctx.base_sha or base_branch}, and there is no checkout here to compute it"
            )
        else:
            plan.problem = (
                f"the merge-base of {(ctx.commit or 'the run')[:12]} with {ctx.base_sha or base_branch} could not be "
                "computed with git (a shallow clone lacks the history: use `fetch-depth: 0`)"
            )
    elif ctx.commit and merge_base == ctx.commit:
        plan.no_base = f"commit {merge_base[:12]} is its own merge-base with {base_branch or 'its base'}: no base side"
    if (
        baseline_spec.strip() != "auto"
        or merge_base is None
        or plan.no_base is not None
        or not can_run_base_side
        or repo_dir is None
        or baseline_run == "never"
    ):
        plan.base_side_possible = False
        return plan
    mine = case_keys(current)
    covered: set[tuple[CaseKey, str]] = set()
    if search.choice is not None:
        theirs = case_keys(search.choice.run)
        with_results = _case_keys_of(search.choice.run)
        for key, value in mine.items():
            if key in with_results and key in theirs and same_input(value, theirs[key]):
                covered.add((key, value[0]))
    current_cases = [(key, value[0]) for key, value in sorted(mine.items())]
    plan.base_side_cases = cases_to_run(current_cases, covered, baseline_run)
    return plan


def header_of(prepared: PreparedRun, *, run_id: str = "planned") -> RunResult:
    """The current run before it runs: its eval-set records and context, enough to plan its baseline."""
    options = prepared.options
    return RunResult(
        run_id=run_id,
        status="running",
        passed=False,
        repetitions=options.repeat,
        eval_sets=with_judge_identities(prepared.set_infos(), prepared.judges),
        context=options.context,
        evalward_version=__version__,
    )


def run_and_gate(
    prepared: PreparedRun,
    store: Store,
    policy: GatePolicy,
    *,
    baseline_spec: str = "auto",
    base_branch: str | None = None,
    baseline_run: BaselineRunMode = "missing",
    repo_dir: Path,
    remote: RemoteSearch | None = None,
    record: str | None = None,
    progress: ProgressCallback | None = None,
    after_run: Callable[[RunResult], None] | None = None,
) -> GateOutcome:
    """Run the current evals and, interleaved with them, the base side they need; then gate (module docstring).

    `after_run` sees the finished current run before it is gated (to write the report files first; it may
    raise, e.g. KeyboardInterrupt for a cancelled run). Raises what the current run raises (bad input, an
    agent that cannot start, an interrupt); the base side's failures become the verdict's "no baseline"
    reason."""
    base_branch = base_branch or prepared.options.context.base_branch
    plan = plan_baseline(
        store,
        header_of(prepared),
        baseline_spec=baseline_spec,
        base_branch=base_branch,
        repo_dir=repo_dir,
        remote=remote,
        baseline_run=baseline_run,
        can_run_base_side=True,
    )
    with ExitStack() as stack:
        base = bs.start_base_side(stack, prepared, plan, base_branch=base_branch, repo_dir=repo_dir)
        runs = run_pair(prepared, base, store=store, progress=progress)
    if runs.base_error is not None:
        plan.problem = f"the base side failed: {runs.base_error}"
    if after_run is not None:
        after_run(runs.current)
    outcome = finish_gate(
        store,
        runs.current,
        policy,
        plan,
        runs.base,
        instrument=prepared,
        look=first_look(policy, prepared, runs.current),
    )
    return _top_up_and_record(
        store, outcome, policy, plan, prepared=prepared, base_branch=base_branch, repo_dir=repo_dir, record=record
    )


def gate_run(
    store: Store,
    current: RunResult,
    policy: GatePolicy,
    *,
    baseline_spec: str = "auto",
    base_branch: str | None = None,
    allow_mismatch: bool = False,
    repo_dir: Path | None,
    remote: RemoteSearch | None = None,
    record: str | None = None,
    instrument: PreparedRun | None = None,
    baseline_run: BaselineRunMode = "missing",
    base_branch_note: str | None = None,
) -> GateOutcome:
    """Gate a finished run (module docstring). `instrument` — the run's eval sets, loaded again — lets the
    baseline be re-scored and the base side be run for the cases no stored run covers (then not interleaved:
    the current run is already done); without it only stored runs, as recorded, can be the baseline.

    An explicit baseline whose cases share nothing with this run is refused unless `allow_mismatch`.
    `repo_dir`: the checkout git looks in; None where there is none (the merge-base must be recorded).
    `base_branch_note`: how `base_branch` was found when the run recorded none (`_gating.base_branch`), said in
    the verdict: in how its baseline was chosen, or in why there is none."""
    base_branch = base_branch or current.context.base_branch
    plan = plan_baseline(
        store,
        current,
        baseline_spec=baseline_spec,
        base_branch=base_branch,
        repo_dir=repo_dir,
        remote=remote,
        baseline_run=baseline_run,
        can_run_base_side=instrument is not None,
    )
    plan.base_branch_note = base_branch_note
    choice = plan.search.choice
    if choice is not None and not allow_mismatch:
        blocking_notes = [n for n in choice.notes if n.startswith("not comparable")]
        if blocking_notes:
            raise GateInputError(
                f"baseline run {choice.run.run_id} is not comparable with run {current.run_id}: "
                + "; ".join(blocking_notes)
                + " (pass --allow-mismatch to compare anyway)"
            )
    base_run = None
    if instrument is not None and plan.base_side_cases and repo_dir is not None:
        with ExitStack() as stack:
            base = bs.start_base_side(stack, instrument, plan, base_branch=base_branch, repo_dir=repo_dir)
            if base is not None:
                base_run, error = _run_base_alone(base, store)
                if error is not None:
                    plan.problem = f"the base side failed: {error}"
    outcome = finish_gate(
        store, current, policy, plan, base_run, instrument=instrument, look=first_look(policy, instrument, current)
    )
    return _top_up_and_record(
        store, outcome, policy, plan, prepared=instrument, base_branch=base_branch, repo_dir=repo_dir, record=record
    )


def _top_up_and_record(
    store: Store,
    outcome: GateOutcome,
    policy: GatePolicy,
    plan: BaselinePlan,
    *,
    prepared: PreparedRun | None,
    base_branch: str | None,
    repo_dir: Path | None,
    record: str | None,
) -> GateOutcome:
    """Step 7: an inconclusive verdict topped up with more repetitions of its compared cases, when the agent can
    run here (`prepared`: the run's eval sets and agent); then the final verdict recorded."""
    if prepared is not None:
        outcome = top_up(outcome, prepared, policy, plan, base_branch=base_branch, repo_dir=repo_dir)
    if record is not None and store.has_run(outcome.current.run_id):
        store.record_verdict(outcome.verdict, source=record)
    return outcome


def _run_base_alone(base: tuple[PreparedRun, Agent], store: Store) -> tuple[RunResult | None, str | None]:
    """The base side without a current run beside it (the current run is already stored): (run, error)."""
    prepared, agent = base
    try:
        return run_blocking(prepared, store=store, agent=agent), None
    except Exception as exc:  # the base agent's failure is the verdict's reason, not a crash of the gate
        return None, f"{type(exc).__name__}: {exc}"


def first_look(policy: GatePolicy, prepared: PreparedRun | None, current: RunResult) -> Look:
    """The first look and the levels of both (`gate.sequential.plan_looks`): two where the agent can run again here
    (a top-up may follow), else one at the whole α. Decided from the design before any result is read."""
    cases = sum(len(info.case_hashes) for info in current.eval_sets) or len(_case_keys_of(current))
    return plan_looks(
        policy, agent_can_run=agent_can_run_again(prepared), cases=cases, repetitions=max(1, current.repetitions)
    )


def finish_gate(
    store: Store,
    current: RunResult,
    policy: GatePolicy,
    plan: BaselinePlan,
    base_run: RunResult | None,
    *,
    instrument: PreparedRun | None,
    look: Look | None = None,
) -> GateOutcome:
    """Steps 3, 5 and 6: re-score the stored baseline, combine it with the base side's run, decide (at `look`:
    default one look at the whole α)."""
    choice = plan.search.choice
    stored = choice.run if choice is not None else None
    notes: list[str] = []
    rescored = 0
    if stored is not None and instrument is not None:
        result = asyncio.run(rescore_baseline(stored, current, instrument, store=store))
        stored, rescored = result.run, result.rescored
        if result.rescored:
            notes.append(
                f"{result.rescored} baseline case result(s) re-scored from their recorded outputs under this run's "
                "criteria and expectations"
            )
        if result.unscorable:
            notes.append(f"{len(result.unscorable)} case(s) recorded no outputs and could not be re-scored")
    usable_base = base_run
    if base_run is not None and base_run.cases and all(status == "error" for status in record_statuses(base_run.cases)):
        first = next((c.error for c in records_where(base_run.cases, "error".__eq__) if c.error is not None), None)
        plan.problem = (
            f"the base side ran but every case errored ({first.kind}: {first.message[:300]})"
            if first is not None
            else "the base side ran but every case errored"
        )
        usable_base = None
    baseline = _combine(stored, usable_base)
    if baseline is not None and current.case_selection:
        baseline, outside = _within_selection(baseline, current)
        if outside:
            notes.append(
                f"{outside} baseline case(s) outside this run's selection ({current.case_selection}) not compared"
            )
    if usable_base is not None:
        notes.append(
            f"{len(_case_keys_of(usable_base))} case(s) run on demand on the base side "
            f"at {(usable_base.context.commit or '?')[:12]} in this job (stored as run {usable_base.run_id})"
        )
    if plan.problem is not None and plan.base_side_cases:
        notes.append(f"the base side could not run for {len(plan.base_side_cases)} case(s): {plan.problem}")
    if baseline is not None:
        notes[:0] = agent_changes(baseline, current)
    no_baseline = None if baseline is not None else _why_none(store, current, plan)
    verdict = decide(current, baseline, policy, flip_rates=plan.flip_rates or None, no_baseline=no_baseline, look=look)
    verdict = verdict.model_copy(
        update={
            "agent_runs": AgentRuns(
                current=len(current.cases),
                base_side=len(usable_base.cases) if usable_base is not None else 0,
                stored_baseline=len(stored.cases) if stored is not None else 0,
            )
        }
    )
    if baseline is not None:
        info = verdict.baseline or BaselineInfo(run_id=baseline.run_id)
        created = baseline.finished_at or baseline.started_at
        age = (datetime.now(UTC) - created).total_seconds() if created else None
        verdict = verdict.model_copy(
            update={
                "baseline": info.model_copy(
                    update={
                        "chosen_by": _chosen_by(plan, stored, usable_base),
                        "age_s": age,
                        "notes": [*notes, *(choice.notes if choice is not None else [])],
                        "rescored_cases": rescored,
                        "on_demand_cases": len(_case_keys_of(usable_base)) if usable_base is not None else 0,
                    }
                )
            }
        )
    return GateOutcome(current=current, baseline=baseline, verdict=verdict, search=plan.search)


def _chosen_by(plan: BaselinePlan, stored: RunResult | None, base_run: RunResult | None) -> str:
    choice = plan.search.choice
    parts: list[str] = []
    if stored is not None and choice is not None:
        parts.append(choice.how)
    if base_run is not None:
        sha = (plan.merge_base or "?")[:7]
        parts.append(f"base side run on demand at the merge-base {sha}, interleaved with this run's cases")
    if parts and plan.base_branch_note is not None:
        parts.append(plan.base_branch_note)
    return "; ".join(parts)


def _combine(stored: RunResult | None, base_run: RunResult | None) -> RunResult | None:
    """The stored (re-scored) baseline with the base side's cases in place of its own for those cases."""
    if base_run is None:
        return stored
    if stored is None:
        return base_run
    ran = _case_keys_of(base_run)
    # A view of both runs' records (none is read here): a large baseline stays in its temporary file.
    cases = joined(pick_where(stored.cases, lambda key: (key[0], key[1]) not in ran), base_run.cases)
    infos = {info.eval_set_id: info for info in stored.eval_sets}
    for info in base_run.eval_sets:
        old = infos.get(info.eval_set_id)
        if old is None:
            infos[info.eval_set_id] = info
            continue
        infos[info.eval_set_id] = old.model_copy(
            update={
                "criteria": list(info.criteria),
                "case_hashes": {**old.case_hashes, **info.case_hashes},
                "case_input_hashes": {**old.case_input_hashes, **info.case_input_hashes},
                "case_sources": {**old.case_sources, **info.case_sources},
            }
        )
    return base_run.model_copy(update={"cases": in_key_order(cases), "eval_sets": list(infos.values())})


def _within_selection(baseline: RunResult, current: RunResult) -> tuple[RunResult, int]:
    """The baseline limited to the cases the current run lists, and how many others it had: a run of selected
    cases (`--case`, `--sample`, `FILE:IDS`) is compared on those, not told that the rest were removed."""
    mine = set(case_keys(current))
    theirs = set(case_keys(baseline)) | _case_keys_of(baseline)
    infos = [
        info.model_copy(
            update={
                name: {k: v for k, v in getattr(info, name).items() if (info.eval_set_id, k) in mine}
                for name in ("case_hashes", "case_input_hashes", "case_sources")
            }
        )
        for info in baseline.eval_sets
    ]
    cases = pick_where(baseline.cases, lambda key: (key[0], key[1]) in mine)
    return baseline.model_copy(update={"cases": cases, "eval_sets": infos}), len(theirs - mine)


def _case_keys_of(run: RunResult) -> set[CaseKey]:
    """The (eval_set_id, case_id) of every result of `run`, from the records' keys (no record is read)."""
    return {(key[0], key[1]) for key in iter_record_keys(run.cases)}


def _why_none(store: Store, current: RunResult, plan: BaselinePlan) -> NoBaseline:
    """The verdict's reason for having no baseline (step 5)."""
    searched = "; ".join(plan.search.searched)
    refused = "; ".join(f"run {r.run_id} ({(r.commit or '?')[:12]}): {r.reason}" for r in plan.search.refused[:5])
    found = plan.base_branch_note
    looked = " ".join(
        part
        for part in (
            f"{found[:1].upper()}{found[1:]}." if found else "",
            f"Looked for: {searched}." if searched else "",
            f"Passed over {refused}." if refused else "",
        )
        if part
    )
    if plan.no_base is not None:
        return NoBaseline(kind="no_base", reason=plan.no_base + (f". {looked}" if looked else ""))
    if plan.problem is not None:
        if not _has_history(store, current):
            return NoBaseline(
                kind="no_base",
                reason=f"a first run: no stored history, and {plan.problem}" + (f". {looked}" if looked else ""),
            )
        return NoBaseline(kind="unavailable", reason=plan.problem + (f". {looked}" if looked else ""))
    if not plan.base_side_possible:
        why = (
            "no stored run covers these cases, and the base side was not run here (baseline-run: never, an "
            "explicit --baseline, or the eval files are not available to run it)"
        )
        return NoBaseline(kind="unavailable", reason=why + (f". {looked}" if looked else ""))
    return NoBaseline(kind="unavailable", reason=looked or "no baseline could be found or made")


def _has_history(store: Store, current: RunResult) -> bool:
    """Whether the history holds any run besides the current one (a first-ever run has none)."""
    return any(row.run_id != current.run_id for row in store.list_runs(limit=3))


LATEST_LOOKBACK = 50
"""Runs `latest` looks through, newest first, for one that is not a base side run on demand."""


def load_current_run(store: Store, ref: str) -> RunResult:
    """`latest` = the newest stored run that is not a base side run made on demand (any status: an unfinished
    run is judged incomplete, not skipped)."""
    if ref == "latest":
        rows = store.list_runs(limit=LATEST_LOOKBACK)
        if not rows:
            raise GateInputError("the history database has no runs yet; run `evalward run` first")
        own = (r for r in rows if store.load_run_header(r.run_id).context.base_side_for is None)
        ref = next(own, rows[0]).run_id
    return store.load_run(ref)
