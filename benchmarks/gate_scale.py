"""How fast is the gate's database work at scale? (goal: ≤ 0.5 s per step)

Fills a history database with RUNS × CASES case results (default 1000 × 1000 = 1,000,000, each with two
metric scores) on a linear first-parent history c0000 … c0999 of `main`, then times what `evalward gate`
does for a PR whose merge-base has no run of its own:

1. baseline lookup: `select_baseline("auto")` over the merge-base and 50 first-parent ancestors, including
   loading the chosen baseline RunResult with all its case results;
2. loading the baseline's scores alone (`Store.load_scores`), the cheap path;
3. `evalward.gate.decide(current, baseline, policy)` when the gate package is importable;
plus, for information, flip rates over the last 50 base-branch runs and the run-level history.

Usage:
    python benchmarks/gate_scale.py                      # SQLite in a temp dir (+ PostgreSQL if
                                                         #   EVALWARD_TEST_POSTGRES_URL is set)
    python benchmarks/gate_scale.py --runs 100 --cases 200   # a quick look
    python benchmarks/gate_scale.py --sqlite-only

Everything runs in this process: each step is called once as a warm-up (not counted: imports, first-use
compiles, statement caches), then timed 5 times (3 for the gate), the median printed with the load average.

PostgreSQL gets a uniquely named database, dropped afterwards. Bulk loading bypasses `record_case` (one
transaction per case would take hours at this size): rows go in with executemany (SQLite) or COPY
(PostgreSQL), built with the store's own row mapping so they are exactly what `record_case` writes.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from evalward.model import (
    AgentTarget,
    CaseResult,
    EvalSetInfo,
    InvocationResult,
    MetricResult,
    MetricSpec,
    RunContext,
    RunResult,
    ToolCall,
    Usage,
)
from evalward.store import Store, open_store, select_baseline
from evalward.store.engine import write_transaction
from evalward.store.rows import rows_of_case, run_columns
from evalward.store.schema import cases_table, plan_table, runs_table, scores_table

sys.path.insert(0, str(Path(__file__).resolve().parent))

from measuring import IN_PROCESS, load_average  # a sibling script, found through the path above

T0 = datetime(2025, 1, 1, tzinfo=UTC)
SET_ID = "support"
GOAL_S = 0.5


def sha(index: int) -> str:
    """A realistic-looking commit SHA for commit number `index`."""
    return hashlib.sha1(f"commit {index}".encode()).hexdigest()


def eval_set(cases: int) -> EvalSetInfo:
    return EvalSetInfo(
        eval_set_id=SET_ID,
        format="native",
        content_hash="set-hash",
        criteria=[MetricSpec(name="trajectory_f1", threshold=0.8), MetricSpec(name="response_match", threshold=0.5)],
        case_hashes={f"case-{i:04d}": f"h{i:04d}" for i in range(cases)},
    )


def make_run(run_id: str, commit: str, branch: str, hours: int, info: EvalSetInfo) -> RunResult:
    return RunResult(
        run_id=run_id,
        status="complete",
        passed=True,
        repetitions=1,
        started_at=T0 + timedelta(hours=hours),
        finished_at=T0 + timedelta(hours=hours, minutes=20),
        agent=AgentTarget(kind="python", target="agents.support:agent", config_hash="cfg"),
        eval_sets=[info],
        context=RunContext(repository="acme/support-bot", commit=commit, branch=branch, base_branch="main"),
        evalward_version="0.1.0",
        fingerprint="fp",
    )


def make_case(index: int, run_index: int) -> CaseResult:
    # Deterministic, mildly noisy scores: about 1 case in 7 fails a given run.
    passed = (index * 31 + run_index * 17) % 7 != 0
    score = 1.0 if passed else 0.5
    return CaseResult(
        eval_set_id=SET_ID,
        case_id=f"case-{index:04d}",
        status="passed" if passed else "failed",
        metric_results=[
            MetricResult(
                name="trajectory_f1",
                score=score,
                threshold=0.8,
                status="passed" if passed else "failed",
                explanation=f"LCS=2, precision=2/2={score:.3f}",
            ),
            MetricResult(name="response_match", score=0.75, threshold=0.5, status="passed"),
        ],
        invocations=[
            InvocationResult(
                turn=0,
                query="Where is my order?",
                actual_response="It ships today.",
                actual_tool_calls=[ToolCall(name="lookup_order", args={"order_id": index})],
                latency_s=0.4,
            )
        ],
        latency_s=0.5,
        usage=Usage(input_tokens=900, output_tokens=120, cost_usd=0.0011),
        content_hash=f"h{index:04d}",
    )


def fill(store: Store, runs: int, cases: int) -> float:
    """Insert `runs` complete runs of `cases` case results each on main; return the seconds taken."""
    info = eval_set(cases)
    started = time.perf_counter()
    # One template per distinct outcome pattern keeps building rows cheap: only ids and statuses vary.
    is_pg = store.engine.dialect.name == "postgresql"
    for r in range(runs):
        run = make_run(f"run-{r:04d}", sha(r), "main", r, info)
        now = T0 + timedelta(hours=r, minutes=20)
        case_rows: list[dict[str, Any]] = []
        score_rows: list[dict[str, Any]] = []
        for i in range(cases):
            row, scores = rows_of_case(run.run_id, make_case(i, r), now)
            case_rows.append(row)
            score_rows.extend(scores)
        plan_rows = [
            {"run_id": run.run_id, "eval_set_id": SET_ID, "case_id": f"case-{i:04d}", "repetition": 0}
            for i in range(cases)
        ]
        with write_transaction(store.engine) as conn:
            conn.execute(
                runs_table.insert().values(
                    **run_columns(run, "complete"),
                    planned_count=cases,
                    created_at=now,
                    case_order=[[SET_ID, f"case-{i:04d}", 0] for i in range(cases)],
                )
            )
            if is_pg:
                _copy(conn, "run_plan", plan_rows)
                _copy(conn, "case_results", case_rows)
                _copy(conn, "metric_scores", score_rows)
            else:
                conn.execute(plan_table.insert(), plan_rows)
                conn.execute(cases_table.insert(), case_rows)
                conn.execute(scores_table.insert(), score_rows)
        if (r + 1) % 100 == 0:
            elapsed = time.perf_counter() - started
            print(f"  {(r + 1) * cases:>9,} case results stored ({elapsed:.0f} s)", flush=True)
    return time.perf_counter() - started


def _copy(conn: Any, table: str, rows: list[dict[str, Any]]) -> None:
    """PostgreSQL COPY of dict rows (JSON columns as text, timestamps as aware datetimes)."""
    import json

    if not rows:
        return
    columns = list(rows[0])
    raw = conn.connection.driver_connection
    with raw.cursor() as cursor, cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row([json.dumps(v) if isinstance(v, dict | list) else v for v in row.values()])


def timed(label: str, action: Callable[[], Any], repeat: int = 5) -> tuple[Any, float]:
    """Run `action` once as a warm-up (not counted), then `repeat` times; print the median with the load average
    and return (last result, median seconds)."""
    seconds: list[float] = []
    result: Any = action()
    for _ in range(repeat):
        start = time.perf_counter()
        result = action()
        seconds.append(time.perf_counter() - start)
    median = statistics.median(seconds)
    verdict = "ok" if median <= GOAL_S else f"SLOWER than the {GOAL_S} s goal"
    print(
        f"  {label:<52} median {median:7.3f} s  (min {min(seconds):.3f}, max {max(seconds):.3f})  {verdict}"
        f"  ({load_average()})"
    )
    return result, median


def measure(store: Store, runs: int, cases: int) -> dict[str, float]:
    info = eval_set(cases)
    # The PR: branched from a merge-base that has no run; the newest run is 3 first-parent commits back.
    merge_base = sha(runs + 2)
    ancestors = [sha(runs + 1), sha(runs)] + [sha(i) for i in range(runs - 1, max(runs - 49, -1), -1)]
    current = make_run("pr-run", sha(10**6), "feature", runs + 5, info)
    current = current.model_copy(update={"cases": [make_case(i, runs + 5) for i in range(cases)]})
    figures: dict[str, float] = {}

    choice, figures["baseline_lookup_and_load"] = timed(
        "baseline lookup (auto, 50 ancestors) + load the run",
        lambda: select_baseline(
            store, "auto", current=current, base_branch="main", merge_base=merge_base, ancestors=ancestors
        ),
    )
    assert choice is not None and choice.run.run_id == f"run-{runs - 1:04d}", choice
    assert len(choice.run.cases) == cases
    print(f"    -> {choice.run.run_id}: {choice.how}")
    scores, figures["load_scores"] = timed(
        "load the baseline's scores (metric_scores only)", lambda: store.load_scores(choice.run.run_id)
    )
    assert len(scores) == 2 * cases
    _, figures["flip_rates"] = timed("flip rates over the last 50 main runs", lambda: store.flip_rates("main"))
    _, figures["history"] = timed(
        "history: trajectory_f1 over the last 50 main runs",
        lambda: store.case_history(metric="trajectory_f1", branch="main"),
    )
    try:
        from evalward.gate import GatePolicy, decide
    except ImportError as exc:
        print(f"  gate.decide not importable ({exc}); skipped")
    else:
        policy = GatePolicy()
        _, figures["gate_decide"] = timed(
            "evalward.gate.decide(current, baseline)", lambda: decide(current, choice.run, policy), repeat=3
        )
    return figures


@contextmanager
def postgres_database(base_url: str) -> Iterator[str]:
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    from evalward.store import resolve_db_url

    admin_url = make_url(resolve_db_url(base_url))
    name = f"evalward_bench_{uuid.uuid4().hex[:8]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield admin_url.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def bench(label: str, url: str, runs: int, cases: int) -> dict[str, float]:
    print(f"\n== {label}: {runs:,} runs × {cases:,} cases = {runs * cases:,} case results; {IN_PROCESS}")
    with open_store(url) as store:
        seconds = fill(store, runs, cases)
        print(f"  filled in {seconds:.0f} s ({runs * cases / seconds:,.0f} case results/s)")
        if store.engine.dialect.name == "postgresql":
            # What autovacuum does to an insert-heavy table in a long-lived database: statistics, plus the
            # visibility map that lets flip rates use an index-only scan.
            with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.exec_driver_sql("VACUUM ANALYZE")
        else:
            with store.engine.connect() as conn:
                conn.exec_driver_sql("ANALYZE")  # fresh planner statistics, as a long-lived database has
        return measure(store, runs, cases)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--sqlite-only", action="store_true")
    parser.add_argument("--postgres-only", action="store_true")
    parser.add_argument("--sqlite-path", help="SQLite file to fill (default: a temp dir, deleted afterwards)")
    args = parser.parse_args()

    if not args.postgres_only:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(args.sqlite_path) if args.sqlite_path else Path(tmp) / "history.db"
            bench("SQLite", f"sqlite:///{path}", args.runs, args.cases)
    pg = os.environ.get("EVALWARD_TEST_POSTGRES_URL")
    if pg and not args.sqlite_only:
        with postgres_database(pg) as url:
            bench("PostgreSQL", url, args.runs, args.cases)


if __name__ == "__main__":
    main()
