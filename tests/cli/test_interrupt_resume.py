"""A run interrupted by Ctrl-C keeps what finished; one killed with SIGKILL resumes with exactly one result
per case × repetition."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

SLOW_AGENT = """
import time
def run(request):
    time.sleep(0.2)
    return {"response": "ok", "tool_calls": [{"name": "t", "args": {}}]}
"""


def write_cases(folder: Path, count: int) -> Path:
    cases = [
        {"id": f"c{i:02d}", "query": "go", "expect": {"tool_calls": [{"name": "t", "args": {}}]}} for i in range(count)
    ]
    path = folder / "slow.eval.json"
    path.write_text(json.dumps({"evalward": 1, "eval_set_id": "slow", "cases": cases}))
    (folder / "slow_agent.py").write_text(SLOW_AGENT)
    return path


def recorded(db: Path) -> list[tuple[str, str, int]]:
    with sqlite3.connect(db) as conn:
        return list(conn.execute("SELECT run_id, case_id, repetition FROM case_results"))


def start(folder: Path, args: list[str]) -> subprocess.Popen[str]:
    env = {**os.environ, "EVALWARD_DB": f"sqlite:///{folder}/h.db"}
    return subprocess.Popen(
        [sys.executable, "-m", "evalward", "run", *args],
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # A test runner started in the background inherits SIGINT as ignored, and so would the child:
        # restore the default so the child sees Ctrl-C as a user's terminal delivers it.
        preexec_fn=_default_sigint,
    )


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def wait_for_results(db: Path, at_least: int, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if db.exists():
            try:
                if len(recorded(db)) >= at_least:
                    return
            except sqlite3.OperationalError:
                pass  # the schema is still being created
        time.sleep(0.05)
    raise AssertionError(f"fewer than {at_least} results were stored in time")


def test_ctrl_c_exits_130_and_keeps_finished_cases(tmp_path: Path) -> None:
    evals = write_cases(tmp_path, 40)
    proc = start(tmp_path, [str(evals), "--agent", "slow_agent.py:run", "-j", "2"])
    wait_for_results(tmp_path / "h.db", 3)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stdout + stderr
    kept = recorded(tmp_path / "h.db")
    assert 3 <= len(kept) < 40
    with sqlite3.connect(tmp_path / "h.db") as conn:
        assert conn.execute("SELECT status FROM runs").fetchone()[0] == "cancelled"
    assert "interrupted" in stderr


@pytest.mark.parametrize("repeat", [1, 2])
def test_kill_9_then_resume_gives_exactly_one_result_each(tmp_path: Path, repeat: int) -> None:
    evals = write_cases(tmp_path, 12)
    args = [str(evals), "--agent", "slow_agent.py:run", "-j", "3", "--repeat", str(repeat), "--commit", "f" * 40]
    proc = start(tmp_path, args)
    wait_for_results(tmp_path / "h.db", 4)
    proc.kill()
    proc.communicate(timeout=30)
    before = recorded(tmp_path / "h.db")
    run_id = before[0][0]
    assert len(before) < 12 * repeat

    resumed = start(tmp_path, [*args, "--resume", run_id])
    stdout, stderr = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, stdout + stderr
    after = recorded(tmp_path / "h.db")
    assert sorted(after) == sorted({(run_id, f"c{i:02d}", r) for i in range(12) for r in range(repeat)})
    with sqlite3.connect(tmp_path / "h.db") as conn:
        assert conn.execute("SELECT status FROM runs WHERE run_id = ?", (run_id,)).fetchone()[0] == "complete"


def test_unfinished_run_is_offered_for_resume(tmp_path: Path) -> None:
    evals = write_cases(tmp_path, 8)
    args = [str(evals), "--agent", "slow_agent.py:run", "-j", "2", "--commit", "e" * 40]
    proc = start(tmp_path, args)
    wait_for_results(tmp_path / "h.db", 2)
    proc.kill()
    proc.communicate(timeout=30)
    run_id = recorded(tmp_path / "h.db")[0][0]
    again = start(tmp_path, args)
    _, stderr = again.communicate(timeout=120)
    assert f"--resume {run_id}" in stderr
