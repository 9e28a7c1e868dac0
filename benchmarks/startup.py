"""CLI start-up: wall time of `evalward --help` beside a bare `python -c pass`, median of several runs.

Goal: `evalward --help` ≤ 0.4 s (heavy modules are imported only by the command that needs them).
Run: `python benchmarks/startup.py [--runs N]`.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time


def median_wall(command: list[str], runs: int) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    bare = median_wall([sys.executable, "-c", "pass"], args.runs)
    help_ = median_wall([sys.executable, "-m", "evalward", "--help"], args.runs)
    run_help = median_wall([sys.executable, "-m", "evalward", "run", "--help"], args.runs)
    print(f"python -c pass:         {bare:.3f}s")
    print(f"evalward --help:        {help_:.3f}s (goal <= 0.4s; {help_ / bare:.1f}x a bare interpreter)")
    print(f"evalward run --help:    {run_help:.3f}s")


if __name__ == "__main__":
    main()
