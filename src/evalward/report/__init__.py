"""Render one run for people and tools: terminal, JSON, JUnit XML and markdown (PR comment, job summary).

All escaping of untrusted text lives in `evalward.report.escape` and, for HTML pages, in the template
environment of `evalward.report.templating`; nowhere else. `print_run` is loaded on first use so importing
this package does not import rich (nor jinja2, which loads when a page is rendered).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalward.report.comparison import print_verdict, render_verdict_markdown
from evalward.report.diff import ArgDiff, DiffLine, TrajectoryDiff, steps_diff, trajectory_diff
from evalward.report.html import render_html
from evalward.report.json_report import load_run_json, render_json
from evalward.report.junit import render_junit
from evalward.report.markdown import render_run_markdown

if TYPE_CHECKING:
    from evalward.report.terminal import print_run

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
    if name == "print_run":
        from evalward.report.terminal import print_run

        return print_run
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
