"""`evalward` run as users run it: a subprocess from the repository root, its history in the test's folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_cli(args: list[str], tmp_path: Path) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `python -m evalward ARGS` in the repository root, with EVALWARD_DB a
    SQLite file in `tmp_path`."""
    completed = subprocess.run(
        [sys.executable, "-m", "evalward", *args],
        cwd=ROOT,
        env={**os.environ, "EVALWARD_DB": f"sqlite:///{tmp_path}/h.db"},
        capture_output=True,
        text=True,
        timeout=180,
    )
    return completed.returncode, completed.stdout, completed.stderr
