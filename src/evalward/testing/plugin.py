"""The evalward pytest plugin (entry point `evalward` in the `pytest11` group).

Adds `--evalward-json PATH` (also `EVALWARD_PYTEST_JSON`): at the end of the session every run made by
`evalward.testing.evaluate` / `evaluate_async` is written to PATH as one run JSON (merged when there were
several; see `evalward.testing._session`), ready for `evalward import` and `evalward gate`. Nothing is
written when no test evaluated anything.

Under pytest-xdist every worker process keeps its own runs: a worker hands them (as run JSON) to the
controller through xdist's `workeroutput`, and only the controller writes PATH, with every worker's runs
merged. Without that, each worker would overwrite the file with its share.

pytest loads this module in every session of every project where evalward is installed, so it imports
only the standard library and pytest at import time.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

JSON_OPTION = "--evalward-json"
JSON_ENV = "EVALWARD_PYTEST_JSON"
_WRITTEN = pytest.StashKey[str]()
_WORKER_RUNS = "evalward_runs"
"""The `workeroutput` key an xdist worker's runs travel under (a list of run JSON strings)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("evalward", "evalward agent evaluation")
    group.addoption(
        JSON_OPTION,
        dest="evalward_json",
        metavar="PATH",
        default=os.environ.get(JSON_ENV) or None,
        help=f"write the runs of evalward.testing.evaluate in this session as one run JSON [env: {JSON_ENV}]",
    )


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    path = session.config.getoption("evalward_json", default=None)
    if not path:
        return
    # start-up: pytest loads this plugin in every session; the runs' models load only for --evalward-json.
    from evalward.testing import _session

    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: the controller writes the file
        workeroutput[_WORKER_RUNS] = _session.runs_json()
        return
    written = _session.write_merged_run(Path(path))
    if written is not None:
        session.config.stash[_WRITTEN] = written


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    """xdist, on the controller: keep the runs a finished worker sent (see the module docstring)."""
    texts = getattr(node, "workeroutput", {}).get(_WORKER_RUNS) or []
    if not texts:
        return
    # start-up: pytest loads this plugin in every session; the runs' models load only for --evalward-json.
    from evalward.testing import _session

    _session.record_json(texts, source="an xdist worker")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    line = terminalreporter.config.stash.get(_WRITTEN, None)
    if line:
        terminalreporter.write_line(line)
