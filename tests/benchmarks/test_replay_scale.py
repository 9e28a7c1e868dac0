"""The recordings scale benchmark, reduced to two tiny sizes: it replays and imports every case, checks each
passed, and prints its table. (The figures: `python benchmarks/replay_scale.py`.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "replay_scale.py"


def test_the_replay_scale_benchmark_prints_a_row_per_command_and_its_goals() -> None:
    completed = subprocess.run(
        [
            sys.executable,
            str(BENCHMARK),
            "--sizes",
            "40,12",
            "--repeat",
            "4",
            "--import-traces",
            "--cases-per-file",
            "4",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    lines = completed.stdout.splitlines()
    rows = [line.split()[:3] for line in lines if line.startswith(("run replay:", "import-traces"))]
    # 12 outputs = 3 cases × 4 repetitions, 40 = 10 × 4 (in 3 eval sets of at most 4 cases); an import has
    # one trace per case.
    assert rows == [
        ["run", "replay:", "12"],
        ["import-traces", "3", "3"],
        ["run", "replay:", "40"],
        ["import-traces", "10", "10"],
    ]
    assert sum(line.startswith("goal: ") for line in lines) == 2
    assert any(line.strip().startswith("40 lines: kept") for line in lines)
