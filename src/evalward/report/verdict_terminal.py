"""The gate's verdict on the terminal (and in the CI log): the markdown report's content (docs/github.md §14),
as rich Text and a Table.

What is shown comes from `verdict_view.VerdictView`. Untrusted text is printed markup-free through
`terminal.safe_label` (`escape.workflow_command_safe`), names and messages on one line each, so they cannot
forge report lines.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from evalward.model import RunResult
from evalward.model.verdict import Verdict
from evalward.report import formatting as fmt
from evalward.report.case_evidence import diff_lines
from evalward.report.terminal import safe_label
from evalward.report.verdict_view import (
    CLUSTERED_TEXT,
    MAX_FINDINGS,
    MAX_HEADLINE_CHARS,
    MAX_LISTED_CASES,
    MAX_MESSAGE_CHARS,
    MAX_REASON_CHARS,
    MAX_TOP_UP_CHARS,
    NO_BASELINE_TEXT,
    CaseSection,
    VerdictView,
)


def print_verdict(
    current: RunResult,
    verdict: Verdict,
    console: Console,
    *,
    baseline: RunResult | None = None,
    subject: str | None = None,
) -> None:
    """The verdict on the terminal: the markdown's content, as rich Text and a Table.

    Untrusted text is printed markup-free through `escape.workflow_command_safe`; names and messages on
    one line each, so they cannot forge report lines. `subject` names the judged run (`VerdictView.build`).
    """
    view = VerdictView.build(current, verdict, baseline, subject=subject)

    def out(*parts: Text | Table) -> None:
        for part in parts:
            console.print(part, markup=False, emoji=False, highlight=False, soft_wrap=isinstance(part, Text))

    style = {"pass": "bold green", "fail": "bold red", "inconclusive": "bold yellow", "error": "bold magenta"}[
        verdict.outcome
    ]
    said = verdict.headline or verdict.reason
    out(Text.assemble((f"GATE {verdict.outcome.upper()}", style), "  ", safe_label(said, MAX_HEADLINE_CHARS)))
    if verdict.headline:
        out(safe_label(verdict.reason, MAX_REASON_CHARS))
    out(_baseline(view))
    if view.metrics:
        out(_table(view))
    for metric, facts in view.clustered:
        out(Text.assemble(("Clustered ", "bold"), safe_label(metric, 80), f": {facts}; {CLUSTERED_TEXT}."))
    for found, heading, mark, colour in (
        (view.blocking, "Blocking:", "✗", "red"),
        (view.warnings, "Warnings:", "!", "yellow"),
    ):
        if not found:
            continue
        out(Text(heading, style="bold"))
        for finding in found[:MAX_FINDINGS]:
            out(
                Text.assemble(
                    ("  " + mark + " ", colour), f"{finding.kind}: ", safe_label(finding.message, MAX_MESSAGE_CHARS)
                )
            )
        if len(found) > MAX_FINDINGS:
            out(Text(f"  … and {len(found) - MAX_FINDINGS} more"))
    c = verdict.counts
    out(
        Text(
            f"Cases: {c.compared} compared, {c.added} added, {c.removed} removed, {c.changed} changed, "
            f"{c.errored} errored, {c.quarantined} quarantined"
        )
    )
    if view.per_case_heading is not None:
        out(Text.assemble(("Per-case tests", "bold"), f": {view.per_case_heading}."))
        for label, numbers in view.per_case_regressions[:MAX_FINDINGS]:
            out(Text("  ✗ ", style="red").append_text(safe_label(label)).append(f"  {numbers}"))
    for metric, text in view.inconclusive:
        out(Text.assemble(("Inconclusive ", "yellow"), safe_label(metric, 80), f": {text}."))

    if view.cases:
        out(Text("Flagged cases:", style="bold"))
    for section in view.cases:
        for line in _case(section, view.subject):
            out(line)
    for title, labels in view.other_lists:
        line = Text(f"{title} ({len(labels)}): ", style="bold")
        for index, label in enumerate(labels[:MAX_LISTED_CASES]):
            if index:
                line.append(", ")
            line.append_text(safe_label(label))
        if len(labels) > MAX_LISTED_CASES:
            line.append(f", … and {len(labels) - MAX_LISTED_CASES} more")
        out(line)
    info = view.other_findings
    for finding in info[:MAX_FINDINGS]:
        out(Text.assemble(("  i ", "cyan"), f"{finding.kind}: ", safe_label(finding.message, MAX_MESSAGE_CHARS)))
    if len(info) > MAX_FINDINGS:
        out(Text(f"  … and {len(info) - MAX_FINDINGS} more notes"))
    digest = verdict.policy_digest or "not recorded"
    out(Text(f"Reproduce: seed {verdict.seed}, α = {verdict.alpha:g}, policy sha256 {digest}", style="dim"))


def _baseline(view: VerdictView) -> Text:
    facts = view.baseline
    if facts is None:
        return Text("Baseline: " + NO_BASELINE_TEXT + ".")
    line = Text("Baseline: run ")
    line.append_text(safe_label(facts.run_id, 64))
    if facts.commit:
        line.append(", commit ").append_text(safe_label(facts.commit[:12], 12))
    if facts.branch:
        line.append(", branch ").append_text(safe_label(facts.branch, 80))
    if facts.age:
        line.append(f", {facts.age}")
    if facts.chosen_by:
        line.append(", chosen by ").append_text(safe_label(facts.chosen_by, 300))
    else:
        line.append(", how it was chosen is not recorded")
    for note in view.baseline_notes[:10]:
        line.append("\n  - ").append_text(safe_label(note, 300))
    if view.top_up:
        line.append("\nTop-up: ").append_text(safe_label(view.top_up, MAX_TOP_UP_CHARS))
    if view.agent_runs:
        line.append("\nAgent runs: ").append_text(safe_label(view.agent_runs, 300))
    return line


def _table(view: VerdictView) -> Table:
    table = Table(show_edge=True, header_style="bold")
    for header, justify in (
        ("metric", "left"),
        ("baseline", "right"),
        (view.subject, "right"),
        ("Δ", "right"),
        (view.interval_label, "center"),
        ("p (test)", "left"),
        ("verdict", "left"),
    ):
        # fold, not ellipsis: a metric name cut short could name a different metric
        table.add_column(header, justify=justify, overflow="fold")  # type: ignore[arg-type]
    verdict_style = {"regressed": "red", "pass": "green", "inconclusive": "yellow"}
    for row in view.metrics:
        m = row.comparison
        name = safe_label(m.metric, 80).append(f" ({row.sample})", style="dim")
        word = m.verdict.upper() + ("" if m.gated else " (reported)")
        table.add_row(
            name,
            Text(row.baseline_mean),
            Text(row.current_mean),
            Text(row.delta),
            Text(row.interval),
            Text(row.p),
            Text(word, style=verdict_style[m.verdict]),
        )
    return table


def _case(section: CaseSection, subject: str) -> list[Text]:
    case = section.case
    head = Text("  ✗ ", style="red").append_text(safe_label(case.label))
    head.append("  ").append_text(safe_label("; ".join(case.reasons), 200))
    head.append(f"  passes {section.passes_before} → {section.passes_now}")
    lines = [head]
    if section.per_case_test is not None:
        lines.append(Text(f"      per-case test: {section.per_case_test}"))
    for s in section.scores:
        lines.append(
            Text("      ").append_text(safe_label(s.metric, 80)).append(f": {s.baseline} → {s.current} ({s.change})")
        )
    cur = section.repetition
    if cur is None:
        return lines
    if cur.error is not None:
        lines.append(
            Text(f"      error {cur.error.kind}: ", style="magenta").append_text(safe_label(cur.error.message, 300))
        )
    if section.resources:
        lines.append(Text("      " + ", ".join(section.resources)))
    for turn in section.turns[: fmt.MAX_TURNS_PER_CASE]:
        lines.append(
            Text(f"      turn {fmt.ordinal(turn.turn)} of {turn.turn_count}: ").append_text(safe_label(turn.query, 200))
        )
        if turn.baseline_as_expected and (turn.vs_expected or turn.steps_vs_expected):
            lines.append(Text("        the baseline made the expected calls and steps", style="dim"))
        for diff, unit, reference in turn.diffs():
            lines.append(Text(f"        {'tool calls' if unit == 'call' else 'steps'} vs {reference}:", style="bold"))
            for text in diff_lines(diff, unit, reference):
                shown = safe_label(text, 300)
                shown.stylize({"-": "red", "+": "green", "!": "yellow"}.get(text[:1], ""))
                lines.append(Text("          ").append_text(shown))
            for a in diff.arg_diffs[: fmt.MAX_DIFF_LINES]:
                lines.append(
                    Text(f"          call {fmt.ordinal(a.call_index)} ").append_text(
                        safe_label(f"{a.name}: {a.describe()}", 300)
                    )
                )
        for name, response in (
            ("expected response", turn.expected_response),
            ("baseline response", turn.baseline_response),
            (f"{subject}'s response", turn.current_response),
            ("agent error", turn.agent_error),
        ):
            if response is not None:
                lines.append(Text(f"        {name}: ", style="bold").append_text(safe_label(response, 300)))
    return lines
