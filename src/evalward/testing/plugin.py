"""The evalward pytest plugin (entry point `evalward` in the `pytest11` group).

Adds `--evalward-json PATH` (also `EVALWARD_PYTEST_JSON`): at the end of the session every run made by
`evalward.testing.evaluate` / `evaluate_async` is written to PATH as one run JSON (merged when there were
several; see `evalward.testing._session`), ready for `evalward import` and `evalward gate`. Nothing is
written when no test evaluated anything.

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
    from evalward.testing import _session

    collected = _session.runs()
    if not collected:
        return
    from evalward.report.json_report import render_json

    run = _session.merged_run(collected)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_json(run), encoding="utf-8")
    counts = run.counts()
    session.config.stash[_WRITTEN] = (
        f"evalward: wrote run {run.run_id} to {target} ({len(collected)} evaluate call(s); "
        f"{counts['passed']} passed, {counts['failed']} failed, {counts['error']} errors)"
    )


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    line = terminalreporter.config.stash.get(_WRITTEN, None)
    if line:
        terminalreporter.write_line(line)
