"""The chaos load test of issue #31 (`benchmarks/daemon_under_fire.py`), reduced to 40 deliveries, one kill -9 of
the web process and one of a worker running a job: real `evalward serve` processes on PostgreSQL (a throwaway
database) when EVALWARD_TEST_POSTGRES_URL is set, else SQLite, cloning and evaluating for real. Nothing may be
lost, duplicated, stuck or left in_progress, and no answer may be a 5xx. (The figures: run the script.)"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest
from tests.fakes.postgres import PG_ENV

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "daemon_under_fire.py"


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("daemon_under_fire_benchmark", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_daemon_under_fire_loses_duplicates_and_strands_nothing() -> None:
    fire = load_script()
    postgres = os.environ.get(PG_ENV)
    options = fire.Options(
        deliveries=40, rate=20, repos=2, prs_per_repo=2, held_prs=1, web_kills=1, worker_kills=1, drain_s=40,
        postgres=postgres, sqlite=not postgres, verbose=False,
    )  # fmt: skip
    report = fire.run(options)
    shown = "\n".join(report.header + report.lines)
    assert report.problems == {}, shown
    figures = report.figures
    # Both kills happened, the worker's while it ran a job; deliveries refused while the web was down were
    # resent and answered; every answer is a 202 and real evaluations finished.
    assert figures["kills"] == [("web", False), ("worker", True)], shown
    assert figures["resent"] > 0 and figures["statuses"] == {202: 40}, shown
    assert figures["jobs"].get("done", 0) >= 2 and figures["jobs"].get("held", 0) >= 1, shown
    assert figures["check_runs"] > 0 and figures["comments"] > 0, shown
    assert figures["watch_looks"] > 0, shown  # the open jobs were really looked at while it ran
