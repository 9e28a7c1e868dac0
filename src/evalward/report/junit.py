"""The run as JUnit XML, for CI test reporters.

Shape: `<testsuites>` with one `<testsuite name="{eval_set_id}">` per eval set (in the order the run
lists them), one `<testcase classname="{eval_set_id}" name="{case_id} [rep N]" time="{latency}">` per
case result (N 1-based). A failed case gets `<failure message="…">` (the failing metrics in one line)
whose text lists every failing metric with its explanation and, per failing turn, the query and the
tool-call diff; an errored case gets `<error type="{kind}" message="…">`. Counts on both levels:
`tests`, `failures`, `errors`, `time` (sum of latencies); each `<testsuite>` also carries `skipped` (always 0:
every case runs, so none is ever skipped) and the run's start as `timestamp`.

The output is valid against the Jenkins xunit-plugin `junit-10.xsd`, the schema CI test reporters follow
(checked by `tests/report/test_junit_schema.py`): `<testsuites>` takes only `name`, `time`, `tests`,
`failures` and `errors` (so no `skipped` there: readers sum the suites'), a `<testcase>` only `name`,
`classname`, `time` and `group` (so no `file`/`line` and no `<properties>`), and `time` is plain decimal
seconds.

All untrusted text goes through `escape.xml_text`: characters illegal in XML 1.0 are dropped (the
file stays parseable whatever the agent printed) and workflow commands and mentions are neutralised,
since reporters copy these messages into logs and PR comments.
"""

from __future__ import annotations

import io
import math
import shutil
import tempfile
import xml.etree.ElementTree as ET
from typing import IO, TextIO

from evalward.model import CaseResult, InvocationResult, RunResult
from evalward.redact import redact
from evalward.report import formatting as fmt
from evalward.report.diff import diff_text, steps_diff, trajectory_diff
from evalward.report.escape import truncate, xml_text

_MESSAGE_CHARS = 500
"""`message` attributes are shown on one line by most reporters; the full text is in the element body."""


def render_junit(run: RunResult, *, title: str = "evalward") -> str:
    """JUnit XML text (UTF-8 declaration, two-space indentation)."""
    with io.StringIO() as out:
        write_junit(run, out, title=title)
        return out.getvalue()


def write_junit(run: RunResult, target: TextIO, *, title: str = "evalward") -> None:
    """`render_junit(run)` written to `target` in one pass over the cases, each rendered on its own.

    The counts open each `<testsuite>`, so every suite's test cases wait in a temporary file (in memory
    while small) until the pass is over; a run's cases may themselves live in a temporary file
    (`evalward.spill`), and this holds one case at a time. Secrets are redacted case by case (redaction
    replaces values, so this gives the text of redacting the whole document)."""
    set_ids = list(dict.fromkeys([info.eval_set_id for info in run.eval_sets]))
    suites: dict[str, tuple[_Counts, IO[str] | None]] = {}
    total = _Counts()
    try:
        for case in run.cases:
            if case.eval_set_id not in suites:
                suites[case.eval_set_id] = (_Counts(), tempfile.SpooledTemporaryFile(1 << 20, mode="w+"))  # noqa: SIM115  # closed below
                if case.eval_set_id not in set_ids:
                    set_ids.append(case.eval_set_id)
            counts, buffer = suites[case.eval_set_id]
            assert buffer is not None
            counts.add(case)
            total.add(case)
            element = _testcase(case)
            ET.indent(element, space="  ", level=2)
            buffer.write("\n    " + redact(ET.tostring(element, encoding="unicode")))
        target.write('<?xml version="1.0" encoding="UTF-8"?>\n')
        root = {"name": xml_text(title), **total.attributes(suite=False)}
        if not set_ids:
            target.write(_tag("testsuites", root, empty=True) + "\n")
            return
        target.write(_tag("testsuites", root))
        for set_id in set_ids:
            counts, buffer = suites[set_id] if set_id in suites else (_Counts(), None)
            attributes = {"name": xml_text(set_id), **counts.attributes(suite=True)}
            if run.started_at is not None:
                attributes["timestamp"] = run.started_at.isoformat()
            target.write("\n  " + _tag("testsuite", attributes, empty=buffer is None))
            if buffer is not None:
                buffer.seek(0)
                shutil.copyfileobj(buffer, target)
                target.write("\n  </testsuite>")
        target.write("\n</testsuites>\n")
    finally:
        for _, buffer in suites.values():
            if buffer is not None:
                buffer.close()


def _tag(name: str, attributes: dict[str, str], *, empty: bool = False) -> str:
    """The opening tag (or the empty element) exactly as ElementTree writes it, escaping included."""
    text = redact(ET.tostring(ET.Element(name, attributes), encoding="unicode"))
    return text if empty else text.removesuffix(" />") + ">"


class _Counts:
    """`tests`, `failures`, `errors`, `skipped`, `time` of a group of case results, summed as they pass."""

    def __init__(self) -> None:
        self.tests = self.failures = self.errors = 0
        self.seconds = 0.0

    def add(self, case: CaseResult) -> None:
        self.tests += 1
        self.failures += case.status == "failed"
        self.errors += case.status == "error"
        self.seconds += _seconds(case.latency_s)

    def attributes(self, *, suite: bool) -> dict[str, str]:
        """The counts as attributes of a `<testsuite>` (`suite`) or of `<testsuites>`, which junit-10.xsd
        does not allow `skipped` on."""
        counts = {"tests": str(self.tests), "failures": str(self.failures), "errors": str(self.errors)}
        if suite:
            counts["skipped"] = "0"
        return {**counts, "time": fmt.JUNIT_TIME_FORMAT.format(self.seconds)}


def _seconds(latency: float | None) -> float:
    """A latency as `time` may hold it: junit-10.xsd's pattern admits digits and a decimal point only, so a value
    that is not a finite non-negative number (a replayed or imported run may carry one) counts as 0."""
    return latency if latency is not None and math.isfinite(latency) and latency >= 0 else 0.0


def _testcase(case: CaseResult) -> ET.Element:
    element = ET.Element(
        "testcase",
        {
            "classname": xml_text(case.eval_set_id),
            "name": xml_text(f"{case.case_id} [rep {fmt.ordinal(case.repetition)}]"),
            "time": fmt.JUNIT_TIME_FORMAT.format(_seconds(case.latency_s)),
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
    return element


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
