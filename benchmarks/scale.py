"""Flat memory at any size: `evalward run` and `evalward validate` on 2,000 to 100,000 cases, side by side.

For each size a temporary folder gets (from a child process, so this one stays small) an ADK eval set of one-turn cases ("Where is order N?", expecting the
tool call `lookup_order(order_id=N)` and the answer "Order N has shipped.", the project
`benchmarks/vs_adk_eval.py` writes) and a model-free Python agent that answers every case correctly. Each
command runs as a subprocess, timed from outside (wall time; peak RSS from `os.wait4`), in one invocation of
this script so the rows are comparable:
- `evalward run <set> --agent shop_callable.py:answer --test-config test_config.json --no-history -q`
  at every size, plus `--json` and `--junit` report files (written case by case);
- `evalward validate <set>` at the largest size.
Every run must score and pass every case (its exit code and the count it prints), or the benchmark stops.
Each command runs as a user's does, bytecode cached (`measuring.user_env`), after a warm-up `run` and
`validate` of the smallest size that are not counted; each row shows the load average when it finished.

Goals (issue #16): the largest run ≤ 300 MB peak RSS, with a per-case time (wall / cases) within 1.2× of
the 2,000-case run's; `validate` of the largest set ≤ 150 MB.
Run: `python benchmarks/scale.py [--sizes 2000,20000,100000] [--history]` (`--history` keeps the run history
in a SQLite file, as a plain `evalward run` does).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from measuring import BYTECODE, in_child, load_average, measure, passed_cases

RUN_RSS_GOAL_MB = 300.0
VALIDATE_RSS_GOAL_MB = 150.0
PER_CASE_GOAL = 1.2
"""The largest run's per-case time over the smallest run's, at most."""


def run_command(folder: Path, history: bool) -> list[str]:
    command = [sys.executable, "-m", "evalward", "run", str(folder / "orders.evalset.json")]
    command += ["--agent", f"{folder / 'shop_callable.py'}:answer", "--test-config", str(folder / "test_config.json")]
    command += ["--json", str(folder / "run.json"), "--junit", str(folder / "junit.xml"), "-q"]
    return command + ([] if history else ["--no-history"])


def validate_command() -> list[str]:
    return [sys.executable, "-m", "evalward", "validate", "orders.evalset.json"]


def warm_up(cases: int, history: bool) -> None:
    """A `run` and a `validate` of `cases` cases, not counted: the bytecode is written before anything is timed."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        in_child("vs_adk_eval", "write_project", folder, cases)
        os.environ["EVALWARD_DB"] = f"sqlite:///{folder / 'history.db'}"
        measure(run_command(folder, history), folder)
        measure(validate_command(), folder)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", default="2000,20000,100000", help="comma-separated case counts, smallest first")
    parser.add_argument("--history", action="store_true", help="keep the run history (SQLite) instead of --no-history")
    args = parser.parse_args()
    sizes = sorted(int(size) for size in args.sizes.split(","))
    rows: list[tuple[str, int, float, float, str]] = []
    warm_up(sizes[0], args.history)
    for cases in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            in_child("vs_adk_eval", "write_project", folder, cases)  # this process stays small (measuring.py)
            env_db = {"EVALWARD_DB": f"sqlite:///{folder / 'history.db'}"}
            os.environ.update(env_db)
            wall, rss, output = measure(run_command(folder, args.history), folder)
            if passed_cases(output) != cases:
                sys.exit(f"run of {cases} cases did not pass every case:\n{output[-3000:]}")
            rows.append(("run", cases, wall, rss, load_average()))
            if cases == sizes[-1]:
                wall, rss, _ = measure(validate_command(), folder)
                rows.append(("validate", cases, wall, rss, load_average()))
    history = "history in SQLite" if args.history else "--no-history"
    print(f"one-turn ADK cases, Python callable agent, --json and --junit reports, {history}; {BYTECODE}")
    print(f"{'command':<10} {'cases':>8} {'wall':>9} {'per case':>10} {'peak RSS':>10}  load average after it")
    for command, cases, wall, rss, load in rows:
        print(f"{command:<10} {cases:>8} {wall:>8.2f}s {wall / cases * 1e3:>8.3f}ms {rss:>7.0f} MB  {load}")
    runs = [row for row in rows if row[0] == "run"]
    smallest, largest = runs[0], runs[-1]
    ratio = (largest[2] / largest[1]) / (smallest[2] / smallest[1])
    checks = [
        (f"run of {largest[1]} cases ≤ {RUN_RSS_GOAL_MB:g} MB", largest[3] <= RUN_RSS_GOAL_MB),
        (f"per case {ratio:.2f}× the {smallest[1]}-case run's (≤ {PER_CASE_GOAL:g}×)", ratio <= PER_CASE_GOAL),
    ]
    validate = next(row for row in rows if row[0] == "validate")
    checks.append(
        (f"validate of {validate[1]} cases ≤ {VALIDATE_RSS_GOAL_MB:g} MB", validate[3] <= VALIDATE_RSS_GOAL_MB)
    )
    for text, met in checks:
        print(f"goal: {text}: {'met' if met else 'NOT met'}")


if __name__ == "__main__":
    main()
