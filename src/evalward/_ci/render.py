"""Everything written about a gated run: the sticky comment, the job summary, the check run, the commit status
description, the annotations and the terminal report — all rendered (and escaped) by `report/`.

The Action and the daemon render the same way (`render_outcome`) and post with `github.publish`.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from evalward.github.actions import LogAnnotation, untrusted_block
from evalward.github.checks import Annotation
from evalward.github.publish import GateStates, Message, verdict_marker_line
from evalward.report.check_run import (
    OUTPUT_MAX_CHARS,
    case_annotations,
    check_summary,
    check_text,
    check_title,
    status_description,
)
from evalward.report.escape import md_inline, workflow_command_safe
from evalward.report.terminal import print_run
from evalward.report.verdict_terminal import print_verdict

if TYPE_CHECKING:
    from evalward._gating import GateOutcome
    from evalward.model import RunResult
    from evalward.model.verdict import Verdict
    from evalward.report.check_run import CaseAnnotation

SUMMARY_MAX_CHARS = 900_000
"""The job summary's report; `append_step_summary` keeps the file within GitHub's 1 MiB."""


@dataclass(frozen=True)
class Link:
    """A link shown under the report: `label` is our text, `url` a URL we built."""

    label: str
    url: str


@dataclass
class Rendered:
    """Everything posted or written for one verdict."""

    comment_body: str
    summary: str
    check_title: str
    check_summary: str
    check_text: str
    status_description: str
    annotations: list[CaseAnnotation] = field(default_factory=list)

    def message(self) -> Message:
        """What `github.publish` posts."""

        return Message(
            comment_body=self.comment_body,
            check_title=self.check_title,
            check_summary=self.check_summary,
            check_text=self.check_text,
            status_description=self.status_description,
            annotations=tuple(
                Annotation(
                    path=a.path, start_line=a.line, end_line=a.line, level=a.level, message=a.message, title=a.title
                )
                for a in self.annotations
            ),
        )


def links_markdown(links: Sequence[Link]) -> str:
    """`Full report: [label](url) · [label](url)` (labels escaped; URLs are ours), or "" without links."""
    if not links:
        return ""

    items = " · ".join(f"[{md_inline(link.label, max_len=200)}]({link.url})" for link in links)
    return f"\n\n{items}\n"


def render_outcome(
    run: RunResult,
    verdict: Verdict,
    baseline: RunResult | None,
    states: GateStates,
    *,
    name: str,
    details_url: str | None,
    root: Path | None,
    cwd: Path | None = None,
    links: Sequence[Link] = (),
) -> Rendered:
    """The comment, job summary, check-run text and annotations for a gated run (all escaping in report/).

    Annotation paths are relative to the repository `root`; relative eval paths start from `cwd` (the folder
    the run was made in) when given. `links` are listed under the report."""

    title = f"evalward: {name}"
    footer = links_markdown(links)
    summary_md = check_summary(run, verdict, baseline=baseline, title=title, details_url=details_url)
    body = summary_md.rstrip("\n") + footer if footer else summary_md
    comment = verdict_marker_line(verdict.outcome) + "\n" + body
    full = check_summary(
        run, verdict, baseline=baseline, title=title, details_url=details_url, max_chars=SUMMARY_MAX_CHARS
    )
    full_summary = (
        full
        + footer
        + "\n"
        + check_text(run, title=f"{title} (all cases)", details_url=None, max_chars=SUMMARY_MAX_CHARS)
    )
    return Rendered(
        comment_body=comment,
        summary=full_summary,
        check_title=check_title(verdict, failing=states.failing),
        check_summary=summary_md,
        check_text=check_text(run, title=title, details_url=details_url, max_chars=OUTPUT_MAX_CHARS),
        status_description=status_description(verdict, failing=states.failing),
        annotations=case_annotations(run, verdict, root=root, cwd=cwd),
    )


def log_annotations(rendered: Rendered | None, notes: Sequence[str]) -> list[LogAnnotation]:
    """Reporting problems first (they are warnings), then one annotation per flagged case."""
    items = [LogAnnotation("warning", note, title="evalward reporting") for note in notes]
    levels = {"failure": "error", "warning": "warning", "notice": "notice"}
    if rendered is not None:
        for a in rendered.annotations:
            items.append(
                LogAnnotation(levels[a.level], a.message, file=a.path, line=a.line, title=a.title)  # type: ignore[arg-type]
            )
    return items


def print_untrusted(text: str, out: TextIO) -> None:
    """Agent output and case names go to the log between `::stop-commands::TOKEN` and `::TOKEN::`."""

    out.write(untrusted_block(text))
    out.flush()


def terminal_report(run: RunResult, outcome: GateOutcome | None) -> str:
    """The terminal rendering (verdict when gated, else the run), 120 columns, no colours."""
    from rich.console import Console

    buffer = io.StringIO()
    console = Console(file=buffer, width=120, highlight=False, color_system=None, soft_wrap=False)
    if outcome is not None:
        print_verdict(outcome.current, outcome.verdict, console, baseline=outcome.baseline)
        return buffer.getvalue()

    print_run(run, console)
    return buffer.getvalue()


def md(text: str) -> str:
    """Untrusted text for one markdown line of the job summary."""

    return md_inline(text, max_len=1000)


def log_safe(text: str) -> str:
    """Untrusted text for one log line (no workflow commands)."""

    return workflow_command_safe(text)
