"""How the `evalward` process ends: a run closes its history database itself, so it can leave the interpreter's
last garbage collections out (`cli.main.main`) and still leave a complete database file behind."""

from __future__ import annotations

import ast
import sqlite3
import subprocess
import sys
from pathlib import Path

DICE = Path(__file__).resolve().parents[2] / "examples" / "dice_agent"

# Runs `main()` as the console script does (no argv: the process is the command) and reports, from the last
# atexit callback, whether the objects alive at exit were frozen.
PROBE = (
    "import atexit, gc, sys\n"
    # The start-up pause ends by itself after START_UP_SECONDS: on a loaded machine a command outlasts that and
    # its objects are frozen by the timer, not by the command. The probe asks what the command itself does.
    "import evalward.gc_tuning\n"
    "evalward.gc_tuning.START_UP_SECONDS = 600.0\n"
    "atexit.register(lambda: print(repr(gc.get_freeze_count() > 0), file=sys.stderr))\n"
    "from evalward._cli.main import main\n"
    "sys.argv = ['evalward', *sys.argv[1:]]\n"
    "main()\n"
)


def run_probe(args: list[str], cwd: Path) -> tuple[int, bool]:
    completed = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120, cwd=cwd, check=False
    )
    frozen: bool = ast.literal_eval(completed.stderr.strip().splitlines()[-1])
    return completed.returncode, frozen


def test_a_run_closes_its_database_and_skips_the_final_collection(tmp_path: Path) -> None:
    db = tmp_path / "history.db"
    args = ["run", str(DICE), "--agent", f"{DICE}/agent.py:root_agent", "--db", f"sqlite:///{db}"]
    code, frozen = run_probe(args, tmp_path)
    assert code == 0
    assert frozen
    # SQLite folded its write-ahead log into the file when the run closed its last connection: the file alone
    # (what a CI cache or artifact keeps) holds the run.
    assert not (tmp_path / "history.db-wal").exists()
    assert not (tmp_path / "history.db-shm").exists()
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT status, passed FROM runs").fetchall() == [("complete", 1)]


def test_other_commands_and_failed_runs_end_as_python_ends(tmp_path: Path) -> None:
    """Only a command that says it closed what it opened skips the collections: here a run whose agent file is
    missing (exit 3: a failed start) and `runs`, which leaves its engine to the interpreter."""
    db = f"sqlite:///{tmp_path / 'history.db'}"
    code, frozen = run_probe(["run", str(DICE), "--agent", f"{tmp_path}/missing.py:agent", "--db", db], tmp_path)
    assert code != 0
    assert not frozen
    code, frozen = run_probe(["runs", "--db", db], tmp_path)
    assert code == 0
    assert not frozen
