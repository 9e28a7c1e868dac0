"""How numbers and labels look in every report: named formats, so all renderings agree.

Plain text only; nothing here escapes (that is `escape.py`'s job), and every input is ours (numbers,
statuses), never untrusted text.
"""

from __future__ import annotations

from collections.abc import Mapping

from evalward.model import CaseResult, MetricResult, MetricStatus, MetricSummary

SCORE_FORMAT = "{:.3f}"
"""A score or mean: three decimals, as metric explanations print them (`2/3=0.667`)."""
PERCENT_FORMAT = "{:.1%}"
"""A pass rate."""
LATENCY_FORMAT = "{:.2f}s"
"""Wall-clock seconds in human-facing reports."""
JUNIT_TIME_FORMAT = "{:.3f}"
"""JUnit `time` attributes: seconds with millisecond resolution."""
MISSING = "—"
"""Shown where a number does not exist (informational metric, nothing scored)."""

MAX_QUERY_CHARS = 500
MAX_EXPLANATION_CHARS = 500
MAX_RESPONSE_CHARS = 2_000
MAX_ERROR_CHARS = 2_000
MAX_DIFF_LINES = 60
MAX_TURNS_PER_CASE = 10
MAX_WARNINGS = 20

METRIC_STATUS_LABELS: dict[MetricStatus, str] = {
    "passed": "PASSED",
    "failed": "FAILED",
    "not_applicable": "N/A",
    "informational": "INFO",
    "error": "ERROR",
}


def score(value: float | None) -> str:
    """`0.667`, or `—` for no score."""
    return MISSING if value is None else SCORE_FORMAT.format(value)


def percent(value: float | None) -> str:
    """`80.0%`. A share strictly between 0 and 1 never reads as a whole or as nothing: 1,998 of 2,000 is
    `99.9%`, 1,999 of 2,000 `>99.9%` (rounding would say `100.0%`, beside a failing verdict), 1 of 20,000
    `<0.1%`. Every report and the dashboard print shares through this rule."""
    if value is None:
        return MISSING
    shown = PERCENT_FORMAT.format(value)
    if 0.0 < value < 1.0 and shown == PERCENT_FORMAT.format(1.0):
        return ">" + PERCENT_FORMAT.format(0.999)
    if 0.0 < value < 1.0 and shown == PERCENT_FORMAT.format(0.0):
        return "<" + PERCENT_FORMAT.format(0.001)
    return shown


def latency(value: float | None) -> str:
    return MISSING if value is None else LATENCY_FORMAT.format(value)


def threshold(value: float | None, higher_is_better: bool = True) -> str:
    """`≥ 0.800` (or `≤ 5.000` for lower-is-better metrics); `—` for informational metrics."""
    if value is None:
        return MISSING
    return ("≥ " if higher_is_better else "≤ ") + SCORE_FORMAT.format(value)


def mean_or_labels(summary: MetricSummary, *, most: int = 3) -> str:
    """The summary's mean, or for a label-valued metric its most given labels: `friendly ×3, formal ×1`."""
    if summary.mean is not None or not summary.labels:
        return score(summary.mean)
    shown = [f"{label[:40]} ×{count}" for label, count in list(summary.labels.items())[:most]]
    hidden = len(summary.labels) - most
    return ", ".join(shown) + (f", {hidden} more" if hidden > 0 else "")


def interval(summary: MetricSummary) -> str:
    """`[0.512, 0.888]`, the 95% interval around the mean; `—` when not computed."""
    if summary.ci_low is None or summary.ci_high is None:
        return MISSING
    return f"[{score(summary.ci_low)}, {score(summary.ci_high)}]"


def pass_rate(summary: MetricSummary) -> str:
    """`80.0% of 5`: share of scored case results meeting the threshold, and how many were scored."""
    if summary.pass_rate is None:
        return MISSING
    return f"{percent(summary.pass_rate)} of {summary.n}"


def tabled_metrics(
    summaries: Mapping[str, MetricSummary],
) -> tuple[list[tuple[str, MetricSummary]], list[str]]:
    """The metrics a summary table shows, and the names of those left out: informational metrics for which no
    case had a value (ADK's token usage and model-call counts from an agent that reports neither) would be a
    row of dashes; they are named once below the table instead."""
    shown: list[tuple[str, MetricSummary]] = []
    unreported: list[str] = []
    for name, summary in summaries.items():
        if summary.mean is None and summary.threshold is None and summary.passed is None and not summary.labels:
            unreported.append(name)
        else:
            shown.append((name, summary))
    return shown, unreported


UNREPORTED_LABEL = "No values reported for"


def summary_status(summary: MetricSummary) -> str:
    if summary.passed is None:
        return "INFO"
    return "PASSED" if summary.passed else "FAILED"


def metric_line(result: MetricResult) -> str:
    """`tool_trajectory_avg_score: FAILED, score 0.500, threshold ≥ 1.000` (name not escaped)."""
    return (
        f"{result.name}: {METRIC_STATUS_LABELS[result.status]}, score {score(result.score)}, "
        f"threshold {threshold(result.threshold, result.higher_is_better)}"
    )


def ordinal(index: int) -> int:
    """0-based indexes (turns, repetitions, calls) are shown 1-based to people."""
    return index + 1


def case_label(case: CaseResult, *, with_set: bool, with_repetition: bool) -> str:
    """`set/case [rep 2]` (unescaped): how a case result is named in every report."""
    label = f"{case.eval_set_id}/{case.case_id}" if with_set else case.case_id
    if with_repetition:
        label += f" [rep {ordinal(case.repetition)}]"
    return label


def is_failing(result: MetricResult) -> bool:
    return result.status in ("failed", "error")


def failing_metrics(case: CaseResult) -> list[tuple[MetricResult, int | None]]:
    """Failed or errored metrics with the 0-based turn they belong to (None for case level).

    Case-level results come first; a turn-level result is added only when its metric did not already
    fail at case level (a case mean can pass while one turn fails, and then the turn is the news).
    """
    found: list[tuple[MetricResult, int | None]] = [(m, None) for m in case.metric_results if is_failing(m)]
    names = {m.name for m, _ in found}
    for turn in case.invocations:
        for metric in turn.metric_results:
            if is_failing(metric) and metric.name not in names:
                found.append((metric, turn.turn))
                names.add(metric.name)
    return found


def failing_metric_names(case: CaseResult) -> list[str]:
    """`name` for case-level failures, `name (turn N)` for failures seen only on a turn."""
    return [m.name if turn is None else f"{m.name} (turn {ordinal(turn)})" for m, turn in failing_metrics(case)]
