"""What the scale benchmarks share: running a command as a child process and reading its peak memory.

A forked child's peak RSS (`ru_maxrss`) starts at its parent's (Linux records the mm it was forked with), so
a benchmark that generated 100,000 cases in its own process would inflate every figure measured after it:
`in_child` runs generation in a process of its own, and `measure` is called from a parent that stays small.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


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
    """Run `command` in `folder` and measure it (peak RSS from the child's own `ru_maxrss`, via `os.wait4`)."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        process = subprocess.Popen(command, cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        out.seek(0)
        output = out.read().decode(errors="replace")
    # Linux reports ru_maxrss in kilobytes.
    cpu = usage.ru_utime + usage.ru_stime
    return Measured(wall, cpu, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status), output)


def measure(command: list[str], folder: Path) -> tuple[float, float, str]:
    """(wall seconds, peak RSS in MB, output) of one command; exits when it fails. The command runs this
    checkout's evalward (its `src/` first on the path), whatever is installed."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p),
    }
    done = run_measured(command, folder, env)
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
