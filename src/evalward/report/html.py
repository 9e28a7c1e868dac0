"""One run (and the gate's verdict on it, when there is one) as a single self-contained HTML file.

Self-contained: inline CSS and inline SVG only, no external asset, no JavaScript (collapsing uses
`<details>`). The page carries `<meta name="robots" content="noindex">` and a Content-Security-Policy
(`default-src 'none'; style-src 'unsafe-inline'; img-src data:`), so even a page that somehow held
injected markup could load and run nothing.

Sections, in order:
1. the run header: its first line what happened (the gate's verdict and headline when there is one, the run's own
   threshold result second; else whether the run passed), then id, commit, branch, agent, status, repetitions,
   counts;
2. the metric summary: mean, 95% interval, threshold, pass rate, status, and a small plot per metric —
   a bar to the mean, the interval as a whisker, the threshold as a marker;
3. the verdict (when given): outcome and reason, baseline, one row per compared metric with a plot of
   Δ̂ and its [L, U] against 0 and the margins −δ_block and −δ_ni (mirrored for lower-is-better
   metrics), whether and how the analysis was clustered (G per metric), findings, counts, the per-case
   tests (Fisher + Benjamini–Hochberg, diagnostic; p and q per tested case in the case table) or why
   none ran, and the reproduce line;
4. with a baseline, the two runs case by case (`case_changes.changes_between`): the view of the dashboard's compare
   page, its counts linking to each class's first row, the unchanged cases folded away;
5. a table of every case result: status and score per metric;
6. per case result that did not pass: error, and per turn with differences the query, failing metrics,
   the tool-call and step diffs (against the expectation and, with a baseline, against the baseline's
   first passing repetition), argument differences and the responses.

The page is the template `templates/report.html`, rendered by the shared environment of
`report.templating`, which escapes (and redacts) every value it prints: nothing here builds markup. The
plots are structured data (`Plot`, `Shape`: numbers we computed, a plain-text label) drawn by the
template's `svg_plot` macro. jinja2 is imported on the first render.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass

from evalward.model import CaseResult, MetricComparison, MetricSummary, RunResult
from evalward.model.records import records_where
from evalward.model.verdict import Verdict
from evalward.redact import redact
from evalward.report import formatting as fmt
from evalward.report import verdict_view
from evalward.report.case_changes import CLASSES, changes_between, class_anchor
from evalward.report.case_evidence import TurnEvidence, case_results, diff_lines, resource_deltas, turn_evidence
from evalward.report.templating import environment, render
from evalward.report.verdict_view import bounds_text, delta_text, interval_label, passes_text

TEMPLATE = "report.html"
PLOT_WIDTH = 200
PLOT_HEIGHT = 20
PLOT_PAD = 6
COORD_FORMAT = "{:.1f}"
"""SVG coordinates: one decimal is below a pixel at this size."""
MAX_CASE_SECTIONS = 500
"""Failing case results shown in full; the rest are named in a note (the JSON report has them all)."""


def render_html(
    run: RunResult,
    *,
    verdict: Verdict | None = None,
    baseline: RunResult | None = None,
    title: str = "evalward report",
    subject: str | None = None,
) -> str:
    """The whole page as one string (see the module docstring). `subject` names the run in the verdict's table
    and the diffs (`verdict_view.subject_label` of its context by default: "this PR", "this commit")."""
    # The failing cases shown first (must-pass, then failed, then errored), read from the run one at a time:
    # only the shown ones are kept, however many failed.
    counted = itertools.count()
    shown = heapq.nsmallest(
        MAX_CASE_SECTIONS,
        ((c, next(counted)) for c in records_where(run.cases, "passed".__ne__)),
        key=lambda pair: (not pair[0].must_pass, pair[0].status != "failed", pair[1]),
    )
    failing_count = next(counted)
    page = render(
        TEMPLATE,
        run=run,
        verdict=verdict,
        baseline=baseline,
        title=title,
        subject=subject or verdict_view.subject_label(run.context),
        fmt=fmt,
        c=verdict_view,
        classes=CLASSES,
        metric_names=list(run.summary) or list(dict.fromkeys(m.name for c in run.cases for m in c.metric_results)),
        failing=[_failing_case(case, baseline) for case, _ in shown],
        hidden=max(0, failing_count - MAX_CASE_SECTIONS),
        summary_plot=summary_plot_data,
        delta_plot=delta_plot_data,
        diff_lines=diff_lines,
        inconclusive_detail=_inconclusive_detail,
        passes=passes_text,
        scores=_scores,
        cut=_cut,
        number=format,
        changes=changes_between(baseline, run) if baseline is not None else None,
        change_anchor=lambda name: "#" + class_anchor(name),
        class_anchor=class_anchor,
    )
    # The template escapes and redacts every value it prints; this second pass catches a secret split
    # across two values.
    return redact(page)


# ------------------------------------------------------------------------------------------- plots


@dataclass(frozen=True)
class Shape:
    """One SVG element: its tag and its attributes in order, every value a string we computed."""

    tag: str
    attrs: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Plot:
    """A small inline SVG (`macros.html`'s `svg_plot`): `label` (plain text) is its accessible name and
    tooltip."""

    label: str
    shapes: tuple[Shape, ...]
    width: int = PLOT_WIDTH
    height: int = PLOT_HEIGHT


def _shape(tag: str, **attrs: object) -> Shape:
    """`attrs` as SVG attributes; `_` in a keyword becomes `-` (`stroke_width` → `stroke-width`)."""
    return Shape(tag, tuple((name.replace("_", "-"), str(value)) for name, value in attrs.items()))


def _x(value: float, low: float, high: float) -> str:
    """`value`'s x coordinate on a plot spanning [low, high]."""
    span = high - low or 1.0
    inner = PLOT_WIDTH - 2 * PLOT_PAD
    clamped = min(max(value, low), high)
    return COORD_FORMAT.format(PLOT_PAD + (clamped - low) / span * inner)


def _whisker(lo: str, hi: str, mid: float) -> list[Shape]:
    """An interval [lo, hi] as a horizontal line with a short tick at each end."""
    shapes = [_shape("line", x1=lo, y1=mid, x2=hi, y2=mid, stroke="#0a3069", stroke_width="1.5")]
    for edge in (lo, hi):
        shapes.append(_shape("line", x1=edge, y1=mid - 4, x2=edge, y2=mid + 4, stroke="#0a3069"))
    return shapes


def summary_plot_data(summary: MetricSummary) -> Plot | None:
    """Bar from 0 to the mean, the interval as a whisker, the threshold as a red marker; None without a mean.

    The axis spans [min(0, values), max(1, values)] over the mean, interval and threshold, so scores in
    [0, 1] share one scale and larger units (latency, cost) still fit.
    """
    if summary.mean is None:
        return None
    values = [v for v in (summary.mean, summary.ci_low, summary.ci_high, summary.threshold) if v is not None]
    low, high = min(0.0, *values), max(1.0, *values)
    mid = PLOT_HEIGHT / 2
    zero = _x(0.0, low, high)
    mean = _x(summary.mean, low, high)
    shapes = [
        _shape("rect", x=PLOT_PAD, y=f"{mid - 5:.1f}", width=PLOT_WIDTH - 2 * PLOT_PAD, height=10, fill="#eaeef2"),
        _shape(
            "rect",
            x=min(zero, mean, key=float),
            y=f"{mid - 4:.1f}",
            width=f"{abs(float(mean) - float(zero)):.1f}",
            height=8,
            fill="#54aeff",
        ),
    ]
    if summary.ci_low is not None and summary.ci_high is not None:
        shapes += _whisker(_x(summary.ci_low, low, high), _x(summary.ci_high, low, high), mid)
    if summary.threshold is not None:
        t = _x(summary.threshold, low, high)
        shapes.append(_shape("line", x1=t, y1=1, x2=t, y2=PLOT_HEIGHT - 1, stroke="#cf222e", stroke_width=2))
    label = f"mean {fmt.score(summary.mean)}, 95% interval {fmt.interval(summary)}, threshold " + fmt.threshold(
        summary.threshold, summary.higher_is_better
    )
    return Plot(label, tuple(shapes))


def delta_plot_data(metric: MetricComparison, alpha: float) -> Plot | None:
    """Δ̂ as a dot with [L, U] as a whisker, against 0 (grey), −δ_block (red, dotted) and −δ_ni (amber,
    dashed); the margins sit at +δ for lower-is-better metrics, where a rise is the bad direction. The
    axis is symmetric around 0 and 15% wider than the largest of |L|, |U|, |Δ̂| and δ_ni. None without Δ̂."""
    if metric.delta is None:
        return None
    values = [abs(v) for v in (metric.delta, metric.ci_low, metric.ci_high) if v is not None]
    reach = max([*values, metric.delta_ni, metric.delta_block]) * 1.15 or 0.1
    low, high = -reach, reach
    worse = -1.0 if metric.higher_is_better else 1.0
    mid = PLOT_HEIGHT / 2
    zero = _x(0.0, low, high)
    block = _x(worse * metric.delta_block, low, high)
    ni = _x(worse * metric.delta_ni, low, high)
    shapes = [
        _shape("line", x1=zero, y1=1, x2=zero, y2=PLOT_HEIGHT - 1, stroke="#8c959f"),
        _shape("line", x1=block, y1=1, x2=block, y2=PLOT_HEIGHT - 1, stroke="#cf222e", stroke_dasharray="1,2"),
        _shape("line", x1=ni, y1=1, x2=ni, y2=PLOT_HEIGHT - 1, stroke="#9a6700", stroke_dasharray="4,2"),
    ]
    if metric.ci_low is not None and metric.ci_high is not None:
        shapes += _whisker(_x(metric.ci_low, low, high), _x(metric.ci_high, low, high), mid)
    colour = {"regressed": "#cf222e", "pass": "#1a7f37", "inconclusive": "#9a6700"}[metric.verdict]
    shapes.append(_shape("circle", cx=_x(metric.delta, low, high), cy=mid, r="3.5", fill=colour))
    label = (
        f"Δ̂ {delta_text(metric)}, {interval_label(alpha)} {bounds_text(metric.ci_low, metric.ci_high)}, "
        f"δ_block {metric.delta_block:g}, δ_ni {metric.delta_ni:g}"
    )
    return Plot(label, tuple(shapes))


def _svg(plot: Plot | None) -> str:
    return str(environment().get_template("macros.html").module.svg_plot(plot))  # type: ignore[attr-defined]


def summary_plot(summary: MetricSummary) -> str:
    """`summary_plot_data` as SVG markup ("" without a mean)."""
    return _svg(summary_plot_data(summary))


def delta_plot(metric: MetricComparison, alpha: float) -> str:
    """`delta_plot_data` as SVG markup ("" without Δ̂)."""
    return _svg(delta_plot_data(metric, alpha))


# -------------------------------------------------------------------------------------- view data


def _inconclusive_detail(metric: MetricComparison) -> str:
    if metric.advice:
        return verdict_view.inconclusive_text(metric)
    mde = f"minimum detectable effect {fmt.score(metric.mde)}" if metric.mde is not None else ""
    needed = f"≈{metric.n_needed:,} paired cases would detect a {metric.delta_block:g} drop" if metric.n_needed else ""
    return "; ".join(p for p in (mde, needed) if p) or "no sample-size estimate"


def _scores(before: dict[str, float | None], now: dict[str, float | None]) -> str:
    names = list(dict.fromkeys([*before, *now]))
    return "; ".join(f"{n}: {fmt.score(before.get(n))} → {fmt.score(now.get(n))}" for n in names)


def _cut(text: str, max_len: int) -> str:
    return text if len(text) <= max_len else f"{text[:max_len]}\n… (cut at {max_len:,} of {len(text):,} characters)"


@dataclass(frozen=True)
class _FailingCase:
    """What the page shows of one case result that did not pass."""

    case: CaseResult
    base: CaseResult | None
    label: str
    why: str
    resources: str
    turns: list[TurnEvidence]


def _baseline_rep(baseline: RunResult | None, case: CaseResult) -> CaseResult | None:
    if baseline is None:
        return None
    before = case_results(baseline, case.eval_set_id, case.case_id)
    return next((b for b in before if b.status == "passed"), before[0] if before else None)


def _failing_case(case: CaseResult, baseline: RunResult | None) -> _FailingCase:
    base = _baseline_rep(baseline, case)
    why = (
        f"error: {case.error.kind}"
        if case.status == "error" and case.error is not None
        else "failed: " + (", ".join(fmt.failing_metric_names(case)) or "no metric passed")
    )
    return _FailingCase(
        case=case,
        base=base,
        label=fmt.case_label(case, with_set=True, with_repetition=True),
        why=why,
        resources=" · ".join(resource_deltas(case, base)),
        turns=[t for t in turn_evidence(case, base) if t.interesting],
    )
