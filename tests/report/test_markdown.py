"""markdown.py: the PR comment, rendered whole against snapshots, plus structure, size and injection checks."""

from __future__ import annotations

import re
from collections.abc import Callable
from html.parser import HTMLParser

import pytest
from markdown_it import MarkdownIt

from evalward.model import RunResult
from evalward.report.markdown import render_run_markdown

GFM = MarkdownIt("commonmark").enable("table")


class _Tags(HTMLParser):
    """Collects start/end tags of rendered HTML, and the cell count of every table row."""

    def __init__(self) -> None:
        super().__init__()
        self.starts: list[str] = []
        self.ends: list[str] = []
        self.row_cells: list[int] = []
        self.comments: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.starts.append(tag)
        if tag == "tr":
            self.row_cells.append(0)
        elif tag in ("td", "th"):
            self.row_cells[-1] += 1

    def handle_endtag(self, tag: str) -> None:
        self.ends.append(tag)

    def handle_comment(self, data: str) -> None:
        self.comments.append(data)


def tags(markdown: str) -> _Tags:
    parser = _Tags()
    parser.feed(GFM.render(markdown))
    return parser


def test_sample_run_snapshot(sample_run: RunResult, snapshot: Callable[[str, str], None]):
    snapshot("sample_run.md", render_run_markdown(sample_run, details_url="https://ci.example/runs/1"))


def test_passing_run_snapshot(passing_run: RunResult, snapshot: Callable[[str, str], None]):
    snapshot("passing_run.md", render_run_markdown(passing_run))


def test_sample_run_structure(sample_run: RunResult):
    text = render_run_markdown(sample_run)
    assert text.startswith("### ❌ evalward: 4 of 5 case results did not pass: 3 failed, 1 error, 1 passed\n")
    parsed = tags(text)
    # one collapsed section per failing or errored case result, each closed
    assert parsed.starts.count("details") == parsed.ends.count("details") == 4
    # every summary row has the 6 columns of its header
    assert parsed.row_cells[:5] == [6, 6, 6, 6, 6]
    # a blank line follows each <summary> line, so the section body renders as markdown
    assert all(line == "" for line in _lines_after(text, "</summary>"))
    # must-pass case first, then failures, then errors
    order = re.findall(r"<summary>\S+ <code>([^<]+)</code>", text)
    assert order == ["book_flight", "multi_turn", "réservation_東京", "slow_lookup"]


def _lines_after(text: str, marker: str) -> list[str]:
    lines = text.split("\n")
    return [lines[i + 1] for i, line in enumerate(lines) if line.endswith(marker)]


def test_hostile_run_snapshot(hostile_run: RunResult, snapshot: Callable[[str, str], None]):
    snapshot("hostile_run.md", render_run_markdown(hostile_run))


def test_injection_is_neutralised(hostile_run: RunResult):
    text = render_run_markdown(hostile_run)
    parsed = tags(text)
    html = GFM.render(text)
    # outside code (where GitHub links nothing), mentions and references carry the zero-width space
    prose = re.sub(r"<(pre|code)>.*?</\1>", "", html, flags=re.DOTALL)
    assert re.search(r"@(?!\u200b)", prose) is None
    assert re.search(r"#\d", prose) is None
    assert re.search(r"GH-\d", prose) is None
    assert "octocat" in prose  # the text is still there, only defused
    # no forged marker anywhere in the raw body, no HTML comment when rendered
    assert "<!--" not in text
    assert parsed.comments == []
    # the hostile </details> cannot close our sections; no image or link is created
    assert parsed.starts.count("details") == parsed.ends.count("details") == 2
    assert "img" not in parsed.starts
    assert "a" not in parsed.starts
    # the summary table keeps its 6 columns despite "| col |"
    assert parsed.row_cells[0] == 6 and parsed.row_cells[1] == 6
    # bidi controls and terminal escapes are gone; workflow commands are broken
    assert "\u202e" not in text and "\u2066" not in text and "\x1b" not in text
    assert "::" not in text and "##[" not in text
    # rich markup has no meaning here and shows literally
    assert "[bold]x[/bold]" in html


def test_size_limit_cuts_whole_sections(failing_run_factory: Callable[[int], RunResult]):
    run = failing_run_factory(500)
    text = render_run_markdown(run, max_chars=60_000, details_url="https://ci.example/runs/1 (x)")
    assert len(text) <= 60_000
    shown = text.count("<details>")
    assert 0 < shown < 500
    assert shown == text.count("</details>")
    note = text.rstrip("\n").split("\n")[-1]
    assert note == (
        f"✂️ **{500 - shown} of 500 failing case results not shown** to keep this comment under 60,000 "
        "characters. Full report: [full report](https://ci.example/runs/1%20%28x%29)."
    )


def test_size_limit_without_url_points_at_artifacts(failing_run_factory: Callable[[int], RunResult]):
    text = render_run_markdown(failing_run_factory(50), max_chars=10_000, details_url="javascript:alert(1)")
    assert len(text) <= 10_000
    assert text.rstrip().endswith("Full report: `javascript:alert(1)`.")
    assert "](javascript" not in text


def test_everything_fits_without_note(sample_run: RunResult):
    assert "not shown" not in render_run_markdown(sample_run)


def test_any_limit_is_respected_and_sections_stay_whole(sample_run: RunResult):
    full = render_run_markdown(sample_run)
    for limit in range(500, len(full) + 50, 37):
        text = render_run_markdown(sample_run, max_chars=limit)
        assert len(text) <= limit
        assert text.count("<details>") == text.count("</details>")
        assert text.startswith("### ❌ evalward:")


def test_too_small_limit_is_refused(sample_run: RunResult):
    with pytest.raises(ValueError, match="max_chars must be at least 500, got 499"):
        render_run_markdown(sample_run, max_chars=499)


def test_informational_metrics_nobody_reported_are_named_below_the_table(passing_run: RunResult) -> None:
    import io

    from rich.console import Console

    from evalward.model import MetricSummary
    from evalward.report.terminal import print_run

    summary = {
        **passing_run.summary,
        "token_usage_v1": MetricSummary(mean=None, threshold=None, passed=None, n=0, higher_is_better=False),
        "inference_call_count_v1": MetricSummary(mean=None, threshold=None, passed=None, n=0, higher_is_better=False),
    }
    run = passing_run.model_copy(update={"summary": summary})
    text = render_run_markdown(run)
    assert "| token\\_usage\\_v1 |" not in text and "| inference\\_call\\_count\\_v1 |" not in text
    assert "No values reported for: token\\_usage\\_v1, inference\\_call\\_count\\_v1." in text
    for name in passing_run.summary:
        assert f"| {name.replace('_', chr(92) + '_')} |" in text  # the reported metrics keep their rows
    buffer = io.StringIO()
    print_run(run, Console(file=buffer, width=200, color_system=None))
    assert "No values reported for: token_usage_v1, inference_call_count_v1" in buffer.getvalue()
    assert "token_usage_v1 │" not in buffer.getvalue()


def test_a_long_report_renders_only_the_sections_it_can_show(failing_run_factory: Callable[[int], RunResult]):
    """Of a run whose results wait in a temporary file, the report reads each failing result once to order
    them and renders only as many as fit: the text is the one the same run held in memory gives."""
    from evalward.model import CaseResult
    from evalward.spill import RecordLog

    class CountingLog(RecordLog[CaseResult]):
        reads = 0

        def _record(self, index: int) -> CaseResult:
            CountingLog.reads += 1
            return super()._record(index)

    run = failing_run_factory(500)
    log = CountingLog(CaseResult, max_in_memory=0)
    for case in run.cases:
        log.append(case, case.key, case.status)
    spilled = run.model_copy(update={"cases": log})

    text = render_run_markdown(spilled, max_chars=60_000)
    assert text == render_run_markdown(run, max_chars=60_000)
    shown = text.count("<details>")
    assert 0 < shown < 100 and CountingLog.reads <= 500 + shown + 1
