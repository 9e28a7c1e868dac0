"""The scale benchmark, reduced to two small sizes: it runs, checks every case passed and prints its table.
(The figures: `python benchmarks/scale.py`.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "scale.py"


def test_the_scale_benchmark_prints_a_row_per_command_and_its_goals() -> None:
    completed = subprocess.run(
        [sys.executable, str(BENCHMARK), "--sizes", "30,10"], capture_output=True, text=True, timeout=300
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    lines = completed.stdout.splitlines()
    rows = [line.split()[:2] for line in lines if line.startswith(("run ", "validate "))]
    assert rows == [["run", "10"], ["run", "30"], ["validate", "30"]]
    assert sum(line.startswith("goal: ") for line in lines) == 3
