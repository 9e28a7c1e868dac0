"""Render one run for people and tools: terminal, JSON, JUnit XML and markdown (PR comment, job summary).

All escaping of untrusted text lives in `evalward.report.escape` and, for HTML pages, in the template
environment of `evalward.report.templating`; nowhere else. Every name is loaded on
first use, so importing one renderer does not import the others (nor rich, nor jinja2, which loads when a page
is rendered).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalward.report.diff import ArgDiff, DiffLine, TrajectoryDiff, steps_diff, trajectory_diff
    from evalward.report.html import render_html
    from evalward.report.junit import render_junit
    from evalward.report.markdown import render_run_markdown
    from evalward.report.terminal import print_run
    from evalward.report.verdict_markdown import render_verdict_markdown
    from evalward.report.verdict_terminal import print_verdict
    from evalward.run_json import load_run_json, render_json

# Each name is loaded from its module on first use: a run imports `report.escape` or `report.terminal` without
# paying for the comparison, HTML and JUnit renderers it may never write.
_HOME = {
    "ArgDiff": "diff",
    "DiffLine": "diff",
    "TrajectoryDiff": "diff",
    "steps_diff": "diff",
    "trajectory_diff": "diff",
    "load_run_json": "evalward.run_json",
    "render_json": "evalward.run_json",
    "print_run": "terminal",
    "print_verdict": "verdict_terminal",
    "render_verdict_markdown": "verdict_markdown",
    "render_html": "html",
    "render_junit": "junit",
    "render_run_markdown": "markdown",
}

__all__ = [
    "ArgDiff",
    "DiffLine",
    "TrajectoryDiff",
    "load_run_json",
    "print_run",
    "print_verdict",
    "render_html",
    "render_json",
    "render_junit",
    "render_run_markdown",
    "render_verdict_markdown",
    "steps_diff",
    "trajectory_diff",
]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(home if "." in home else f"{__name__}.{home}"), name)
