"""One run (and the gate's verdict on it, when there is one) as a single self-contained HTML file.

Self-contained: inline CSS and inline SVG only, no external asset, no JavaScript (collapsing uses
`<details>`). The page carries `<meta name="robots" content="noindex">` and a Content-Security-Policy
(`default-src 'none'; style-src 'unsafe-inline'; img-src data:`), so even a page that somehow held
injected markup could load and run nothing.

Sections, in order:
1. the run header: id, commit, branch, agent, status, repetitions, counts;
2. the metric summary: mean, 95% interval, threshold, pass rate, status, and a small plot per metric —
   a bar to the mean, the interval as a whisker, the threshold as a marker;
3. the verdict (when given): outcome and reason, baseline, one row per compared metric with a plot of
   Δ̂ and its [L, U] against 0 and the margins −δ_block and −δ_ni (mirrored for lower-is-better
   metrics), whether and how the analysis was clustered (G per metric), findings, counts, the per-case
   tests (Fisher + Benjamini–Hochberg, diagnostic; p and q per tested case in the case table) or why
   none ran, and the reproduce line;
4. a table of every case result: status and score per metric;
5. per case result that did not pass: error, and per turn with differences the query, failing metrics,
   the tool-call and step diffs (against the expectation and, with a baseline, against the baseline's
   first passing repetition), argument differences and the responses.

Every untrusted string goes through `escape.html_escape`; the SVG holds only numbers we computed and
escaped text in `<title>`.
"""

from __future__ import annotations

from evalward.model import CaseResult, MetricComparison, MetricSummary, RunResult
from evalward.model.verdict import CaseDiagnostic, Finding, Verdict
from evalward.redact import redact
from evalward.report import formatting as fmt
from evalward.report.comparison import (
    CLUSTERED_TEXT,
    NO_BASELINE_TEXT,
    OUTCOME_MARKS,
    OUTCOME_WORDS,
    TurnEvidence,
    baseline_facts,
    bounds_text,
    case_results,
    cluster_facts,
    clustered_metrics,
    delta_text,
    interval_label,
    p_text,
    per_case_flagged,
    per_case_heading,
    per_case_numbers,
    resource_deltas,
    sample_text,
    turn_evidence,
    verdict_text,
)
from evalward.report.diff import TrajectoryDiff, diff_text
from evalward.report.escape import html_escape

CONTENT_SECURITY_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
PLOT_WIDTH = 200
PLOT_HEIGHT = 20
PLOT_PAD = 6
COORD_FORMAT = "{:.1f}"
"""SVG coordinates: one decimal is below a pixel at this size."""
MAX_CASE_SECTIONS = 500
"""Failing case results shown in full; the rest are named in a note (the JSON report has them all)."""

_STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem auto;max-width:1100px;padding:0 1rem;color:#1f2328;background:#fff}
h1{font-size:1.5rem;margin:0 0 .5rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #d0d7de;padding-bottom:.25rem}
h3{font-size:1rem;margin:1rem 0 .25rem}
table{border-collapse:collapse;margin:.5rem 0;font-variant-numeric:tabular-nums}
th,td{border:1px solid #d0d7de;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.num{text-align:right}
dl.facts{display:grid;grid-template-columns:max-content auto;gap:.15rem 1rem;margin:0}
dl.facts dt{font-weight:600}dl.facts dd{margin:0;overflow-wrap:anywhere}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
pre{background:#f6f8fa;padding:.5rem;overflow-x:auto;white-space:pre-wrap;overflow-wrap:anywhere}
.pass,.passed{color:#1a7f37}.fail,.failed,.regressed{color:#cf222e}.error{color:#8250df}
.inconclusive{color:#9a6700}.info{color:#0969da}
.badge{font-weight:700}
.diff .del{color:#cf222e}.diff .add{color:#1a7f37}.diff .mark{color:#9a6700}
details{margin:.5rem 0;border:1px solid #d0d7de;border-radius:6px;padding:.25rem .75rem}
summary{cursor:pointer;font-weight:600}
ul.findings li{margin:.2rem 0}
svg{vertical-align:middle}
.muted{color:#656d76}
"""


def render_html(
    run: RunResult,
    *,
    verdict: Verdict | None = None,
    baseline: RunResult | None = None,
    title: str = "evalward report",
) -> str:
    """The whole page as one string (see the module docstring)."""
    parts = [
        _header(run, title),
        _metrics_section(run),
        _verdict_section(verdict, run, baseline) if verdict is not None else "",
        _cases_section(run),
        _failing_section(run, baseline),
    ]
    body = "\n".join(p for p in parts if p)
    return redact(
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">\n'
        '<meta name="robots" content="noindex">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html_escape(title)}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n"
        f"{body}\n</body>\n</html>\n"
    )


# ------------------------------------------------------------------------------------------- header


def _header(run: RunResult, title: str) -> str:
    counts = run.counts()
    status_class = "pass" if run.passed else "fail"
    word = "passed" if run.passed else "did not pass"
    facts: list[tuple[str, str]] = [("run", f"<code>{html_escape(run.run_id)}</code>")]
    if run.context.repository:
        facts.append(("repository", html_escape(run.context.repository)))
    if run.context.commit:
        facts.append(("commit", f"<code>{html_escape(run.context.commit)}</code>"))
    if run.context.branch:
        facts.append(("branch", f"<code>{html_escape(run.context.branch)}</code>"))
    if run.context.pr_number is not None:
        facts.append(("pull request", f"#{run.context.pr_number}"))
    if run.agent is not None:
        facts.append(("agent", f"{html_escape(run.agent.kind)} <code>{html_escape(run.agent.target)}</code>"))
    facts.append(("status", html_escape(run.status)))
    facts.append(("repetitions", f"{run.repetitions} (pass rule <code>{html_escape(run.pass_rule)}</code>)"))
    if run.started_at is not None:
        facts.append(("started", html_escape(run.started_at.isoformat())))
    if run.eval_sets:
        facts.append(("eval sets", ", ".join(f"<code>{html_escape(s.eval_set_id)}</code>" for s in run.eval_sets)))
    facts.append(
        (
            "case results",
            f"{counts['passed']} passed, {counts['failed']} failed, {counts['error']} errors ({len(run.cases)} in all)",
        )
    )
    rows = "\n".join(f"<dt>{name}</dt><dd>{value}</dd>" for name, value in facts)
    warnings = ""
    if run.warnings:
        items = "\n".join(f"<li>{html_escape(w)}</li>" for w in run.warnings[: fmt.MAX_WARNINGS])
        more = (
            f"<li>… and {len(run.warnings) - fmt.MAX_WARNINGS} more</li>"
            if len(run.warnings) > fmt.MAX_WARNINGS
            else ""
        )
        warnings = f'<h3>Warnings</h3>\n<ul class="findings">\n{items}{more}\n</ul>'
    return (
        f"<header>\n<h1>{html_escape(title)}</h1>\n"
        f'<p class="badge {status_class}">{"✅" if run.passed else "❌"} The run {word}.</p>\n'
        f'<dl class="facts">\n{rows}\n</dl>\n{warnings}</header>'
    )


# ------------------------------------------------------------------------------------------- plots


def _x(value: float, low: float, high: float) -> str:
    """`value`'s x coordinate on a plot spanning [low, high]."""
    span = high - low or 1.0
    inner = PLOT_WIDTH - 2 * PLOT_PAD
    clamped = min(max(value, low), high)
    return COORD_FORMAT.format(PLOT_PAD + (clamped - low) / span * inner)


def _svg(label: str, shapes: list[str]) -> str:
    """An inline SVG; `label` (plain text) becomes its escaped accessible name and tooltip."""
    escaped = html_escape(label)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{PLOT_WIDTH}" height="{PLOT_HEIGHT}" '
        f'viewBox="0 0 {PLOT_WIDTH} {PLOT_HEIGHT}" role="img" aria-label="{escaped}">'
        f"<title>{escaped}</title>" + "".join(shapes) + "</svg>"
    )


def summary_plot(summary: MetricSummary) -> str:
    """Bar from 0 to the mean, the interval as a whisker, the threshold as a red marker.

    The axis spans [min(0, values), max(1, values)] over the mean, interval and threshold, so scores in
    [0, 1] share one scale and larger units (latency, cost) still fit.
    """
    if summary.mean is None:
        return ""
    values = [v for v in (summary.mean, summary.ci_low, summary.ci_high, summary.threshold) if v is not None]
    low, high = min(0.0, *values), max(1.0, *values)
    mid = PLOT_HEIGHT / 2
    zero = _x(0.0, low, high)
    mean = _x(summary.mean, low, high)
    shapes = [
        f'<rect x="{PLOT_PAD}" y="{mid - 5:.1f}" width="{PLOT_WIDTH - 2 * PLOT_PAD}" height="10" fill="#eaeef2"/>',
        f'<rect x="{min(zero, mean, key=float)}" y="{mid - 4:.1f}" '
        f'width="{abs(float(mean) - float(zero)):.1f}" height="8" fill="#54aeff"/>',
    ]
    if summary.ci_low is not None and summary.ci_high is not None:
        lo, hi = _x(summary.ci_low, low, high), _x(summary.ci_high, low, high)
        shapes.append(f'<line x1="{lo}" y1="{mid}" x2="{hi}" y2="{mid}" stroke="#0a3069" stroke-width="1.5"/>')
        for edge in (lo, hi):
            shapes.append(f'<line x1="{edge}" y1="{mid - 4}" x2="{edge}" y2="{mid + 4}" stroke="#0a3069"/>')
    if summary.threshold is not None:
        t = _x(summary.threshold, low, high)
        shapes.append(f'<line x1="{t}" y1="1" x2="{t}" y2="{PLOT_HEIGHT - 1}" stroke="#cf222e" stroke-width="2"/>')
    label = f"mean {fmt.score(summary.mean)}, 95% interval {fmt.interval(summary)}, threshold " + fmt.threshold(
        summary.threshold, summary.higher_is_better
    )
    return _svg(label, shapes)


def delta_plot(metric: MetricComparison, alpha: float) -> str:
    """Δ̂ as a dot with [L, U] as a whisker, against 0 (grey), −δ_block (red, dotted) and −δ_ni (amber,
    dashed); the margins sit at +δ for lower-is-better metrics, where a rise is the bad direction. The
    axis is symmetric around 0 and 15% wider than the largest of |L|, |U|, |Δ̂| and δ_ni."""
    if metric.delta is None:
        return ""
    values = [abs(v) for v in (metric.delta, metric.ci_low, metric.ci_high) if v is not None]
    reach = max([*values, metric.delta_ni, metric.delta_block]) * 1.15 or 0.1
    low, high = -reach, reach
    worse = -1.0 if metric.higher_is_better else 1.0
    mid = PLOT_HEIGHT / 2
    zero = _x(0.0, low, high)
    block = _x(worse * metric.delta_block, low, high)
    ni = _x(worse * metric.delta_ni, low, high)
    shapes = [
        f'<line x1="{zero}" y1="1" x2="{zero}" y2="{PLOT_HEIGHT - 1}" stroke="#8c959f"/>',
        f'<line x1="{block}" y1="1" x2="{block}" y2="{PLOT_HEIGHT - 1}" stroke="#cf222e" stroke-dasharray="1,2"/>',
        f'<line x1="{ni}" y1="1" x2="{ni}" y2="{PLOT_HEIGHT - 1}" stroke="#9a6700" stroke-dasharray="4,2"/>',
    ]
    if metric.ci_low is not None and metric.ci_high is not None:
        lo, hi = _x(metric.ci_low, low, high), _x(metric.ci_high, low, high)
        shapes.append(f'<line x1="{lo}" y1="{mid}" x2="{hi}" y2="{mid}" stroke="#0a3069" stroke-width="1.5"/>')
        for edge in (lo, hi):
            shapes.append(f'<line x1="{edge}" y1="{mid - 4}" x2="{edge}" y2="{mid + 4}" stroke="#0a3069"/>')
    colour = {"regressed": "#cf222e", "pass": "#1a7f37", "inconclusive": "#9a6700"}[metric.verdict]
    shapes.append(f'<circle cx="{_x(metric.delta, low, high)}" cy="{mid}" r="3.5" fill="{colour}"/>')
    label = (
        f"Δ̂ {delta_text(metric)}, {interval_label(alpha)} {bounds_text(metric.ci_low, metric.ci_high)}, "
        f"δ_block {metric.delta_block:g}, δ_ni {metric.delta_ni:g}"
    )
    return _svg(label, shapes)


# ------------------------------------------------------------------------------------------ metrics


def _metrics_section(run: RunResult) -> str:
    if not run.summary:
        return ""
    rows = []
    shown, unreported = fmt.tabled_metrics(run.summary)
    for name, summary in shown:
        status = fmt.summary_status(summary)
        rows.append(
            f"<tr><td><code>{html_escape(name)}</code></td><td class=num>{fmt.score(summary.mean)}</td>"
            f"<td class=num>{fmt.interval(summary)}</td>"
            f"<td class=num>{html_escape(fmt.threshold(summary.threshold, summary.higher_is_better))}</td>"
            f"<td class=num>{fmt.pass_rate(summary)}</td><td class={status.lower()}>{status}</td>"
            f"<td>{summary_plot(summary)}</td></tr>"
        )
    return (
        "<section>\n<h2>Metrics</h2>\n<table>\n<tr><th>metric</th><th>mean</th><th>95% interval</th>"
        "<th>threshold</th><th>pass rate</th><th>status</th><th>plot</th></tr>\n"
        + "\n".join(rows)
        + '\n</table>\n<p class="muted">Plot: bar to the mean, whisker for the interval, red marker at the '
        "threshold."
        + (
            f" {fmt.UNREPORTED_LABEL}: " + ", ".join(f"<code>{html_escape(n)}</code>" for n in unreported) + "."
            if unreported
            else ""
        )
        + "</p>\n</section>"
    )


# ------------------------------------------------------------------------------------------ verdict


def _verdict_section(verdict: Verdict, run: RunResult, baseline: RunResult | None) -> str:
    outcome = verdict.outcome
    parts = [
        "<section>\n<h2>Gate verdict</h2>",
        *(
            [
                f'<p class="badge {outcome}">{OUTCOME_MARKS[outcome]} {html_escape(verdict.headline)}</p>',
                f"<p><strong>Gate {OUTCOME_WORDS[outcome]}.</strong> {html_escape(verdict.reason)}</p>",
            ]
            if verdict.headline
            else [
                f'<p class="badge {outcome}">{OUTCOME_MARKS[outcome]} gate {OUTCOME_WORDS[outcome]}</p>',
                f"<p>{html_escape(verdict.reason)}</p>",
            ]
        ),
        f"<p><strong>Baseline</strong>: {_baseline_text(verdict, baseline)}</p>",
    ]
    if verdict.metrics:
        rows = []
        for m in verdict.metrics:
            rows.append(
                f"<tr><td><code>{html_escape(m.metric)}</code> ({sample_text(m)})</td>"
                f"<td class=num>{fmt.score(m.baseline_mean)}</td><td class=num>{fmt.score(m.current_mean)}</td>"
                f"<td class=num>{html_escape(delta_text(m))}</td>"
                f"<td class=num>{bounds_text(m.ci_low, m.ci_high)}</td><td>{html_escape(p_text(m))}</td>"
                f"<td class={m.verdict}>{html_escape(verdict_text(m))}</td><td>{delta_plot(m, verdict.alpha)}</td></tr>"
            )
        parts.append(
            "<table>\n<tr><th>metric</th><th>baseline</th><th>this run</th><th>Δ</th>"
            f"<th>{interval_label(verdict.alpha)}</th><th>p (test)</th><th>verdict</th><th>plot</th></tr>\n"
            + "\n".join(rows)
            + "\n</table>"
        )
        parts.append(
            '<p class="muted">Plot: dot at Δ̂, whisker for the interval, grey line at 0, red dotted line at '
            "−δ_block, amber dashed line at −δ_ni.</p>"
        )
        clustered = clustered_metrics(verdict)
        if clustered:
            facts = "; ".join(
                f"<code>{html_escape(m.metric)}</code>: {html_escape(cluster_facts(m))}" for m in clustered
            )
            parts.append(f"<p><strong>Clustered analysis</strong>: {html_escape(CLUSTERED_TEXT)}. {facts}.</p>")
        inconclusive = [m for m in verdict.metrics if m.verdict == "inconclusive"]
        for m in inconclusive:
            mde = f"minimum detectable effect {fmt.score(m.mde)}" if m.mde is not None else ""
            needed = f"≈{m.n_needed:,} paired cases would detect a {m.delta_block:g} drop" if m.n_needed else ""
            detail = "; ".join(p for p in (mde, needed) if p) or "no sample-size estimate"
            parts.append(f"<p class=inconclusive><code>{html_escape(m.metric)}</code> is inconclusive: {detail}.</p>")
        explained = [m for m in verdict.metrics if m.explanation]
        if explained:
            items = "\n".join(
                f"<li><code>{html_escape(m.metric)}</code>: {html_escape(m.explanation)}</li>" for m in explained
            )
            parts.append(
                f"<details><summary>How the metric verdicts were computed</summary>\n<ul>\n{items}\n</ul>\n</details>"
            )
    for severity, heading in (("blocking", "Blocking findings"), ("warning", "Warnings"), ("info", "Notes")):
        found = [f for f in verdict.findings if f.severity == severity]
        if found:
            items = "\n".join(_finding_item(f) for f in found)
            parts.append(f'<h3>{heading}</h3>\n<ul class="findings">\n{items}\n</ul>')
    c = verdict.counts
    parts.append(
        f"<p><strong>Cases</strong>: {c.compared} compared · {c.added} added · {c.removed} removed · "
        f"{c.changed} changed · {c.errored} errored · {c.quarantined} quarantined</p>"
    )
    tests = verdict.per_case_tests
    if tests is not None:
        flagged = per_case_flagged(verdict)
        named = "; ".join(
            f"<code>{html_escape(d.eval_set_id)}/{html_escape(d.case_id)}</code> {html_escape(per_case_numbers(d))}"
            for d in flagged
        )
        parts.append(
            f"<p><strong>Per-case tests</strong>: {html_escape(per_case_heading(tests))}"
            f"{': ' + named if named else ''}.</p>"
        )
    tested = tests is not None and tests.tested > 0
    diagnostics = [d for d in verdict.cases if d.label not in ("stable_pass",)]
    if diagnostics:
        rows = [
            f"<tr><td><code>{html_escape(d.eval_set_id)}/{html_escape(d.case_id)}</code></td>"
            f"<td class={d.label if d.label in ('regressed', 'inconclusive') else 'muted'}>{d.label}"
            f"{' (quarantined)' if d.quarantined else ''}</td>"
            f"<td class=num>{_passes(d.baseline_passes, d.baseline_k)}</td>"
            f"<td class=num>{_passes(d.current_passes, d.current_k)}</td>"
            f"<td>{html_escape(_scores(d.baseline_scores, d.current_scores))}</td>"
            + (_per_case_cells(d) if tested else "")
            + "</tr>"
            for d in diagnostics
        ]
        test_headers = "<th>Fisher p</th><th>BH q</th>" if tested else ""
        parts.append(
            "<details><summary>Cases by label (stable passes left out)</summary>\n<table>\n"
            "<tr><th>case</th><th>label</th><th>baseline passes</th><th>passes now</th><th>b_i → c_i</th>"
            f"{test_headers}</tr>\n" + "\n".join(rows) + "\n</table>\n</details>"
        )
    digest = html_escape(verdict.policy_digest) or "not recorded"
    parts.append(
        f'<p class="muted">Reproduce: run <code>{html_escape(verdict.current_run_id or run.run_id)}</code>, '
        f"seed {verdict.seed}, α = {verdict.alpha:g}, policy sha256 <code>{digest}</code>.</p>\n</section>"
    )
    return "\n".join(parts)


def _per_case_cells(d: CaseDiagnostic) -> str:
    """Fisher p and BH q of a tested case (q in red when it flags the case); dashes when it was not tested."""
    if d.fisher_p is None or d.fisher_q is None:
        return f"<td class=num>{fmt.MISSING}</td><td class=num>{fmt.MISSING}</td>"
    flagged = " regressed" if d.per_case_regressed else ""
    return f"<td class=num>{d.fisher_p:.4g}</td><td class='num{flagged}'>{d.fisher_q:.4g}</td>"


def _baseline_text(verdict: Verdict, baseline: RunResult | None) -> str:
    facts = baseline_facts(verdict, baseline)
    if facts is None:
        return html_escape(NO_BASELINE_TEXT) + "."
    parts = [f"run <code>{html_escape(facts.run_id)}</code>"]
    if facts.commit:
        parts.append(f"commit <code>{html_escape(facts.commit[:12])}</code>")
    if facts.branch:
        parts.append(f"branch <code>{html_escape(facts.branch)}</code>")
    if facts.age:
        parts.append(facts.age)
    chosen = facts.chosen_by
    parts.append(f"chosen by {html_escape(chosen)}" if chosen else "how it was chosen is not recorded")
    return " · ".join(parts)


def _finding_item(finding: Finding) -> str:
    return (
        f"<li class={finding.severity if finding.severity != 'blocking' else 'fail'}><strong>"
        + html_escape(finding.kind.replace("_", " "))
        + f"</strong>: {html_escape(finding.message)}</li>"
    )


def _passes(passes: int | None, k: int | None) -> str:
    return fmt.MISSING if passes is None or k is None else f"{passes}/{k}"


def _scores(before: dict[str, float | None], now: dict[str, float | None]) -> str:
    names = list(dict.fromkeys([*before, *now]))
    return "; ".join(f"{n}: {fmt.score(before.get(n))} → {fmt.score(now.get(n))}" for n in names)


# -------------------------------------------------------------------------------------------- cases


def _cases_section(run: RunResult) -> str:
    if not run.cases:
        return "<section>\n<h2>Cases</h2>\n<p>No case results.</p>\n</section>"
    names = list(run.summary) or list(dict.fromkeys(m.name for c in run.cases for m in c.metric_results))
    head = "".join(f"<th><code>{html_escape(n)}</code></th>" for n in names)
    rows = []
    for case in run.cases:
        cells = []
        for name in names:
            metric = case.metric(name)
            if metric is None:
                cells.append(f"<td class=num>{fmt.MISSING}</td>")
            else:
                cells.append(f"<td class='num {metric.status}'>{fmt.score(metric.score)}</td>")
        rows.append(
            f"<tr><td><code>{html_escape(case.eval_set_id)}/{html_escape(case.case_id)}</code></td>"
            f"<td class=num>{fmt.ordinal(case.repetition)}</td><td class={case.status}>{case.status}"
            f"{' · must pass' if case.must_pass else ''}</td>{''.join(cells)}"
            f"<td class=num>{fmt.latency(case.latency_s)}</td></tr>"
        )
    return (
        f"<section>\n<h2>Cases</h2>\n<table>\n<tr><th>case</th><th>rep</th><th>status</th>{head}<th>latency</th></tr>\n"
        + "\n".join(rows)
        + "\n</table>\n</section>"
    )


def _failing_section(run: RunResult, baseline: RunResult | None) -> str:
    failing = [c for c in run.cases if c.status != "passed"]
    if not failing:
        return ""
    failing.sort(key=lambda c: (not c.must_pass, c.status != "failed"))
    sections = [_case_details(case, baseline) for case in failing[:MAX_CASE_SECTIONS]]
    note = ""
    if len(failing) > MAX_CASE_SECTIONS:
        note = (
            f'<p class="muted">{len(failing) - MAX_CASE_SECTIONS} more case results that did not pass are '
            "not shown here; the JSON report has them all.</p>"
        )
    return "<section>\n<h2>Case results that did not pass</h2>\n" + "\n".join(sections) + f"\n{note}</section>"


def _baseline_rep(baseline: RunResult | None, case: CaseResult) -> CaseResult | None:
    if baseline is None:
        return None
    before = case_results(baseline, case.eval_set_id, case.case_id)
    return next((b for b in before if b.status == "passed"), before[0] if before else None)


def _case_details(case: CaseResult, baseline: RunResult | None) -> str:
    base = _baseline_rep(baseline, case)
    why = (
        f"error: {case.error.kind}"
        if case.status == "error" and case.error is not None
        else "failed: " + (", ".join(fmt.failing_metric_names(case)) or "no metric passed")
    )
    label = fmt.case_label(case, with_set=True, with_repetition=True)
    parts = [
        f"<details><summary><span class={case.status}>{'💥' if case.status == 'error' else '❌'}</span> "
        f"<code>{html_escape(label)}</code> — {html_escape(why)}{' · must pass' if case.must_pass else ''}</summary>"
    ]
    if base is not None:
        parts.append(
            f"<p class=muted>Compared with baseline repetition {fmt.ordinal(base.repetition)} ({base.status}).</p>"
        )
    if case.error is not None:
        where = f" in turn {fmt.ordinal(case.error.turn)}" if case.error.turn is not None else ""
        parts.append(f"<p><strong>Error</strong> <code>{case.error.kind}</code>{where}:</p>")
        parts.append(f"<pre>{html_escape(_cut(case.error.message, fmt.MAX_ERROR_CHARS))}</pre>")
    resources = resource_deltas(case, base)
    if resources:
        parts.append(f"<p>Resources: {html_escape(' · '.join(resources))}</p>")
    turns = [t for t in turn_evidence(case, base) if t.interesting]
    for turn in turns[: fmt.MAX_TURNS_PER_CASE]:
        parts.append(_turn_html(turn))
    if len(turns) > fmt.MAX_TURNS_PER_CASE:
        parts.append(f"<p class=muted>… {len(turns) - fmt.MAX_TURNS_PER_CASE} more turns with differences.</p>")
    parts.append("</details>")
    return "\n".join(parts)


def _cut(text: str, max_len: int) -> str:
    return text if len(text) <= max_len else f"{text[:max_len]}\n… (cut at {max_len:,} of {len(text):,} characters)"


def _diff_html(diff: TrajectoryDiff, unit: str, reference: str) -> str:
    lines = []
    marker = f"! first divergence at expected {unit}"
    for line in diff_text(diff, unit=unit, max_lines=fmt.MAX_DIFF_LINES):
        if line.startswith(marker) and reference != "expected":
            line = f"! first divergence at {reference} {unit}" + line[len(marker) :]
        css = {"-": "del", "+": "add", "!": "mark"}.get(line[:1])
        text = html_escape(line)
        lines.append(f'<span class="{css}">{text}</span>' if css else text)
    return '<pre class="diff">' + "\n".join(lines) + "</pre>"


def _turn_html(turn: TurnEvidence) -> str:
    parts = [
        f"<h3>Turn {fmt.ordinal(turn.turn)} of {turn.turn_count}</h3>",
        f"<p><strong>Query</strong>: {html_escape(_cut(turn.query, fmt.MAX_QUERY_CHARS))}</p>",
    ]
    if turn.failing:
        items = "\n".join(
            f"<li><code>{html_escape(m.name)}</code> {fmt.score(m.score)} "
            f"({html_escape(fmt.threshold(m.threshold, m.higher_is_better))}): {html_escape(m.explanation)}</li>"
            for m in turn.failing
        )
        parts.append(f"<ul>\n{items}\n</ul>")
    if turn.baseline_as_expected and (turn.vs_expected or turn.steps_vs_expected):
        parts.append("<p class=muted>The baseline made the expected calls and steps.</p>")
    for diff, unit, reference in turn.diffs():
        what = "Tool calls" if unit == "call" else "Steps"
        parts.append(f"<p>{what} vs {reference} (<code>-</code> {reference}, <code>+</code> this run):</p>")
        parts.append(_diff_html(diff, unit, reference))
        if diff.arg_diffs:
            items = "\n".join(
                f"<li>call {fmt.ordinal(a.call_index)} <code>{html_escape(a.name)}</code>: "
                f"<code>{html_escape(a.describe())}</code></li>"
                for a in diff.arg_diffs[: fmt.MAX_DIFF_LINES]
            )
            parts.append(f"<ul>\n{items}\n</ul>")
    for name, text in (
        ("Agent error", turn.agent_error),
        ("Expected response", turn.expected_response),
        ("Baseline response", turn.baseline_response),
        ("Actual response", turn.current_response),
    ):
        if text is not None:
            parts.append(f"<p>{name}:</p>\n<pre>{html_escape(_cut(text, fmt.MAX_RESPONSE_CHARS))}</pre>")
    return "\n".join(parts)
