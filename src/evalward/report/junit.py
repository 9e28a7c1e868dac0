"""The run as JUnit XML, for CI test reporters.

Shape: `<testsuites>` with one `<testsuite name="{eval_set_id}">` per eval set (in the order the run
lists them), one `<testcase classname="{eval_set_id}" name="{case_id} [rep N]" time="{latency}">` per
case result (N 1-based). A failed case gets `<failure message="…">` (the failing metrics in one line)
whose text lists every failing metric with its explanation and, per failing turn, the query and the
tool-call diff; an errored case gets `<error type="{kind}" message="…">`. Counts on both levels:
`tests`, `failures`, `errors`, `skipped` (always 0), `time` (sum of latencies).

All untrusted text goes through `escape.xml_text`: characters illegal in XML 1.0 are dropped (the
file stays parseable whatever the agent printed) and workflow commands and mentions are neutralised,
since reporters copy these messages into logs and PR comments.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from evalward.model import CaseResult, InvocationResult, RunResult
from evalward.redact import redact
from evalward.report import formatting as fmt
from evalward.report.diff import diff_text, steps_diff, trajectory_diff
from evalward.report.escape import truncate, xml_text

_MESSAGE_CHARS = 500
"""`message` attributes are shown on one line by most reporters; the full text is in the element body."""


def render_junit(run: RunResult, *, title: str = "evalward") -> str:
    """JUnit XML text (UTF-8 declaration, two-space indentation)."""
    set_ids = [info.eval_set_id for info in run.eval_sets]
    set_ids += [c.eval_set_id for c in run.cases if c.eval_set_id not in set_ids]
    set_ids = list(dict.fromkeys(set_ids))

    root = ET.Element("testsuites", {"name": xml_text(title)})
    for set_id in set_ids:
        cases = [c for c in run.cases if c.eval_set_id == set_id]
        suite = ET.SubElement(root, "testsuite", {"name": xml_text(set_id), **_counts(cases)})
        if run.started_at is not None:
            suite.set("timestamp", run.started_at.isoformat())
        for case in cases:
            _testcase(suite, case)
    root.attrib.update(_counts(run.cases))
    ET.indent(root, space="  ")
    return redact('<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n")


def _counts(cases: list[CaseResult]) -> dict[str, str]:
    seconds = sum(c.latency_s or 0.0 for c in cases)
    return {
        "tests": str(len(cases)),
        "failures": str(sum(c.status == "failed" for c in cases)),
        "errors": str(sum(c.status == "error" for c in cases)),
        "skipped": "0",
        "time": fmt.JUNIT_TIME_FORMAT.format(seconds),
    }


def _testcase(suite: ET.Element, case: CaseResult) -> None:
    element = ET.SubElement(
        suite,
        "testcase",
        {
            "classname": xml_text(case.eval_set_id),
            "name": xml_text(f"{case.case_id} [rep {fmt.ordinal(case.repetition)}]"),
            "time": fmt.JUNIT_TIME_FORMAT.format(case.latency_s or 0.0),
        },
    )
    if case.status == "error":
        error = case.error
        kind = error.kind if error is not None else "error"
        message = error.message if error is not None else "the case errored without a recorded error"
        node = ET.SubElement(element, "error", {"type": kind, "message": _attribute(message or kind)})
        details = [message]
        if error is not None and error.turn is not None:
            details.append(
                f"turn {fmt.ordinal(error.turn)}, {error.attempts} attempt{'s' if error.attempts != 1 else ''}"
            )
        details += _failure_lines(case)
        node.text = xml_text("\n".join(details))
    elif case.status == "failed":
        failing = fmt.failing_metrics(case)
        message = "; ".join(
            fmt.metric_line(m) + ("" if turn is None else f" in turn {fmt.ordinal(turn)}") for m, turn in failing
        )
        node = ET.SubElement(
            element, "failure", {"type": "metric_failed", "message": _attribute(message or "no metric passed")}
        )
        node.text = xml_text("\n".join(_failure_lines(case)))


def _attribute(text: str) -> str:
    """One line (whitespace runs collapsed), cut to `_MESSAGE_CHARS`, made XML- and log-safe."""
    return xml_text(" ".join(text.split()), max_len=_MESSAGE_CHARS)


def _failure_lines(case: CaseResult) -> list[str]:
    lines: list[str] = []
    for metric in case.metric_results:
        if fmt.is_failing(metric):
            lines.append(fmt.metric_line(metric))
            if metric.explanation:
                lines.append(f"  {metric.explanation}")
    for turn in case.invocations:
        if any(fmt.is_failing(m) for m in turn.metric_results):
            lines += _turn_lines(turn)
    return lines


def _turn_lines(turn: InvocationResult) -> list[str]:
    lines = [f"turn {fmt.ordinal(turn.turn)}: {turn.query}"]
    for metric in turn.metric_results:
        if fmt.is_failing(metric):
            lines.append(f"  {fmt.metric_line(metric)}")
            if metric.explanation:
                lines.append(f"    {metric.explanation}")
    if turn.expected_tool_calls is not None:
        diff = trajectory_diff(turn.expected_tool_calls, turn.actual_tool_calls)
        if not diff.identical:
            lines.append("  tool calls (- expected, + actual):")
            lines += [f"    {line}" for line in diff_text(diff, max_lines=fmt.MAX_DIFF_LINES)]
    if turn.expected_trajectory is not None:
        steps = steps_diff(turn.expected_trajectory, turn.actual_trajectory)
        if not steps.identical:
            lines.append("  steps (- expected, + actual):")
            lines += [f"    {line}" for line in diff_text(steps, unit="step", max_lines=fmt.MAX_DIFF_LINES)]
    if turn.expected_response is not None:
        lines.append(f"  expected response: {truncate(turn.expected_response, fmt.MAX_RESPONSE_CHARS)}")
    if turn.actual_response is not None:
        lines.append(f"  actual response: {truncate(turn.actual_response, fmt.MAX_RESPONSE_CHARS)}")
    return lines
