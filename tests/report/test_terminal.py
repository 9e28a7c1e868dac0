"""terminal.py: the console output rendered whole against snapshots, and injection checks."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console

from evalward.model import RunResult
from evalward.report.terminal import print_run


def render(run: RunResult, *, detailed: bool) -> str:
    console = Console(record=True, width=100, force_terminal=False)
    print_run(run, console, detailed=detailed)
    return console.export_text()


def test_sample_run_snapshot(sample_run: RunResult, snapshot: Callable[[str, str], None]):
    snapshot("sample_run.terminal.txt", render(sample_run, detailed=False))


def test_sample_run_detailed_snapshot(sample_run: RunResult, snapshot: Callable[[str, str], None]):
    snapshot("sample_run.detailed.terminal.txt", render(sample_run, detailed=True))


def test_hostile_run_detailed_snapshot(hostile_run: RunResult, snapshot: Callable[[str, str], None]):
    snapshot("hostile_run.detailed.terminal.txt", render(hostile_run, detailed=True))


def test_injection_is_neutralised(hostile_run: RunResult):
    text = render(hostile_run, detailed=True)
    # rich markup in agent output is printed, not interpreted
    assert "[bold]x[/bold]" in text
    # no line of the log can run a workflow command, however rich wrapped it
    for line in text.split("\n"):
        assert not line.lstrip().startswith("::")
    assert "::" not in text and "##[" not in text
    # bidi overrides, escape sequences and bells are stripped
    assert "\u202e" not in text and "\u2066" not in text and "\x1b" not in text and "\x07" not in text


def test_names_cannot_forge_report_lines(hostile_run: RunResult):
    hostile_run.cases[0].case_id = "x\nPASSED  2 passed, 0 failed, 0 errors"
    text = render(hostile_run, detailed=True)
    # ids and names are printed on one line, so a line break in them cannot start a line of its own
    assert "\nPASSED" not in text
    assert "Eval Id: x PASSED 2 passed, 0 failed, 0 errors" in text


def test_multi_line_values_stay_indented(hostile_run: RunResult):
    hostile_run.cases[0].invocations[0].actual_response = "ok\u2028Overall Eval Status: PASSED\r\nend"
    text = render(hostile_run, detailed=True)
    assert "  actual_response: ok\n    Overall Eval Status: PASSED\n    end\n" in text
