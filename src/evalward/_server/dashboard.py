"""The dashboard: server-rendered HTML with SVG charts drawn on the server and one stylesheet — no JavaScript.

Pages:
- `/`: repositories, each with its newest run;
- `/repos/{owner}/{repo}`: runs, a trend chart per metric over the base branch's complete runs (line = the
  run's mean, shaded band = its 95% interval, so the band a PR is judged against is visible), and per-case
  flakiness on the base branch (flip rate = flips / consecutive pairs of runs, a sustained regression and its
  fix not counted: `streaks.changes_and_flips`), cases that flipped only;
- `/runs/{run_id}`: the verdict against the automatic baseline, metrics with intervals, and per case the
  trajectory diff (expected vs actual tool calls) of every turn, linked to the case's page;
- `/repos/{owner}/{repo}/cases/{eval_set}/{case}`: the case on the base branch, run by run (`case_page`);
- `/compare/{baseline}...{candidate}`: two runs case by case, filtered and paged (`compare_page`);
- `/repos/{owner}/{repo}/pulls/{number}`: a pull request's newest verdict, its regressed cases, its pushes (`pr_page`);
- `/jobs`: the queue; `/login`: sets the read-token cookie when the server is not public.

The pages are Jinja templates (`evalward/report/templates/dashboard/`) rendered by Starlette's `Jinja2Templates`
over the report's environment (`evalward.report.templating`): autoescape on, every printed value redacted and
escaped there, so untrusted strings (repository, run and case ids, tool names and arguments, messages) are
escaped by default, not call by call. Handlers pass data, never markup, but for the charts' SVG, which
`vl-convert` writes from Vega-Lite specifications (`charts`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qs, quote, urlencode

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from evalward._gating import gate_run
from evalward._server.api import READ_COOKIE, can_read
from evalward._server.charts import cost_chart, share_chart, trend_chart
from evalward._server.streaks import changes_and_flips
from evalward._server.tokens import token_matches
from evalward.gate import GatePolicy
from evalward.report.diff import diff_text, steps_diff, trajectory_diff
from evalward.report.formatting import percent
from evalward.report.templating import environment
from evalward.store import case_views, history

if TYPE_CHECKING:
    from starlette.templating import Jinja2Templates

T = TypeVar("T")
CONTENT_SECURITY_POLICY = "default-src 'self'; style-src 'self'"
"""Only this origin's stylesheet and nothing else: the pages have no script and no inline style."""


@functools.cache
def templates() -> Jinja2Templates:
    """Starlette's template renderer over the one shared environment (built on the first page)."""
    from starlette.templating import Jinja2Templates

    return Jinja2Templates(env=environment())


def render_page(request: Request, template: str, status_code: int = 200, **context: Any) -> Response:
    """`dashboard/{template}` rendered with `context` and the helpers every page uses."""
    return templates().TemplateResponse(
        request,
        f"dashboard/{template}",
        {
            "href": href,
            "repo_href": _repo_href,
            "case_href": case_href,
            "commit_href": commit_href,
            "score": _fmt,
            "percent": percent,
            "number": format,
            **context,
        },
        status_code=status_code,
        headers={"Content-Security-Policy": CONTENT_SECURITY_POLICY},
    )


def error_page(request: Request, status: int, message: str) -> Response:
    return render_page(request, "error.html", status, status=status, message=message)


def href(*parts: str) -> str:
    return "/" + "/".join(quote(p, safe="") for p in parts)


def case_href(run: Any, case: Any) -> str | None:
    """The case page of `case` in `run`'s repository, on the branch its history is kept (the base branch of a
    pull request's run); None for a run without a repository."""
    repo = run.context.repository
    if not repo or "/" not in repo:
        return None
    owner, _, name = repo.partition("/")
    branch = run.context.base_branch or run.context.branch
    query = f"?branch={quote(branch, safe='')}" if branch else ""
    return href("repos", owner, name, "cases", case.eval_set_id, case.case_id) + query


def commit_href(repo: str, commit: str | None) -> str:
    """The commit on GitHub (`#` when the run recorded none)."""
    return f"https://github.com/{quote(repo)}/commit/{quote(commit, safe='')}" if commit else "#"


def page_number(raw: str | None) -> int:
    """The `?page=` asked for: a whole number from 1 (anything else is the first page)."""
    return max(1, int(raw)) if raw and raw.isdigit() else 1


def one_page(items: Sequence[T], page: int, size: int) -> tuple[Sequence[T], int]:
    """(the items of page `page` of `size` each — the last page when past it, pages in all (at least 1))."""
    pages = max(1, -(-len(items) // size))
    start = (min(page, pages) - 1) * size
    return items[start : start + size], pages


def query_link(current: Mapping[str, Any], defaults: Mapping[str, Any], **changes: Any) -> str:
    """`?…` for the same page with `changes` over the `current` query values (a page number only when changed):
    empty values and values at their default are left out, so the plain page is `?`."""
    values = {**current, **changes}
    kept = {k: v for k, v in values.items() if v not in (None, "") and v != defaults.get(k) and (k, v) != ("page", 1)}
    return "?" + urlencode(kept) if kept else "?"


def _repo_href(repo: str) -> str:
    owner, _, name = repo.partition("/")
    return href("repos", owner, name)


def _fmt(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def read_gate(request: Request) -> Response | None:
    if can_read(request):
        return None
    return RedirectResponse("/login?next=" + quote(request.url.path), status_code=303)


def server_state(request: Request) -> Any:
    return request.app.state.server


# -- pages ------------------------------------------------------------------------------------------------


async def home(request: Request) -> Response:
    if (redirect := read_gate(request)) is not None:
        return redirect

    state = server_state(request)

    def load() -> tuple[list[tuple[str, Any]], dict[str, str]]:
        out = []
        for repo in history.repositories(state.store):
            rows = state.store.list_runs(repository=repo, limit=1)
            out.append((repo, rows[0] if rows else None))
        return out, history.gate_outcomes(state.store, [row.run_id for _, row in out if row is not None])

    repos, gated = await run_in_threadpool(load)
    return render_page(request, "home.html", repos=repos, gated=gated)


async def repo_page(request: Request) -> Response:
    if (redirect := read_gate(request)) is not None:
        return redirect

    state = server_state(request)
    repo = f"{request.path_params['owner']}/{request.path_params['repo']}"

    query = request.query_params.get("q", "").strip()[:100]

    def load() -> dict[str, Any]:
        runs = state.store.list_runs(repository=repo, limit=100)
        if not runs and repo not in history.repositories(state.store):
            raise HTTPException(404, f"no runs or jobs for repository {repo}")
        branch = request.query_params.get("branch") or _base_branch(state, runs)
        trend = history.metric_trend(state.store, repo, branch)
        flaky = []
        # Only cases that flipped, a regression and its fix not counted as flips (`streaks.changes_and_flips`).
        for (set_id, case_id), outcomes in history.case_outcomes(state.store, repo, branch).items():
            _streaks, flips, pairs = changes_and_flips(outcomes)
            if flips:
                flaky.append((set_id, case_id, flips / pairs, len(outcomes)))
        flaky.sort(key=lambda item: (-item[2], item[1]))
        # Charts are drawn here, off the event loop (vl-convert takes 0.1 s and more a chart the first time).
        # Gated metrics (a threshold in the newest run) first, then informational ones; a metric no run gave a
        # value (e.g. token usage from an agent that reports none) gets a line, not an empty chart.
        charts = [trend_chart(metric, points) for metric, points in trend.items()]
        on_branch = [r for r in reversed(runs) if r.branch == branch and r.status == "complete" and r.recorded]
        gated = history.gate_outcomes(state.store, [row.run_id for row in runs])
        passed = share_chart("share of case results passed", on_branch, gated)
        costs = history.cost_per_result(state.store, [row.run_id for row in on_branch])
        cost = cost_chart("cost per case result (USD)", on_branch, costs)
        pulls: dict[int, Any] = {}
        for row in runs:  # newest first: each pull request's first row is its newest push
            if row.pr_number is not None:
                pulls.setdefault(row.pr_number, row)
        return {
            "runs": [r for r in runs if _matches(r, query)],
            "branch": branch,
            "charts": sorted((c for c in charts if c.count), key=lambda c: (not c.gated, c.metric)),
            "unvalued": sorted(c.metric for c in charts if not c.count),
            "passed": passed,
            "cost": cost,
            "flaky": flaky,
            "pulls": list(pulls.items())[:PULLS_SHOWN],
            "gated": gated,
        }

    loaded = await run_in_threadpool(load)
    return render_page(request, "repo.html", repo=repo, query=query, **loaded)


PULLS_SHOWN = 20
"""Pull requests the repository page lists (those with the newest runs)."""


def _matches(row: Any, query: str) -> bool:
    """A run the repository page's search keeps: `query` is a PR number (`#12` or `12`), the start of a commit,
    or part of a branch name or run id."""
    if not query:
        return True
    number = query.removeprefix("#")
    if number.isdigit() and row.pr_number == int(number):
        return True
    lowered = query.lower()
    return bool(
        (row.commit and row.commit.lower().startswith(lowered))
        or (row.branch and lowered in row.branch.lower())
        or lowered in row.run_id.lower()
    )


def base_branch_of(state: Any, repo: str) -> str:
    """`_base_branch` of the repository's newest runs."""
    return _base_branch(state, state.store.list_runs(repository=repo, limit=100))


def _base_branch(state: Any, runs: Sequence[Any]) -> str:
    """The branch to chart: the base branch the newest PR run names, else the newest run's branch, else main."""
    for row in runs:
        if row.pr_number is not None:
            run = state.store.load_run_header(row.run_id)
            if run.context.base_branch:
                return str(run.context.base_branch)
    for row in runs:
        if row.branch:
            return str(row.branch)
    return "main"


RUN_PAGE_CASES = 100
"""Cases a run page shows at a time (the ones that did not pass first)."""
RECOMPUTE_MAX_RESULTS = 1000
"""Largest run whose verdict the page recomputes when no gate recorded one (reading both runs whole)."""


async def run_page(request: Request) -> Response:
    if (redirect := read_gate(request)) is not None:
        return redirect

    state = server_state(request)
    run_id = request.path_params["run_id"]
    show = "failing" if request.query_params.get("show") == "failing" else "all"
    query = request.query_params.get("q", "")[:200]
    page = page_number(request.query_params.get("page"))

    def load() -> dict[str, Any]:
        if not state.store.has_run(run_id):
            raise HTTPException(404, f"run {run_id!r} is not stored")
        run = state.store.load_run_header(run_id)
        tallies = case_views.case_tallies(state.store, run_id, metrics=[])  # outcomes only: no score rows read
        verdict, provenance = _verdict_of(state.store, run, sum(t.results for t in tallies.values()))
        # The cases that did not pass first (fewest passing repetitions first), then the rest, by key.
        keys = sorted(tallies, key=lambda k: (tallies[k].passes == tallies[k].results, tallies[k].share, k))
        failing = [k for k in keys if tallies[k].passes < tallies[k].results]
        chosen = [k for k in (failing if show == "failing" else keys) if query.lower() in k[1].lower()]
        shown, pages = one_page(chosen, page, RUN_PAGE_CASES)
        found = case_views.cases_of_run(state.store, run_id, shown)
        cases = [case for key in shown for case in found.get(key, [])]
        counts = {"cases": len(keys), "failing": len(failing), "chosen": len(chosen)}
        return {
            "run": run,
            "verdict": verdict,
            "provenance": provenance,
            "cases": cases,
            "counts": counts,
            "pages": pages,
        }

    loaded = await run_in_threadpool(load)
    run = loaded["run"]
    metrics = sorted(run.summary.items(), key=lambda item: (item[1].threshold is None, item[0]))

    return render_page(
        request,
        "run.html",
        run=run,
        verdict=loaded["verdict"],
        provenance=loaded["provenance"],
        metrics=metrics,
        cases=[case_view(case) for case in loaded["cases"]],
        counts=loaded["counts"],
        show=show,
        query=query,
        page=min(page, loaded["pages"]),
        pages=loaded["pages"],
        link=functools.partial(query_link, {"show": show, "q": query}, {"show": "all"}),
    )


def _verdict_of(store: Any, run: Any, results: int) -> tuple[Any, str]:
    """The verdict a gate recorded for `run` (the newest), else one recomputed with the default policy for a run of
    at most RECOMPUTE_MAX_RESULTS results, else none (the page says how to get one)."""
    recorded = store.recorded_verdicts(run.run_id, limit=1)
    if recorded:
        # The verdict the pull request actually got, with the repository's own policy.
        newest = recorded[0]
        when = newest.recorded_at.strftime("%Y-%m-%d %H:%M UTC")
        return newest.verdict, f"As gated by {newest.source} on {when}."
    if results > RECOMPUTE_MAX_RESULTS:
        return None, f"No gate recorded a verdict for this run: `evalward gate {run.run_id}` computes one."
    try:
        # No checkout here (repo_dir=None), so no merge-base from git: without a recorded one, the newest
        # comparable run on the base branch is the baseline (said so in the verdict's baseline line).
        spec = "auto" if run.context.merge_base or not run.context.base_branch else f"branch:{run.context.base_branch}"
        whole = store.load_run(run.run_id)
        outcome = gate_run(store, whole, GatePolicy(), baseline_spec=spec, repo_dir=None, allow_mismatch=True)
        return outcome.verdict, "Recomputed with the default policy: no gate recorded a verdict for this run."
    except Exception:  # a verdict is a bonus on this page; the run itself is still shown
        return None, ""


@dataclass(frozen=True)
class CaseView:
    """One case result on the run page: its turns, each with the lines of its trajectory diff."""

    case: Any
    label: str
    status_class: str
    turns: list[tuple[Any, list[str]]]


def case_view(case: Any) -> CaseView:
    turns = []
    for turn in case.invocations:
        if turn.expected_tool_calls is not None:
            lines = diff_text(trajectory_diff(turn.expected_tool_calls, turn.actual_tool_calls))
        elif turn.expected_trajectory is not None:
            lines = diff_text(steps_diff(turn.expected_trajectory, turn.actual_trajectory), unit="step")
        else:
            lines = []
        turns.append((turn, lines))
    label = (
        case.case_id
        + (f" (set {case.eval_set_id})" if case.eval_set_id else "")
        + f" · repetition {case.repetition + 1}"
    )
    status_class = "pass" if case.status == "passed" else ("fail" if case.status == "failed" else "warn")
    return CaseView(case, label, status_class, turns)


async def jobs_page(request: Request) -> Response:
    if (redirect := read_gate(request)) is not None:
        return redirect
    state = server_state(request)
    jobs = await run_in_threadpool(state.queue.list_jobs, status=request.query_params.get("status"), limit=100)
    return render_page(request, "jobs.html", jobs=jobs)


async def login(request: Request) -> Response:
    next_path = request.query_params.get("next", "/")
    if not next_path.startswith("/") or next_path.startswith("//"):
        next_path = "/"  # only local redirects
    refused = False
    if request.method == "POST":
        # Parsed here: Starlette's form parser needs python-multipart, which the server does not ship.
        fields = parse_qs((await request.body()).decode("utf-8", errors="replace"))
        token = (fields.get("token") or [""])[0]
        if token_matches(token, server_state(request).settings.read_token_hashes):
            response = RedirectResponse(next_path, status_code=303)
            response.set_cookie(
                READ_COOKIE, token, httponly=True, samesite="strict", secure=request.url.scheme == "https"
            )
            return response
        refused = True
    return render_page(request, "login.html", 401 if refused else 200, refused=refused, next_query=quote(next_path))


def dashboard_routes() -> list[Route]:
    return [
        Route("/", home, methods=["GET"]),
        Route("/repos/{owner}/{repo}", repo_page, methods=["GET"]),
        Route("/runs/{run_id}", run_page, methods=["GET"]),
        Route("/jobs", jobs_page, methods=["GET"]),
        Route("/login", login, methods=["GET", "POST"]),
    ]


def static_mount() -> Mount:
    directory = Path(str(files("evalward._server") / "static"))
    return Mount("/static", app=StaticFiles(directory=directory), name="static")
