"""The run and its history writer on CPUs of their own (`evalward.cpu_placement`): the writer on the last CPU,
the run's thread on the others, every CPU back once the writer is done, and an agent process the run starts
free to use them all."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from evalward import cpu_placement

pytestmark = pytest.mark.skipif(
    not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="placing the writer needs sched_setaffinity and two CPUs",
)

SUBPROCESS_AGENT = """
import json, os, sys
for line in sys.stdin:
    request = json.loads(line)
    cpus = ",".join(map(str, sorted(os.sched_getaffinity(0))))
    print(json.dumps({"id": request["id"], "output": {"response": cpus}}), flush=True)
"""

PYTHON_AGENT = """
import os
def run(request):
    return {"response": ",".join(map(str, sorted(os.sched_getaffinity(0))))}
"""


def test_the_writer_gets_the_last_cpu_the_thread_the_others_until_restored() -> None:
    cpus = frozenset(os.sched_getaffinity(0))
    writer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    placement = None
    try:
        placement = cpu_placement.separate(writer.pid)
        assert placement is not None
        assert os.sched_getaffinity(writer.pid) == {max(cpus)}
        assert os.sched_getaffinity(0) == cpus - {max(cpus)}
        seen: list[set[int]] = []
        started = threading.Thread(target=lambda: seen.append(os.sched_getaffinity(0)))
        started.start()
        started.join()
        assert seen == [cpus - {max(cpus)}]  # threads the run starts stay off the writer's CPU
        agent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        try:
            cpu_placement.release(agent.pid)
            assert os.sched_getaffinity(agent.pid) == cpus
        finally:
            agent.kill()
            agent.wait()
    finally:
        cpu_placement.restore(placement)
        writer.kill()
        writer.wait()
    assert os.sched_getaffinity(0) == cpus
    cpu_placement.release(os.getpid())  # nothing placed any more: changes nothing
    assert os.sched_getaffinity(0) == cpus


def test_a_single_cpu_is_left_alone() -> None:
    cpus = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(cpus)})
    try:
        assert cpu_placement.separate(os.getpid()) is None
        assert os.sched_getaffinity(0) == {min(cpus)}
    finally:
        os.sched_setaffinity(0, cpus)


@pytest.mark.parametrize("agent_kind", ["python", "subprocess"])
def test_in_a_run_the_agent_process_has_every_cpu_and_the_run_thread_all_but_the_writers(
    tmp_path: Path, agent_kind: str
) -> None:
    cpus = sorted(os.sched_getaffinity(0))
    cases = [{"id": "a", "query": "q"}]
    eval_file = tmp_path / "set.eval.json"
    eval_file.write_text(json.dumps({"evalward": 1, "eval_set_id": "s", "cases": cases}), encoding="utf-8")
    if agent_kind == "python":
        (tmp_path / "agent.py").write_text(PYTHON_AGENT, encoding="utf-8")
        agent = f"{tmp_path / 'agent.py'}:run"
        expected = cpus[:-1]  # the run's own thread: off the writer's CPU
    else:
        (tmp_path / "sub.py").write_text(SUBPROCESS_AGENT, encoding="utf-8")
        agent = f"cmd:{sys.executable} {tmp_path / 'sub.py'}"
        expected = cpus  # the user's process: every CPU
    report = tmp_path / "run.json"
    completed = subprocess.run(
        [sys.executable, "-m", "evalward", "run", str(eval_file), "--agent", agent, "--json", str(report), "-q"],
        cwd=tmp_path,
        env={**os.environ, "EVALWARD_DB": f"sqlite:///{tmp_path / 'h.db'}"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode in (0, 1), completed.stderr
    [case] = json.loads(report.read_text(encoding="utf-8"))["cases"]
    assert case["invocations"][0]["actual_response"] == ",".join(map(str, expected))
