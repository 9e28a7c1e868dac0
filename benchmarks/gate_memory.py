"""The gate on stored runs at scale: `evalward gate` and `evalward compare` on runs of 2,000 to 100,000 cases.

For each size a temporary folder gets (from a child process, so this one stays small) the one-turn ADK eval
set and model-free Python agent of `benchmarks/vs_adk_eval.py`, and a SQLite history. Two runs of every case
are stored (`evalward run`, history on: they are timed too), then, each as a subprocess timed from outside
(wall time; peak RSS from `os.wait4`), in one invocation of this script so the rows compare:
- `evalward gate --run <second run>`: the stored run is loaded and judged (no base branch here, so by its
  thresholds alone);
- `evalward compare <first run> <second run> --json …`: both runs loaded and compared with the gate's paired
  statistics (bootstrap, permutation tests), the verdict written as JSON.
Every command must pass (the runs score every case as passed; the gate and the comparison must not fail: exit
code 0), or the benchmark stops. Run ids are given (`--run-id`), not read back from a report: this process
must stay small, since a child's peak RSS starts at its parent's (`measuring.py`). Each command runs as a user's
does, bytecode cached (`measuring.user_env`), after a warm-up round (runs, gate and compare of at most 2,000 cases)
that is not counted; each row shows the load average when it finished.

What it shows (issue #16): the gate keeps about a kilobyte of each stored result, not the result; before,
`gate` on 20,000 cases peaked at 1.05 GB and `compare` of two 100,000-case runs at 2.2 GB.
Run: `python benchmarks/gate_memory.py [--sizes 2000,20000,100000]` (100,000 cases: ~10 minutes).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from measuring import BYTECODE, in_child, load_average, measure, passed_cases

WARM_UP_CASES = 2_000
"""The warm-up round's size at most: past the 500 results a run keeps in memory, so its spill path is warm too."""

Row = tuple[str, int, float, float, str]
"""(command, cases, wall seconds, peak RSS in MB, load average when it finished)."""


def measure_size(cases: int) -> list[Row]:
    """The rows of one size (module docstring); exits when a command failed or a run did not pass every case."""
    rows: list[Row] = []
    evalward = [sys.executable, "-m", "evalward"]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        in_child("vs_adk_eval", "write_project", folder, cases)  # this process stays small (measuring.py)
        os.environ["EVALWARD_DB"] = f"sqlite:///{folder / 'history.db'}"
        # Run ids given, not read from a report: this process must stay small (measuring.py).
        run_ids = [f"bench-{cases}-{attempt}" for attempt in (1, 2)]
        for run_id in run_ids:
            command = [*evalward, "run", "orders.evalset.json", "--agent", "shop_callable.py:answer"]
            command += ["--test-config", "test_config.json", "--run-id", run_id, "-q"]
            wall, rss, output = measure(command, folder)
            if passed_cases(output) != cases:
                sys.exit(f"run of {cases} cases did not pass every case:\n{output[-3000:]}")
            rows.append(("run (history)", cases, wall, rss, load_average()))
        wall, rss, _ = measure([*evalward, "gate", "--run", run_ids[1]], folder)
        rows.append(("gate", cases, wall, rss, load_average()))
        # A comparison that fails (exit code 1: identical agents judged different) stops the benchmark.
        command = [*evalward, "compare", run_ids[0], run_ids[1], "--json", str(folder / "verdict.json")]
        wall, rss, _ = measure(command, folder)
        rows.append(("compare", cases, wall, rss, load_average()))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", default="2000,20000,100000", help="comma-separated case counts, smallest first")
    args = parser.parse_args()
    sizes = sorted(int(size) for size in args.sizes.split(","))
    measure_size(min(sizes[0], WARM_UP_CASES))  # the warm-up round: bytecode written, not counted
    rows = [row for cases in sizes for row in measure_size(cases)]
    print(f"one-turn ADK cases, Python callable agent, SQLite history; gate and compare of the stored runs; {BYTECODE}")
    print(f"{'command':<14} {'cases':>8} {'wall':>9} {'per case':>10} {'peak RSS':>10}  load after it")
    for command_name, cases, wall, rss, load in rows:
        print(f"{command_name:<14} {cases:>8} {wall:>8.2f}s {wall / cases * 1e3:>8.3f}ms {rss:>7.0f} MB  {load}")


if __name__ == "__main__":
    main()
