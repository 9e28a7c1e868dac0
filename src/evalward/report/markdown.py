"""The run as GitHub-flavoured markdown: the PR comment and the job summary.

Layout, by priority (docs/github.md §14):
1. the verdict line (✅/❌ with counts) and run facts;
2. the summary table, one row per metric: mean, 95% interval, threshold, pass rate, status;
3. warnings;
4. one collapsed `<details>` section per failing or errored case result — must-pass cases first, then
   failures, then errors, each in run order — with the error, and per failing turn the query, the
   failing metrics, the trajectory diff, the argument differences and expected vs actual response.
Sections are whole: when the next one would push the body past `max_chars`, it and all after it are
cut and a last line says how many were cut and where the full report is.

Every untrusted string goes through `escape.py`: markdown text through `md_inline`, the `<summary>`
line through `html_inline`, agent output through `md_code_block`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from urllib.parse import quote

from evalward.model import CaseResult, InvocationResult, MetricResult, RunResult
from evalward.model.records import iter_record_keys, record_statuses
from evalward.report import formatting as fmt
from evalward.report.diff import diff_text, steps_diff, trajectory_diff
from evalward.report.escape import html_inline, md_code_block, md_code_span, md_inline

DEFAULT_MAX_CHARS = 60_000
"""GitHub rejects comment bodies over 65,536 characters; 60k leaves margin for the github/ marker."""
MIN_MAX_CHARS = 500
"""Below this a body cannot hold the verdict line and the cut note together."""
_MAX_URL_CHARS = 250
_URL_SAFE = ":/?#[]@!$&'*+,;=%-._~"


def render_run_markdown(
    run: RunResult,
    *,
    title: str = "evalward",
    max_chars: int = DEFAULT_MAX_CHARS,
    details_url: str | None = None,
) -> str:
    """The report as markdown of at most `max_chars` characters (see the module docstring).

    Raises ValueError when `max_chars` is below `MIN_MAX_CHARS`.
    """
    if max_chars < MIN_MAX_CHARS:
        raise ValueError(f"max_chars must be at least {MIN_MAX_CHARS}, got {max_chars}")
    with_set = len({key[0] for key in iter_record_keys(run.cases)}) > 1
    with_rep = run.repetitions > 1
    head = "\n\n".join(
        part for part in (_verdict(run, title), _facts(run), _summary_table(run), _warnings(run)) if part
    )

    # The failing cases in the order they are shown (must-pass first, then failed, then errored), each read
    # once to learn that order and again to render it, until the report is full: however many failed, it
    # holds at most a report's worth of sections.
    order = sorted(
        (not case.must_pass, case.status != "failed", index) for index, case in _failing_with_positions(run.cases)
    )
    total_sections = len(order)
    sections: list[str] = []
    length = len(head) + 1
    for _, _, index in order:
        if length > max_chars:
            break  # cut below: the sections rendered so far fill more than its budget
        section = _case_section(run.cases[index], run, with_set=with_set, with_rep=with_rep)
        sections.append(section)
        length += 2 + len(section)

    if length <= max_chars:
        return head + "".join("\n\n" + s for s in sections) + "\n"

    # Room for the note at its longest (every section cut), the blank line before it and the final newline.
    budget = max_chars - len(_cut_note(total_sections, total_sections, max_chars, details_url)) - 3
    parts = [head]
    used = len(head)
    shown = 0
    for section in sections:
        if used + 2 + len(section) > budget:
            break
        parts.append(section)
        used += 2 + len(section)
        shown += 1
    parts.append(_cut_note(total_sections - shown, total_sections, max_chars, details_url))
    text = "\n\n".join(parts) + "\n"
    if len(text) > max_chars:  # only when the head alone is too big: keep whole lines of it
        note = parts[-1]
        keep = head[: max(0, max_chars - len(note) - 3)]
        text = keep[: keep.rfind("\n") + 1 if "\n" in keep else 0] + "\n" + note + "\n"
    return text


def _failing_with_positions(cases: Sequence[CaseResult]) -> Iterator[tuple[int, CaseResult]]:
    """(position, result) of every result that did not pass; the others are not read."""
    statuses = record_statuses(cases)
    for index, status in enumerate(statuses):
        if status != "passed":
            yield index, cases[index]


def _verdict(run: RunResult, title: str) -> str:
    counts = run.counts()
    total = len(run.cases)
    mark = "✅" if run.passed else "❌"
    name = md_inline(title, max_len=80)
    if run.passed:
        text = f"all {total} case result{_s(total)} passed"
    else:
        not_passed = counts["failed"] + counts["error"]
        text = (
            f"{not_passed} of {total} case result{_s(total)} did not pass: "
            f"{counts['failed']} failed, {counts['error']} error{_s(counts['error'])}, {counts['passed']} passed"
        )
    if run.status != "complete":
        text += f" (run {run.status})"
    return f"### {mark} {name}: {text}"


def _facts(run: RunResult) -> str:
    facts = [f"run {md_code_span(run.run_id, max_len=64)}"]
    if run.context.commit:
        facts.append(f"commit {md_code_span(run.context.commit[:12], max_len=12)}")
    if run.agent is not None:
        facts.append(f"agent {md_code_span(run.agent.target, max_len=120)}")
    if run.repetitions > 1:
        facts.append(f"{run.repetitions} repetitions, pass rule {md_code_span(run.pass_rule)}")
    sets = ", ".join(md_code_span(s.eval_set_id, max_len=80) for s in run.eval_sets)
    if sets:
        facts.append(f"eval set{_s(len(run.eval_sets))} {sets}")
    return " · ".join(facts)


def _summary_table(run: RunResult) -> str:
    if not run.summary:
        return ""
    rows = [
        "| metric | mean | 95% interval | threshold | pass rate | status |",
        "| --- | ---: | :---: | ---: | ---: | --- |",
    ]
    shown, unreported = fmt.tabled_metrics(run.summary)
    for name, summary in shown:
        status = {"PASSED": "✅ passed", "FAILED": "❌ failed", "INFO": "ℹ️ info"}[fmt.summary_status(summary)]
        rows.append(
            f"| {md_inline(name, max_len=80)} | {md_inline(fmt.mean_or_labels(summary), max_len=160)} | {fmt.interval(summary)} "
            f"| {fmt.threshold(summary.threshold, summary.higher_is_better)} | {fmt.pass_rate(summary)} | {status} |"
        )
    if unreported:
        rows += ["", f"{fmt.UNREPORTED_LABEL}: " + ", ".join(md_inline(n, max_len=80) for n in unreported) + "."]
    return "\n".join(rows)


def _warnings(run: RunResult) -> str:
    if not run.warnings:
        return ""
    lines = ["**Warnings**", ""]
    lines += [f"- {md_inline(w, max_len=300)}" for w in run.warnings[: fmt.MAX_WARNINGS]]
    if len(run.warnings) > fmt.MAX_WARNINGS:
        lines.append(f"- … and {len(run.warnings) - fmt.MAX_WARNINGS} more")
    return "\n".join(lines)


def _case_section(case: CaseResult, run: RunResult, *, with_set: bool, with_rep: bool) -> str:
    label = fmt.case_label(case, with_set=with_set, with_repetition=with_rep)
    if case.status == "error" and case.error is not None:
        mark, why = "💥", f"error: {case.error.kind}"
    else:
        mark, why = "❌", "failed: " + (", ".join(fmt.failing_metric_names(case)) or "no metric passed")
    must = " · must pass" if case.must_pass else ""
    summary = (
        f"<details><summary>{mark} <code>{html_inline(label, max_len=120)}</code> — {html_inline(why)}{must}</summary>"
    )
    blocks: list[str] = [summary]

    source = _source(case, run)
    if source:
        blocks.append(f"Defined in {md_code_span(source, max_len=200)}")
    if case.error is not None:
        where = f" in turn {fmt.ordinal(case.error.turn)}" if case.error.turn is not None else ""
        attempts = f" after {case.error.attempts} attempts" if case.error.attempts > 1 else ""
        blocks.append(f"**Error** {md_code_span(case.error.kind)}{where}{attempts}:")
        blocks.append(md_code_block(case.error.message, "text", max_len=fmt.MAX_ERROR_CHARS))

    turns = [t for t in case.invocations if _turn_failing(t, case)]
    # A case score equal to a shown turn's score (a one-turn case) would only repeat that turn's row.
    shown = {(m.name, m.score) for t in turns[: fmt.MAX_TURNS_PER_CASE] for m in t.metric_results}
    case_failures = [m for m in case.metric_results if fmt.is_failing(m) and (m.name, m.score) not in shown]
    if case_failures:
        blocks.append("**Case scores**\n\n" + _metric_table(case_failures))

    for turn in turns[: fmt.MAX_TURNS_PER_CASE]:
        blocks.extend(_turn_blocks(turn, len(case.invocations)))
    if len(turns) > fmt.MAX_TURNS_PER_CASE:
        blocks.append(f"*… {len(turns) - fmt.MAX_TURNS_PER_CASE} more failing turns not shown.*")
    if case.latency_s is not None:
        blocks.append(f"Latency {fmt.latency(case.latency_s)}")
    blocks.append("</details>")
    return "\n\n".join(blocks)


def _source(case: CaseResult, run: RunResult) -> str:
    for info in run.eval_sets:
        if info.eval_set_id == case.eval_set_id:
            where = info.case_sources.get(case.case_id)
            if where and where.get("path"):
                line = where.get("line")
                return f"{where['path']}:{line}" if line else str(where["path"])
    return ""


def _turn_failing(turn: InvocationResult, case: CaseResult) -> bool:
    errored_here = case.error is not None and case.error.turn == turn.turn
    return errored_here or any(fmt.is_failing(m) for m in turn.metric_results)


def _metric_table(results: list[MetricResult]) -> str:
    rows = ["| metric | status | score | threshold | explanation |", "| --- | --- | ---: | ---: | --- |"]
    for m in results:
        rows.append(
            f"| {md_inline(m.name, max_len=80)} | {fmt.METRIC_STATUS_LABELS[m.status]} | {fmt.score(m.score)} "
            f"| {fmt.threshold(m.threshold, m.higher_is_better)} "
            f"| {md_inline(m.explanation, max_len=fmt.MAX_EXPLANATION_CHARS) or fmt.MISSING} |"
        )
    return "\n".join(rows)


def _turn_blocks(turn: InvocationResult, turn_count: int) -> list[str]:
    blocks = [
        f"**Turn {fmt.ordinal(turn.turn)} of {turn_count}** — query: {md_inline(turn.query, max_len=fmt.MAX_QUERY_CHARS)}"
    ]
    failing = [m for m in turn.metric_results if fmt.is_failing(m)]
    if failing:
        blocks.append(_metric_table(failing))
    if turn.expected_tool_calls is not None:
        diff = trajectory_diff(turn.expected_tool_calls, turn.actual_tool_calls)
        if not diff.identical:
            lines = diff_text(diff, unit="call", max_lines=fmt.MAX_DIFF_LINES)
            blocks.append("Tool calls (`-` expected, `+` actual):")
            blocks.append(md_code_block("\n".join(lines), "diff"))
            if diff.arg_diffs:
                items = [
                    f"- call {fmt.ordinal(d.call_index)} {md_code_span(d.name, max_len=80)}: "
                    f"{md_code_span(d.describe(), max_len=300)}"
                    for d in diff.arg_diffs[: fmt.MAX_DIFF_LINES]
                ]
                blocks.append("Argument differences:\n\n" + "\n".join(items))
    if turn.expected_trajectory is not None:
        steps = steps_diff(turn.expected_trajectory, turn.actual_trajectory)
        if not steps.identical:
            blocks.append("Steps (`-` expected, `+` actual):")
            blocks.append(md_code_block("\n".join(diff_text(steps, unit="step", max_lines=fmt.MAX_DIFF_LINES)), "diff"))
    if turn.expected_response is not None:
        blocks.append("Expected response:")
        blocks.append(md_code_block(turn.expected_response, "text", max_len=fmt.MAX_RESPONSE_CHARS))
    if turn.actual_response is not None:
        blocks.append("Actual response:")
        blocks.append(md_code_block(turn.actual_response, "text", max_len=fmt.MAX_RESPONSE_CHARS))
    elif turn.output is not None and turn.output.error:
        blocks.append("The agent reported an error:")
        blocks.append(md_code_block(turn.output.error, "text", max_len=fmt.MAX_ERROR_CHARS))
    return blocks


def _cut_note(cut: int, total: int, max_chars: int, details_url: str | None) -> str:
    where = "the job summary or the JSON report artifact"
    if details_url:
        where = full_report_link(details_url)
    return (
        f"✂️ **{cut} of {total} failing case result{_s(total)} not shown** to keep this comment under "
        f"{max_chars:,} characters. Full report: {where}."
    )


def full_report_link(url: str) -> str:
    """A markdown link for an http(s) URL (percent-encoding anything that could end the link early);
    any other scheme is shown as code, never linked."""
    if url.startswith(("https://", "http://")) and len(url) <= _MAX_URL_CHARS:
        return f"[full report]({quote(url, safe=_URL_SAFE)})"
    return md_code_span(url, max_len=_MAX_URL_CHARS)


def _s(count: int) -> str:
    return "" if count == 1 else "s"
