"""The console script pauses cyclic garbage collection while it imports (`evalward.gc_tuning`) and never runs
the user's agent, a long command or an in-process caller without it."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalward import gc_tuning
from evalward._cli.main import main

AGENT = """
import gc

def agent(request):
    return "collector enabled: " + str(gc.isenabled())
"""

EVAL_SET = (
    '{"evalward": 1, "eval_set_id": "s", "cases": '
    '[{"id": "one", "query": "hi", "expect": {"response": "collector enabled: True"}}]}'
)


@pytest.fixture(autouse=True)
def collector_restored() -> Iterator[None]:
    yield
    gc_tuning.end_start_up()
    gc.enable()
    gc.unfreeze()  # ending start-up froze this test process's objects: give them back to the collector


def test_pause_stops_collection_until_start_up_ends() -> None:
    gc_tuning.pause_during_start_up()
    assert not gc.isenabled()
    gc_tuning.end_start_up()
    assert gc.isenabled()
    # what start-up made is frozen, so the first collection does not scan it all
    assert gc.get_freeze_count() > 0
    gc_tuning.end_start_up()  # a second end (the timer firing late) changes nothing
    assert gc.isenabled()


def test_the_timer_resumes_collection_when_nothing_else_does(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gc_tuning, "START_UP_SECONDS", 0.05)
    gc_tuning.pause_during_start_up()
    assert not gc.isenabled()
    deadline = time.monotonic() + 5
    while not gc.isenabled() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert gc.isenabled()
    assert not any(isinstance(thread, threading.Timer) and thread.is_alive() for thread in threading.enumerate())


def test_a_collector_someone_else_disabled_stays_disabled() -> None:
    gc.disable()
    gc_tuning.pause_during_start_up()
    gc_tuning.end_start_up()
    assert not gc.isenabled()


def test_in_process_callers_never_pause(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(AGENT, encoding="utf-8")
    (tmp_path / "set.json").write_text(EVAL_SET, encoding="utf-8")
    main(["validate", str(tmp_path / "set.json")])  # `validate` never ends a pause: one would still be on here
    assert gc.isenabled()


def test_the_agent_runs_with_the_collector_on(tmp_path: Path) -> None:
    """The console script's pause has ended by the time the agent is called: its response says so and is scored."""
    (tmp_path / "agent.py").write_text(AGENT, encoding="utf-8")
    (tmp_path / "set.json").write_text(EVAL_SET, encoding="utf-8")
    probe = "import sys\nfrom evalward._cli.main import main\nsys.argv = ['evalward', *sys.argv[1:]]\nmain()\n"
    completed = subprocess.run(
        [sys.executable, "-c", probe, "run", "set.json", "--agent", "agent.py:agent", "--json", "out.json",
         "--metric", "response_match_score=1", "--metrics-mode", "replace", "--no-history"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr
    # the agent's own answer (the expected one is in the file too, so read the actual response)
    [case] = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))["cases"]
    assert case["invocations"][0]["actual_response"] == "collector enabled: True"
