"""Several processes writing one history database at once, and writers killed with SIGKILL.

Real processes (multiprocessing with spawn, subprocess + os.kill), on SQLite and PostgreSQL.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from store_factories import make_run
from store_workers import write_into_shared_run, write_own_run

from evalward.store import Store, open_store

PROCESSES = 8
PER_PROCESS = 200
HERE = Path(__file__).parent


def _run_processes(target, args_for) -> list[int]:  # type: ignore[no-untyped-def]
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(PROCESSES)
    results = ctx.Queue()
    processes = [ctx.Process(target=target, args=(*args_for(i), barrier, results)) for i in range(PROCESSES)]
    for process in processes:
        process.start()
    outcomes = [results.get(timeout=300) for _ in processes]
    for process in processes:
        process.join(timeout=60)
    errors = [detail for kind, detail in outcomes if kind == "error"]
    assert errors == []
    assert [p.exitcode for p in processes] == [0] * PROCESSES
    return [int(written) for _kind, written in outcomes]


def _row_counts(store: Store, run_id: str) -> tuple[int, int, int]:
    """(case rows, distinct case keys, metric rows) of a run, counted in SQL."""
    from sqlalchemy import distinct, func, select

    from evalward.store.schema import cases_table, scores_table

    with store.engine.connect() as conn:
        c = cases_table.c
        rows = conn.execute(select(func.count()).where(c.run_id == run_id)).scalar_one()
        distinct_keys = conn.execute(
            select(func.count(distinct(c.case_id + "/" + c.eval_set_id))).where(c.run_id == run_id)
        ).scalar_one()
        scores = conn.execute(select(func.count()).where(scores_table.c.run_id == run_id)).scalar_one()
    return rows, distinct_keys, scores


@pytest.mark.slow
def test_eight_processes_write_disjoint_cases_into_one_run(db_url: str) -> None:
    names = [[f"p{p}-case-{i:03d}" for i in range(PER_PROCESS)] for p in range(PROCESSES)]
    with open_store(db_url) as store:
        store.begin_run(make_run("shared"), [("smoke", n, 0) for group in names for n in group])

    written = _run_processes(write_into_shared_run, lambda i: (db_url, "shared", names[i]))

    assert written == [PER_PROCESS] * PROCESSES
    with open_store(db_url) as store:
        # 8 × 200 = 1600 rows, each with 2 metric rows = 3200.
        assert _row_counts(store, "shared") == (1600, 1600, 3200)
        assert store.missing_items("shared") == []


@pytest.mark.slow
def test_eight_processes_racing_on_the_same_cases_store_each_exactly_once(db_url: str) -> None:
    names = [f"case-{i:03d}" for i in range(PER_PROCESS)]
    with open_store(db_url) as store:
        store.begin_run(make_run("shared"), [("smoke", n, 0) for n in names])

    written = _run_processes(write_into_shared_run, lambda i: (db_url, "shared", names))

    # Every case was written by exactly one of the 8 processes; the other 7 writes returned False.
    assert sum(written) == PER_PROCESS
    with open_store(db_url) as store:
        assert _row_counts(store, "shared") == (200, 200, 400)


@pytest.mark.slow
def test_eight_processes_migrate_an_empty_database_and_write_separate_runs(db_url: str) -> None:
    # The database is empty: all 8 processes open (and migrate) it at the same moment.
    written = _run_processes(write_own_run, lambda i: (db_url, f"run-{i}", PER_PROCESS))

    assert written == [PER_PROCESS] * PROCESSES
    with open_store(db_url) as store:
        runs = store.list_runs()
        assert sorted(r.run_id for r in runs) == [f"run-{i}" for i in range(PROCESSES)]
        assert {(r.status, r.planned, r.recorded) for r in runs} == {("complete", 200, 200)}
        for i in range(PROCESSES):
            assert _row_counts(store, f"run-{i}") == (200, 200, 400)


def _writer(db_url: str, mode: str, count: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(HERE / "store_workers.py"), db_url, "killed", str(count), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=HERE,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), *sys.path])},
    )


@pytest.mark.slow
@pytest.mark.parametrize("kill_after", [1, 37])
def test_a_writer_killed_with_sigkill_resumes_to_exactly_one_row_per_item(db_url: str, kill_after: int) -> None:
    count = 120
    writer = _writer(db_url, "begin", count)
    assert writer.stdout is not None
    seen = 0
    for line in writer.stdout:
        if line.startswith("recorded"):
            seen += 1
            if seen == kill_after:
                # Kill while it is writing the next case (it does not pause between writes).
                os.kill(writer.pid, signal.SIGKILL)
                break
    writer.wait(timeout=60)
    writer.stdout.close()
    assert writer.stderr is not None
    writer.stderr.close()
    assert writer.returncode == -signal.SIGKILL

    with open_store(db_url) as store:
        run = store.load_run("killed")
        recorded = {c.key for c in run.cases}
        planned = set(store.planned_items("killed"))
        missing = store.missing_items("killed")
        assert run.status == "running"
        # At least the acknowledged writes are stored; the one in flight is either fully there or absent.
        assert len(recorded) >= kill_after
        assert set(missing) == planned - recorded
        assert len(missing) + len(recorded) == count
        rows, distinct_keys, scores = _row_counts(store, "killed")
        assert (rows, distinct_keys, scores) == (len(recorded), len(recorded), 2 * len(recorded))

    resumed = _writer(db_url, "resume", count)
    out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    # The resumed writer wrote exactly what was missing.
    assert out.count("recorded ") == len(missing)

    with open_store(db_url) as store:
        assert store.missing_items("killed") == []
        assert _row_counts(store, "killed") == (count, count, 2 * count)
        assert store.load_run("killed").status == "complete"
