"""The dashboard: server-rendered HTML with inline SVG charts and one stylesheet — no JavaScript, no build.

Pages:
- `/`: repositories, each with its newest run;
- `/repos/{owner}/{repo}`: runs, a trend chart per metric over the base branch's complete runs (line = the
  run's mean, shaded band = its 95% interval, so the band a PR is judged against is visible), and per-case
  flakiness on the base branch (flip rate = flips / consecutive pairs of runs);
- `/runs/{run_id}`: the verdict against the automatic baseline, metrics with intervals, and per case the
  trajectory diff (expected vs actual tool calls) of every turn;
- `/jobs`: the queue; `/login`: sets the read-token cookie when the server is not public.

Every untrusted string (repository, run and case ids, tool names and arguments, messages) goes through
`evalward.report.escape.html_escape`; nothing is inserted unescaped.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from importlib.resources import files
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from evalward.report.escape import html_escape as esc
from evalward.server.api import READ_COOKIE, can_read
from evalward.server.history import TrendPoint

CHART_W, CHART_H, PAD = 420, 170, 32


def _page(title: str, body: str, status: int = 200) -> HTMLResponse:
    html = (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)} · evalward</title>"
        '<link rel=stylesheet href="/static/dashboard.css"></head><body>'
        '<header><a class=brand href="/">evalward</a><a href="/">Repositories</a><a href="/jobs">Jobs</a></header>'
        f"<main>{body}</main></body></html>"
    )
    return HTMLResponse(
        html, status_code=status, headers={"Content-Security-Policy": "default-src 'self'; style-src 'self'"}
    )


def error_page(status: int, message: str) -> HTMLResponse:
    return _page(f"Error {status}", f"<h1>Error {status}</h1><p>{esc(message)}</p>", status)


def _href(*parts: str) -> str:
    return "/" + "/".join(quote(p, safe="") for p in parts)


def _repo_href(repo: str) -> str:
    owner, _, name = repo.partition("/")
    return _href("repos", owner, name)


def _fmt(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _gate(request: Request) -> Response | None:
    if can_read(request):
        return None
    return RedirectResponse("/login?next=" + quote(request.url.path), status_code=303)


def _state(request: Request) -> Any:
    return request.app.state.server


# -- charts ---------------------------------------------------------------------------------------------


def trend_svg(metric: str, points: Sequence[TrendPoint]) -> str:
    """An inline SVG: x = run index (oldest left), y = score; polygon band ci_low..ci_high, polyline of means."""
    scored = [p for p in points if p.mean is not None]
    if not scored:
        return (
            f'<svg class=chart width={CHART_W} height={CHART_H} role=img aria-label="{esc(metric)}: no scores"></svg>'
        )
    values = [v for p in scored for v in (p.mean, p.ci_low, p.ci_high) if v is not None]
    low, high = min(values), max(values)
    if low >= 0.0 and high <= 1.0:
        low, high = 0.0, 1.0  # scores on [0, 1] are drawn on the whole scale so charts compare at a glance
    if high - low < 1e-9:
        low, high = low - 0.5, high + 0.5
    count = len(scored)

    def x(i: int) -> float:
        return PAD + (CHART_W - 2 * PAD) * (i / (count - 1) if count > 1 else 0.5)

    def y(v: float) -> float:
        return CHART_H - PAD + (v - low) / (high - low) * (2 * PAD - CHART_H)

    upper = [(x(i), y(p.ci_high if p.ci_high is not None else p.mean or 0.0)) for i, p in enumerate(scored)]
    lower = [(x(i), y(p.ci_low if p.ci_low is not None else p.mean or 0.0)) for i, p in enumerate(scored)]
    band = " ".join(f"{a:.1f},{b:.1f}" for a, b in [*upper, *reversed(lower)])
    line = " ".join(f"{x(i):.1f},{y(p.mean or 0.0):.1f}" for i, p in enumerate(scored))
    dots = "".join(
        f'<circle class=dot cx="{x(i):.1f}" cy="{y(p.mean or 0.0):.1f}" r=3>'
        f"<title>{esc((p.commit or p.run_id)[:12])}: {_fmt(p.mean)} [{_fmt(p.ci_low)}, {_fmt(p.ci_high)}]</title></circle>"
        for i, p in enumerate(scored)
    )
    axes = (
        f"<line class=axis x1={PAD} y1={CHART_H - PAD} x2={CHART_W - PAD} y2={CHART_H - PAD} />"
        f"<line class=axis x1={PAD} y1={PAD} x2={PAD} y2={CHART_H - PAD} />"
        f'<text x=2 y="{y(high) + 4:.1f}">{high:.2f}</text><text x=2 y="{y(low) + 4:.1f}">{low:.2f}</text>'
        f"<text x={PAD} y={CHART_H - 8}>{esc((scored[0].commit or '')[:7])}</text>"
        f"<text x={CHART_W - PAD - 40} y={CHART_H - 8}>{esc((scored[-1].commit or '')[:7])}</text>"
    )
    return (
        f'<svg class=chart width={CHART_W} height={CHART_H} viewBox="0 0 {CHART_W} {CHART_H}" role=img '
        f'aria-label="{esc(metric)} over {count} runs" data-metric="{esc(metric)}">'
        f'{axes}<polygon class=band points="{band}" /><polyline class=line points="{line}" />{dots}</svg>'
    )


# -- pages ------------------------------------------------------------------------------------------------


async def home(request: Request) -> Response:
    if (redirect := _gate(request)) is not None:
        return redirect
    from evalward.server import history

    state = _state(request)

    def load() -> list[tuple[str, Any]]:
        out = []
        for repo in history.repositories(state.store):
            rows = state.store.list_runs(repository=repo, limit=1)
            out.append((repo, rows[0] if rows else None))
        return out

    repos = await run_in_threadpool(load)
    rows = "".join(
        f'<tr><td><a href="{_repo_href(repo)}">{esc(repo)}</a></td>'
        + (
            f'<td><a href="{_href("runs", r.run_id)}">{esc(r.run_id)}</a></td><td>{esc(r.branch or "")}</td>'
            f"<td>{_status(r.status, r.passed)}</td><td>{esc(str(r.started_at or ''))}</td>"
            if r is not None
            else "<td colspan=4 class=muted>no runs yet</td>"
        )
        + "</tr>"
        for repo, r in repos
    )
    body = "<h1>Repositories</h1>" + (
        f"<table><tr><th>Repository</th><th>Newest run</th><th>Branch</th><th>Status</th><th>Started</th></tr>{rows}</table>"
        if repos
        else "<p class=muted>No runs or jobs yet.</p>"
    )
    return _page("Repositories", body)


def _status(status: str, passed: bool | None) -> str:
    if status != "complete":
        return f"<span class=warn>{esc(status)}</span>"
    return "<span class=pass>passed</span>" if passed else "<span class=fail>failed</span>"


async def repo_page(request: Request) -> Response:
    if (redirect := _gate(request)) is not None:
        return redirect
    from evalward.server import history

    state = _state(request)
    repo = f"{request.path_params['owner']}/{request.path_params['repo']}"

    def load() -> tuple[list[Any], str, dict[str, list[TrendPoint]], list[tuple[str, str, float, int]]]:
        runs = state.store.list_runs(repository=repo, limit=100)
        if not runs and repo not in history.repositories(state.store):
            raise HTTPException(404, f"no runs or jobs for repository {repo}")
        branch = request.query_params.get("branch") or _base_branch(state, runs)
        trend = history.metric_trend(state.store, repo, branch)
        flaky = []
        for (set_id, case_id), outcomes in history.case_outcomes(state.store, repo, branch).items():
            rate = history.flip_rate(outcomes)
            if rate is not None:
                flaky.append((set_id, case_id, rate, len(outcomes)))
        flaky.sort(key=lambda item: (-item[2], item[1]))
        return runs, branch, trend, flaky

    runs, branch, trend, flaky = await run_in_threadpool(load)
    # Gated metrics (a threshold in the newest run) first, then informational ones; a metric no run gave a
    # value (e.g. token usage from an agent that reports none) gets a line, not an empty chart.
    charted = {m: points for m, points in trend.items() if any(p.mean is not None for p in points)}
    ordered = sorted(charted, key=lambda m: (charted[m][-1].threshold is None, m))
    charts = "".join(
        f"<figure><figcaption>{esc(metric)}"
        + (" <span class=muted>(informational)</span>" if charted[metric][-1].threshold is None else "")
        + f"</figcaption>{trend_svg(metric, charted[metric])}"
        f"<div class=muted>{len(charted[metric])} runs on {esc(branch)}; band: 95% interval</div></figure>"
        for metric in ordered
    )
    unvalued = sorted(set(trend) - set(charted))
    if unvalued:
        charts += (
            "<p class=muted>No values recorded on this branch for: "
            + ", ".join(f"<code>{esc(m)}</code>" for m in unvalued)
            + ".</p>"
        )
    run_rows = "".join(
        f'<tr><td><a href="{_href("runs", r.run_id)}">{esc(r.run_id)}</a></td><td><code>{esc((r.commit or "")[:12])}</code></td>'
        f"<td>{esc(r.branch or '')}</td><td>{esc(str(r.pr_number or ''))}</td><td>{_status(r.status, r.passed)}</td>"
        f"<td class=num>{r.passes}/{r.recorded}</td><td>{esc(str(r.started_at or ''))}</td></tr>"
        for r in runs
    )
    flaky_rows = "".join(
        f"<tr><td>{esc(set_id)}</td><td>{esc(case_id)}</td><td class=num>{rate:.3f}</td><td class=num>{n}</td></tr>"
        for set_id, case_id, rate, n in flaky
    )
    body = (
        f"<h1>{esc(repo)}</h1>"
        f"<h2>Trends on {esc(branch)}</h2>"
        + (
            f"<div class=charts>{charts}</div>"
            if charts
            else f"<p class=muted>No complete runs on {esc(branch)} yet.</p>"
        )
        + "<h2>Runs</h2>"
        + (
            "<table><tr><th>Run</th><th>Commit</th><th>Branch</th><th>PR</th><th>Status</th><th>Passed</th>"
            f"<th>Started</th></tr>{run_rows}</table>"
            if runs
            else "<p class=muted>No runs yet.</p>"
        )
        + f"<h2>Flakiness on {esc(branch)}</h2>"
        + (
            "<table><tr><th>Eval set</th><th>Case</th><th>Flip rate</th><th>Runs</th></tr>" + flaky_rows + "</table>"
            if flaky
            else "<p class=muted>Fewer than two runs per case: no flip rates yet.</p>"
        )
    )
    return _page(repo, body)


def _base_branch(state: Any, runs: Sequence[Any]) -> str:
    """The branch to chart: the base branch the newest PR run names, else the newest run's branch, else main."""
    for row in runs:
        if row.pr_number is not None:
            run = state.store.load_run(row.run_id)
            if run.context.base_branch:
                return str(run.context.base_branch)
    for row in runs:
        if row.branch:
            return str(row.branch)
    return "main"


async def run_page(request: Request) -> Response:
    if (redirect := _gate(request)) is not None:
        return redirect
    state = _state(request)
    run_id = request.path_params["run_id"]

    def load() -> tuple[Any, Any, str]:
        from evalward.gate import GatePolicy
        from evalward.gating import gate_run

        if not state.store.has_run(run_id):
            raise HTTPException(404, f"run {run_id!r} is not stored")
        run = state.store.load_run(run_id)
        recorded = state.store.recorded_verdicts(run_id)
        if recorded:
            # The verdict the pull request actually got, with the repository's own policy.
            newest = recorded[0]
            when = newest.recorded_at.strftime("%Y-%m-%d %H:%M UTC")
            return run, newest.verdict, f"As gated by {newest.source} on {when}."
        try:
            with tempfile.TemporaryDirectory(prefix="evalward-dash-") as empty:
                # No checkout here, so no merge-base from git: without a recorded one, the newest comparable
                # run on the base branch is the baseline (said so in the verdict's baseline line).
                spec = (
                    "auto"
                    if run.context.merge_base or not run.context.base_branch
                    else f"branch:{run.context.base_branch}"
                )
                outcome = gate_run(
                    state.store, run, GatePolicy(), baseline_spec=spec, repo_dir=Path(empty), allow_mismatch=True
                )
            return run, outcome.verdict, "Recomputed with the default policy: no gate recorded a verdict for this run."
        except Exception:  # a verdict is a bonus on this page; the run itself is still shown
            return run, None, ""

    run, verdict, provenance = await run_in_threadpool(load)
    ctx = run.context
    facts = (
        f"<p class=muted>{esc(ctx.repository or '')} · commit <code>{esc((ctx.commit or '')[:12])}</code> · "
        f"branch {esc(ctx.branch or '')}"
        + (f" · PR #{ctx.pr_number}" if ctx.pr_number else "")
        + f" · {esc(run.status)} · agent <code>{esc(run.agent.target if run.agent else '')}</code></p>"
    )
    if verdict is not None:
        outcome = verdict.outcome
        base = f" Baseline: {esc(verdict.baseline.run_id)}." if verdict.baseline else ""
        verdict_html = (
            f'<div class="verdict verdict-{esc(outcome)}"><span class="{esc(outcome)}">{esc(outcome.upper())}</span> '
            f"{esc(verdict.headline or verdict.reason)}{base}</div><p>{esc(verdict.reason)}</p>"
            f"<p class=muted>{esc(provenance)}</p>"
        )
        findings = "".join(f"<li>{esc(f.severity)}: {esc(f.message)}</li>" for f in verdict.findings[:50])
        if findings:
            verdict_html += f"<ul>{findings}</ul>"
    else:
        verdict_html = '<div class="verdict">No verdict could be computed for this run.</div>'
    metric_rows = "".join(
        f"<tr><td>{esc(name)}</td><td class=num>{_fmt(s.mean)}</td><td class=num>[{_fmt(s.ci_low)}, {_fmt(s.ci_high)}]</td>"
        f"<td class=num>{_fmt(s.threshold, 2)}</td><td class=num>{_fmt(s.pass_rate, 2)}</td><td class=num>{s.n}</td>"
        f"<td>{'—' if s.passed is None else ('<span class=pass>pass</span>' if s.passed else '<span class=fail>fail</span>')}</td></tr>"
        for name, s in sorted(run.summary.items(), key=lambda item: (item[1].threshold is None, item[0]))
    )
    body = (
        f"<h1>Run {esc(run.run_id)}</h1>{facts}<h2>Verdict</h2>{verdict_html}"
        "<h2>Metrics</h2><table><tr><th>Metric</th><th>Mean</th><th>95% interval</th><th>Threshold</th>"
        f"<th>Pass rate</th><th>n</th><th>Status</th></tr>{metric_rows}</table>"
        f"<h2>Cases</h2>{''.join(_case_html(case) for case in run.cases)}"
    )
    return _page(f"Run {run.run_id}", body)


def _case_html(case: Any) -> str:
    from evalward.report.diff import diff_text, steps_diff, trajectory_diff

    status_class = "pass" if case.status == "passed" else ("fail" if case.status == "failed" else "warn")
    parts: list[str] = []
    if case.error is not None:
        parts.append(f"<p class=fail>{esc(case.error.kind)}: {esc(case.error.message)}</p>")
    for turn in case.invocations:
        scores = ", ".join(f"{esc(m.name)}={_fmt(m.score)}" for m in turn.metric_results)
        parts.append(f"<p><b>Turn {turn.turn + 1}</b>: {esc(turn.query)}<br><span class=muted>{scores}</span></p>")
        if turn.expected_tool_calls is not None:
            lines = diff_text(trajectory_diff(turn.expected_tool_calls, turn.actual_tool_calls))
        elif turn.expected_trajectory is not None:
            lines = diff_text(steps_diff(turn.expected_trajectory, turn.actual_trajectory), unit="step")
        else:
            lines = []
        if lines:
            parts.append("<pre class=diff>" + "\n".join(_diff_line(line) for line in lines) + "</pre>")
        if turn.expected_response is not None or turn.actual_response is not None:
            parts.append(
                f"<p class=muted>expected response</p><pre>{esc(turn.expected_response or '')}</pre>"
                f"<p class=muted>actual response</p><pre>{esc(turn.actual_response or '')}</pre>"
            )
    label = (
        case.case_id
        + (f" (set {case.eval_set_id})" if case.eval_set_id else "")
        + f" · repetition {case.repetition + 1}"
    )
    is_open = " open" if case.status != "passed" else ""
    return (
        f'<details class=case data-case="{esc(case.case_id)}"{is_open}><summary>'
        f'<span class="{status_class}">{esc(case.status)}</span> {esc(label)}</summary>{"".join(parts)}</details>'
    )


def _run_link(run_id: str | None) -> str:
    return f'<a href="{_href("runs", run_id)}">{esc(run_id)}</a>' if run_id else ""


def _diff_line(line: str) -> str:
    css = {"-": "del", "+": "add", "!": "mark"}.get(line[:1])
    return f'<span class="{css}">{esc(line)}</span>' if css else esc(line)


async def jobs_page(request: Request) -> Response:
    if (redirect := _gate(request)) is not None:
        return redirect
    state = _state(request)
    jobs = await run_in_threadpool(state.queue.list_jobs, status=request.query_params.get("status"), limit=100)
    rows = "".join(
        f"<tr><td class=num>{j.id}</td><td>{esc(j.kind)}</td><td>{esc(j.status)}</td><td>{esc(j.repo or '')}</td>"
        f"<td><code>{esc((j.head_sha or '')[:12])}</code></td><td>{esc(str(j.pr_number or ''))}</td>"
        f"<td class=num>{j.attempts}</td>"
        f"<td>{_run_link(j.run_id)}</td>"
        f"<td>{esc((j.last_error or '')[:200])}</td><td>{esc(str(j.updated_at))}</td></tr>"
        for j in jobs
    )
    body = (
        "<h1>Jobs</h1><table><tr><th>Id</th><th>Kind</th><th>Status</th><th>Repository</th><th>Head</th><th>PR</th>"
        f"<th>Attempts</th><th>Run</th><th>Last error</th><th>Updated</th></tr>{rows}</table>"
    )
    return _page("Jobs", body)


async def login(request: Request) -> Response:
    from evalward.server.tokens import token_matches

    next_path = request.query_params.get("next", "/")
    if not next_path.startswith("/") or next_path.startswith("//"):
        next_path = "/"  # only local redirects
    message = ""
    if request.method == "POST":
        # Parsed here: Starlette's form parser needs python-multipart, which the server does not ship.
        fields = parse_qs((await request.body()).decode("utf-8", errors="replace"))
        token = (fields.get("token") or [""])[0]
        if token_matches(token, _state(request).settings.read_token_hashes):
            response = RedirectResponse(next_path, status_code=303)
            response.set_cookie(
                READ_COOKIE, token, httponly=True, samesite="strict", secure=request.url.scheme == "https"
            )
            return response
        message = "<p class=fail>That token is not a read token of this server.</p>"
    body = (
        f'<h1>Sign in</h1>{message}<form class=login method=post action="/login?next={quote(next_path)}">'
        "<label>Read token <input type=password name=token autocomplete=off></label>"
        "<button type=submit>Sign in</button></form>"
    )
    return _page("Sign in", body, 401 if message else 200)


def dashboard_routes() -> list[Route]:
    return [
        Route("/", home, methods=["GET"]),
        Route("/repos/{owner}/{repo}", repo_page, methods=["GET"]),
        Route("/runs/{run_id}", run_page, methods=["GET"]),
        Route("/jobs", jobs_page, methods=["GET"]),
        Route("/login", login, methods=["GET", "POST"]),
    ]


def static_mount() -> Mount:
    directory = Path(str(files("evalward.server") / "static"))
    return Mount("/static", app=StaticFiles(directory=directory), name="static")
