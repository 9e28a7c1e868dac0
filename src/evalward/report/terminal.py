"""The run on the terminal (and in the CI log): verdict, summary table, failing cases, optional details.

`detailed=True` prints every case like ADK's `--print_detailed_results`: per case its status and
metrics, then per turn the query, expected and actual response, expected and actual tool calls (one
argument per line) and each metric's status, score, threshold and explanation.

Untrusted text is only ever printed as `rich.text.Text` (never parsed for markup or emoji, so
`[bold]` in agent output prints literally) after `escape.workflow_command_safe` (so it cannot run a
workflow command in a GitHub Actions log).
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from evalward.model import CaseResult, InvocationResult, MetricResult, RunResult, ToolCall
from evalward.model.records import iter_record_keys, records_where
from evalward.model.text import compact_json
from evalward.report import formatting as fmt
from evalward.report.escape import strip_unsafe_chars, truncate, workflow_command_safe

_STATUS_STYLE = {"passed": "green", "failed": "red", "error": "magenta"}
_METRIC_STYLE = {
    "passed": "green",
    "failed": "red",
    "error": "magenta",
    "not_applicable": "dim",
    "informational": "cyan",
}
_INDENT = "  "
_METRIC_NAME_CHARS = 40
_LIST_MESSAGE_CHARS = 200
_LABEL_CHARS = 120
_VALUE_CHARS = 1_000
_WARNING_CHARS = 300


def print_run(run: RunResult, console: Console, *, detailed: bool = False) -> None:
    """Print the run to `console` (see the module docstring)."""
    with_set = len({key[0] for key in iter_record_keys(run.cases)}) > 1
    with_rep = run.repetitions > 1

    def out(*parts: Text | Table) -> None:
        # soft_wrap: a line is written whole and the terminal wraps it, so a long untrusted value never
        # produces a log line of its own that starts with text it chose. (Table cells wrap inside `│`.)
        for part in parts:
            console.print(part, markup=False, emoji=False, highlight=False, soft_wrap=isinstance(part, Text))

    out(_verdict(run))
    if run.summary:
        out(_summary_table(run))
    for warning in run.warnings:
        out(Text.assemble(("warning: ", "yellow"), safe_label(warning, _WARNING_CHARS)))
    failing = records_where(run.cases, lambda status: status != "passed")  # read back only these
    for index, case in enumerate(failing):
        if index == 0:
            out(Text("Failing cases:", style="bold"))
        out(_failing_line(case, with_set=with_set, with_rep=with_rep))
    if detailed:
        for case in run.cases:
            out(Text(""))
            for line in _case_details(case, with_rep=with_rep):
                out(line)


def _safe(text: str) -> Text:
    """Untrusted text, made log-safe, as a markup-free `Text` (line breaks kept)."""
    return Text(workflow_command_safe(text))


def safe_label(text: str, max_len: int = _LABEL_CHARS) -> Text:
    """Untrusted text that names something (case id, metric, run id): one line, so it cannot forge
    further lines of the report (a fake `PASSED` verdict or case list entry)."""
    return _safe(truncate(" ".join(text.split()), max_len))


def _verdict(run: RunResult) -> Text:
    counts = run.counts()
    total = len(run.cases)
    word, style = ("PASSED", "bold green") if run.passed else ("FAILED", "bold red")
    detail = (
        f"{counts['passed']} passed, {counts['failed']} failed, {counts['error']} error"
        f"{'' if counts['error'] == 1 else 's'} ({total} case result{'' if total == 1 else 's'})"
    )
    text = Text.assemble((word, style), "  ", detail, "  run ", safe_label(run.run_id))
    if run.status != "complete":
        text.append(f"  (run {run.status})", style="yellow")
    return text


def _summary_table(run: RunResult) -> Table:
    table = Table(title=None, show_edge=True, header_style="bold")
    for header, justify in (
        ("metric", "left"),
        ("mean", "right"),
        ("95% interval", "center"),
        ("threshold", "right"),
        ("pass rate", "right"),
        ("status", "left"),
    ):
        # Metric names are what a reader searches for: never truncate them, let other columns give way.
        table.add_column(
            header,
            justify=justify,  # type: ignore[arg-type]
            overflow="fold",
            min_width=min(_METRIC_NAME_CHARS, max((len(n) for n in run.summary), default=6))
            if header == "metric"
            else None,
        )
    shown, unreported = fmt.tabled_metrics(run.summary)
    if unreported:
        # A Text, not a str: rich would read markup in a str caption, and metric names come from eval files.
        table.caption = Text(f"{fmt.UNREPORTED_LABEL}: " + ", ".join(strip_unsafe_chars(n)[:80] for n in unreported))
    for name, summary in shown:
        status = fmt.summary_status(summary)
        style = {"PASSED": "green", "FAILED": "red", "INFO": "cyan"}[status]
        table.add_row(
            safe_label(name),
            Text(strip_unsafe_chars(fmt.mean_or_labels(summary))),
            Text(fmt.interval(summary)),
            Text(fmt.threshold(summary.threshold, summary.higher_is_better)),
            Text(fmt.pass_rate(summary)),
            Text(status, style=style),
        )
    return table


def _failing_line(case: CaseResult, *, with_set: bool, with_rep: bool) -> Text:
    label = fmt.case_label(case, with_set=with_set, with_repetition=with_rep)
    line = Text(_INDENT)
    if case.status == "error" and case.error is not None:
        line.append("! ", style="magenta")
        line.append_text(safe_label(label))
        where = f" (turn {fmt.ordinal(case.error.turn)})" if case.error.turn is not None else ""
        line.append(f"  error {case.error.kind}{where}: ", style="magenta")
        line.append_text(safe_label(case.error.message, _LIST_MESSAGE_CHARS))
        return line
    line.append("✗ ", style="red")
    line.append_text(safe_label(label))
    failing = fmt.failing_metrics(case)
    line.append("  failed: ", style="red")
    if not failing:
        line.append("no metric passed")
    for index, (metric, turn) in enumerate(failing):
        if index:
            line.append(", ")
        line.append_text(safe_label(metric.name))
        line.append(f" {fmt.score(metric.score)} ({fmt.threshold(metric.threshold, metric.higher_is_better)})")
        if turn is not None:
            line.append(f" in turn {fmt.ordinal(turn)}")
    return line


def _field(
    indent: int, name: str, value: str | None, *, absent: str = "(not specified)", one_line: bool = False
) -> Text:
    """`name: value`, continuation lines of a multi-line value indented under it; `absent` for None;
    `one_line` for names and ids, which must not span lines."""
    pad = _INDENT * indent
    text = Text(f"{pad}{name}: ", style="bold")
    if value is None:
        text.append(absent, style="dim")
    elif one_line:
        text.append_text(safe_label(value))
    else:
        text.append_text(_safe(strip_unsafe_chars(value).replace("\n", "\n" + pad + _INDENT)))
    return text


def _metric_detail(indent: int, metric: MetricResult) -> list[Text]:
    pad = _INDENT * indent
    status = fmt.METRIC_STATUS_LABELS[metric.status]
    line = Text(pad + "Metric: ")
    line.append_text(safe_label(metric.name))
    line.append(", Status: ")
    line.append(status, style=_METRIC_STYLE[metric.status])
    line.append(
        f", Score: {fmt.score(metric.score)}, Threshold: {fmt.threshold(metric.threshold, metric.higher_is_better)}"
    )
    lines = [line]
    if metric.explanation:
        lines.append(_field(indent + 1, "Explanation", metric.explanation))
    return lines


def _calls(indent: int, name: str, calls: list[ToolCall] | None) -> list[Text]:
    pad = _INDENT * indent
    if calls is None:
        return [_field(indent, name, None)]
    head = Text(f"{pad}{name}:", style="bold")
    if not calls:
        head.append(" (none)", style="dim")
        return [head]
    lines = [head]
    for call in calls:
        lines.extend(_call(indent + 1, call))
    return lines


def _call(indent: int, call: ToolCall) -> list[Text]:
    """`name(` / `  key=value,` per argument / `)`; `name` alone when args are absent."""
    pad = _INDENT * indent
    first = Text(pad)
    if call.agent:
        first.append_text(safe_label(f"[{call.agent}]"))
        first.append(" ")
    first.append_text(safe_label(call.name))
    if call.args is None:
        return [first]
    if not call.args:
        first.append("()")
        return [first]
    first.append("(")
    lines = [first]
    for key, value in sorted(call.args.items()):
        lines.append(Text(pad + _INDENT).append_text(safe_label(f"{key}={_value(value)},", _VALUE_CHARS)))
    lines.append(Text(f"{pad})"))
    return lines


def _value(value: Any) -> str:
    return compact_json(value)


def _case_details(case: CaseResult, *, with_rep: bool) -> list[Text]:
    lines = [
        _field(0, "Eval Set Id", case.eval_set_id, one_line=True),
        _field(0, "Eval Id", fmt.case_label(case, with_set=False, with_repetition=with_rep), one_line=True),
    ]
    status = Text("Overall Eval Status: ", style="bold")
    status.append(case.status.upper(), style=_STATUS_STYLE[case.status])
    if case.latency_s is not None:
        status.append(f"  ({fmt.latency(case.latency_s)})")
    lines.append(status)
    if case.error is not None:
        where = f" in turn {fmt.ordinal(case.error.turn)}" if case.error.turn is not None else ""
        attempts = f" after {case.error.attempts} attempts" if case.error.attempts > 1 else ""
        lines.append(_field(0, f"Error ({case.error.kind}{where}{attempts})", case.error.message))
    for metric in case.metric_results:
        lines.extend(_metric_detail(0, metric))
    for turn in case.invocations:
        lines.extend(_turn_details(turn))
    return lines


def _turn_details(turn: InvocationResult) -> list[Text]:
    lines = [Text(f"Invocation {fmt.ordinal(turn.turn)}:", style="bold")]
    lines.append(_field(1, "prompt", turn.query))
    lines.append(_field(1, "expected_response", turn.expected_response))
    lines.append(_field(1, "actual_response", turn.actual_response, absent="(none)"))
    if turn.output is not None and turn.output.error:
        lines.append(_field(1, "agent_error", turn.output.error))
    lines.extend(_calls(1, "expected_tool_calls", turn.expected_tool_calls))
    lines.extend(_calls(1, "actual_tool_calls", turn.actual_tool_calls))
    if turn.expected_trajectory is not None:
        lines.append(_field(1, "expected_trajectory", " → ".join(turn.expected_trajectory)))
        lines.append(_field(1, "actual_trajectory", " → ".join(turn.actual_trajectory)))
    for metric in turn.metric_results:
        lines.extend(_metric_detail(1, metric))
    return lines
