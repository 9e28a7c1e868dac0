"""The gate-at-scale benchmark, reduced to one small size: it runs, checks every command and prints its table.
(The figures: `python benchmarks/gate_memory.py`.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "gate_memory.py"


def test_the_gate_benchmark_prints_a_row_per_command() -> None:
    completed = subprocess.run(
        [sys.executable, str(BENCHMARK), "--sizes", "12"], capture_output=True, text=True, timeout=300
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    table = completed.stdout.splitlines()[2:]
    # "run (history)  12  0.90s …": the command name, then the case count.
    rows = [(line[:14].strip(), line[14:].split()[0]) for line in table]
    assert rows == [("run (history)", "12"), ("run (history)", "12"), ("gate", "12"), ("compare", "12")]
