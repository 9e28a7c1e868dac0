"""Real runs for the server tests: the dice example agent (offline, deterministic) through the pipeline.

`broken=True` runs a copy of the agent that rolls a 20-sided die whatever it is asked, so the
`roll a die` cases regress (tool_trajectory_avg_score 1.0 → 0.0) — a run the gate must fail.
"""

from __future__ import annotations

import asyncio
import shutil
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

from evalward._pipeline import RunOptions, prepare, run_prepared
from evalward.model import RunContext, RunResult
from evalward.store import Store

DICE = Path(__file__).resolve().parents[2] / "examples" / "dice_agent"
BROKEN_LINE = ("sides = int(roll.group(1) or 6)", "sides = 20")


def dice_project(into: Path, *, broken: bool = False) -> Path:
    """The dice example as a project folder: evals/ (dice.evalset.json + test_config.json) and agent.py."""
    (into / "evals").mkdir(parents=True, exist_ok=True)
    for name in ("dice.evalset.json", "test_config.json"):
        shutil.copy(DICE / name, into / "evals" / name)
    source = (DICE / "agent.py").read_text(encoding="utf-8")
    if broken:
        assert BROKEN_LINE[0] in source
        source = source.replace(*BROKEN_LINE)
    (into / "agent.py").write_text(source, encoding="utf-8")
    return into


def dice_run(
    store: Store,
    work: Path,
    *,
    run_id: str,
    repository: str = "acme/dice",
    commit: str,
    branch: str = "main",
    pr_number: int | None = None,
    broken: bool = False,
    started: datetime | None = None,
) -> RunResult:
    """Run the dice evals and store the run (as `evalward run` would)."""
    project = dice_project(work / run_id, broken=broken)
    options = RunOptions(
        paths=[str(project / "evals")],
        agent="agent.py:root_agent",
        run_id=run_id,
        agent_cwd=project,
        context=RunContext(
            repository=repository, commit=commit, branch=branch, base_branch="main", pr_number=pr_number
        ),
    )
    prepared = prepare(options)
    # A thread of its own, so async tests (which already run a loop) can call this too.
    with ThreadPoolExecutor(1) as pool:
        run = pool.submit(asyncio.run, run_prepared(prepared, store=store)).result()
    if started is not None:
        run = run.model_copy(update={"started_at": started, "finished_at": started + timedelta(seconds=1)})
        store.finish_run(run)
    return run


def t(minutes: int) -> datetime:
    return datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=minutes)
