"""The runs `evaluate` made in this process, and their merge into one run for `--evalward-json`.

Merging (`merged_run`): case results are concatenated (a later result for the same eval set, case and
repetition replaces an earlier one, with a warning); eval sets are united by id; the agent is the common
one, or `kind="mixed"` naming every target; the pass rule and repetitions are the first run's and the
largest; the fingerprint hashes the component fingerprints; summaries and the verdict are recomputed by
`_pipeline.finalize`, so the file gates exactly as the separate runs would together.
"""

from __future__ import annotations

import threading
from pathlib import Path

from evalward._pipeline import finalize, new_run_id
from evalward.model import AgentTarget, CaseResult, EvalSetInfo, RunResult, canonical_hash
from evalward.run_json import load_run_json, render_json

_lock = threading.Lock()
_runs: list[RunResult] = []


def record(run: RunResult) -> None:
    with _lock:
        _runs.append(run)


def runs() -> list[RunResult]:
    with _lock:
        return list(_runs)


def clear() -> None:
    with _lock:
        _runs.clear()


def runs_json() -> list[str]:
    """The runs made in this process, as run JSON (an xdist worker's share, for the controller)."""
    return [render_json(run) for run in runs()]


def record_json(texts: list[str], *, source: str) -> None:
    """Record runs given as run JSON (a finished xdist worker's)."""
    for text in texts:
        record(load_run_json(text, source=source))


def write_merged_run(target: Path) -> str | None:
    """Write the runs made in this process to `target` as one run JSON (`merged_run`); the line to report, or
    None when nothing was evaluated (and nothing written)."""
    collected = runs()
    if not collected:
        return None
    run = merged_run(collected)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_json(run), encoding="utf-8")
    counts = run.counts()
    return (
        f"evalward: wrote run {run.run_id} to {target} ({len(collected)} evaluate call(s); "
        f"{counts['passed']} passed, {counts['failed']} failed, {counts['error']} errors)"
    )


def merged_run(collected: list[RunResult]) -> RunResult:
    """One run holding every case of `collected` (rules in the module docstring)."""
    from datetime import UTC, datetime

    if len(collected) == 1:
        return collected[0]
    first = collected[0]
    warnings: list[str] = []
    cases: dict[tuple[str, str, int], CaseResult] = {}
    infos: dict[str, EvalSetInfo] = {}
    targets: list[AgentTarget] = []
    for run in collected:
        warnings.extend(run.warnings)
        if run.pass_rule != first.pass_rule:
            warnings.append(f"run {run.run_id} used pass rule {run.pass_rule}; the merged run uses {first.pass_rule}")
        for case in run.cases:
            if case.key in cases:
                warnings.append(
                    f"case {case.case_id!r} of eval set {case.eval_set_id!r} (repetition {case.repetition}) "
                    "was evaluated more than once; the last result is kept"
                )
            cases[case.key] = case
        for info in run.eval_sets:
            infos.setdefault(info.eval_set_id, info)
        if run.agent is not None and run.agent not in targets:
            targets.append(run.agent)
    if len(targets) == 1:
        agent = targets[0]
    else:
        agent = AgentTarget(
            kind="mixed",
            target=" + ".join(t.target for t in targets),
            config_hash=canonical_hash([t.config_hash for t in targets]),
        )
    statuses = {run.status for run in collected}
    status = "complete" if statuses == {"complete"} else ("failed" if "failed" in statuses else "cancelled")
    merged = first.model_copy(
        update={
            "run_id": new_run_id(),
            "agent": agent,
            "eval_sets": list(infos.values()),
            "repetitions": max(run.repetitions for run in collected),
            "started_at": min((r.started_at for r in collected if r.started_at), default=datetime.now(UTC)),
            "fingerprint": canonical_hash(sorted(run.fingerprint for run in collected)),
            "warnings": warnings,
        }
    )
    return finalize(merged, list(cases.values()), status=status)
