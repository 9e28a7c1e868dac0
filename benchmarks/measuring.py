"""What the benchmarks share: the environment a user's process gets, the load average printed beside each
figure, and running a command as a child process to time it and read its peak memory.

Bytecode: these machines set `PYTHONDONTWRITEBYTECODE=1`, so a child that inherited it would compile every
module it imports from source on every start, while an installed tool has its bytecode cached (`pip install`
compiles it; an editable install writes it on first use). `user_env` is the environment without it, and every
benchmark runs a warm-up round, not counted, before it measures, so the `__pycache__` files exist when the
timed runs start. Benchmarks that time code in-process say so and time it after a warm-up call, so no import
or first-use compile falls inside a timing. `BYTECODE` and `IN_PROCESS` are the sentences they print.

Memory: a forked child's peak RSS (`ru_maxrss`) starts at its parent's (Linux records the mm it was forked
with), so a benchmark that generated 100,000 cases in its own process would inflate every figure measured
after it: `in_child` runs generation in a process of its own, and `measure` is called from a parent that
stays small.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

BYTECODE = "bytecode cached (timed commands run without PYTHONDONTWRITEBYTECODE, after a warm-up round not counted)"
"""What a benchmark timing child processes prints about bytecode."""
IN_PROCESS = "timed in this process, after a warm-up (no import, bytecode compile or first use inside a timing)"
"""What a benchmark timing code in its own process prints about it."""


def user_env(**extra: str) -> dict[str, str]:
    """The environment a user's process gets: this one without `PYTHONDONTWRITEBYTECODE` (module docstring),
    with this checkout's `src/` first on `PYTHONPATH` (so the command runs this checkout's evalward, whatever
    is installed), plus `extra`."""
    env = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p)
    return {**env, **extra}


def load_average() -> str:
    """The machine's load average over 1, 5 and 15 minutes, as printed beside the figures: on a shared
    2-core machine a load near 2 or above slows every timing."""
    return "load " + " ".join(f"{value:.2f}" for value in os.getloadavg())


@dataclass(frozen=True)
class Measured:
    """One finished command, timed from outside."""

    wall_s: float
    cpu_s: float
    """User + system CPU seconds: the steadier figure on a machine shared with other work."""
    peak_rss_mb: float
    exit_code: int
    output: str
    """Standard output and error, interleaved."""


def run_measured(command: list[str], folder: Path, env: dict[str, str] | None = None) -> Measured:
    """Run `command` in `folder` (environment `env`, default `user_env()`) and measure it (peak RSS from the
    child's own `ru_maxrss`, via `os.wait4`)."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        process = subprocess.Popen(
            command, cwd=folder, env=user_env() if env is None else env, stdout=out, stderr=subprocess.STDOUT
        )
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped here: `Popen` must not think it runs on
        out.seek(0)
        output = out.read().decode(errors="replace")
    # Linux reports ru_maxrss in kilobytes.
    cpu = usage.ru_utime + usage.ru_stime
    return Measured(wall, cpu, usage.ru_maxrss / 1024, process.returncode, output)


def measure(command: list[str], folder: Path) -> tuple[float, float, str]:
    """(wall seconds, peak RSS in MB, output) of one command run as a user runs it (`user_env`); exits when it
    fails."""
    done = run_measured(command, folder)
    if done.exit_code != 0:
        sys.exit(f"{' '.join(command)}: exit code {done.exit_code}:\n{done.output[-3000:]}")
    return done.wall_s, done.peak_rss_mb, done.output


def passed_cases(output: str) -> int:
    """How many cases a run says passed (0 unless none failed or errored)."""
    verdict = re.search(r"(\d+) passed, (\d+) failed, (\d+) errors", output)
    return int(verdict.group(1)) if verdict and verdict.group(2) == verdict.group(3) == "0" else 0


def in_child(module: str, function: str, *args: object) -> None:
    """`benchmarks/<module>.py`'s `function(*args)` (arguments given by their repr) in a process of its own."""
    script = (
        f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import {module}; from pathlib import Path"
    )
    script += (
        f"; {module}.{function}({', '.join(repr(a) if not isinstance(a, Path) else f'Path({str(a)!r})' for a in args)})"
    )
    subprocess.run([sys.executable, "-c", script], check=True)


@dataclass(frozen=True)
class Interleaved:
    """Median (wall s, CPU s, peak RSS MB) of each command over the measured rounds, and the load around them."""

    medians: dict[str, tuple[float, float, float]]
    load_at_start: str
    load_at_end: str

    def print_table(self, cases: int) -> None:
        """One row a command: wall, wall per case, CPU and peak RSS."""
        width = max(len(label) for label in self.medians) + 2
        print(f"{BYTECODE}; {self.load_at_start} at the start, {self.load_at_end} at the end")
        print(f"{'command':<{width}} {'wall':>9} {'per case':>10} {'CPU':>9} {'peak RSS':>10}")
        for label, (wall, cpu, rss) in self.medians.items():
            print(f"{label:<{width}} {wall:>8.2f}s {wall / cases * 1e3:>8.2f}ms {cpu:>8.2f}s {rss:>7.0f} MB")


def interleaved(
    labels: Sequence[str], measure_one: Callable[[str], tuple[float, float, float]], runs: int
) -> Interleaved:
    """Each of `labels` measured by `measure_one` once in a warm-up round (bytecode written, not counted), then
    `runs` rounds in which they take turns, so a noisy neighbour slows every command alike."""
    for label in labels:
        measure_one(label)
    load_at_start = load_average()
    samples: dict[str, list[tuple[float, float, float]]] = {label: [] for label in labels}
    for _ in range(runs):
        for label in labels:
            samples[label].append(measure_one(label))
    load_at_end = load_average()
    medians = {
        label: (
            statistics.median(s[0] for s in rounds),
            statistics.median(s[1] for s in rounds),
            statistics.median(s[2] for s in rounds),
        )
        for label, rounds in samples.items()
    }
    return Interleaved(medians, load_at_start, load_at_end)
