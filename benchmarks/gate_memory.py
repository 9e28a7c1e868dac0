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
must stay small, since a child's peak RSS starts at its parent's (`measuring.py`).

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

from measuring import in_child, measure, passed_cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", default="2000,20000,100000", help="comma-separated case counts, smallest first")
    args = parser.parse_args()
    rows: list[tuple[str, int, float, float]] = []
    evalward = [sys.executable, "-m", "evalward"]
    for cases in sorted(int(size) for size in args.sizes.split(",")):
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
                rows.append(("run (history)", cases, wall, rss))
            wall, rss, _ = measure([*evalward, "gate", "--run", run_ids[1]], folder)
            rows.append(("gate", cases, wall, rss))
            # A comparison that fails (exit code 1: identical agents judged different) stops the benchmark.
            command = [*evalward, "compare", run_ids[0], run_ids[1], "--json", str(folder / "verdict.json")]
            wall, rss, _ = measure(command, folder)
            rows.append(("compare", cases, wall, rss))
    print("one-turn ADK cases, Python callable agent, SQLite history; gate and compare of the stored runs")
    print(f"{'command':<14} {'cases':>8} {'wall':>9} {'per case':>10} {'peak RSS':>10}")
    for command_name, cases, wall, rss in rows:
        print(f"{command_name:<14} {cases:>8} {wall:>8.2f}s {wall / cases * 1e3:>8.3f}ms {rss:>7.0f} MB")


if __name__ == "__main__":
    main()
