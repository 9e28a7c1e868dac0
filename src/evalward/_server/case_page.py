"""The case page (`/repos/{owner}/{repo}/cases/{eval_set}/{case}`): when did this case start failing?

A case's story on a branch is read from its outcome in each complete run, oldest first (it passes in a run when
every repetition passed, as `store.history.case_outcomes` counts it):
- a **sustained change** is the newest runs failing `SUSTAINED_RUNS` or more times in a row after a run it passed:
  the first run of that streak is its **first bad commit**, the passing run before it the last good one; when the
  case passes again, the newest such streak is named with the run that **fixed** it;
- **flakiness** is the flip rate over the window (flips / consecutive pairs of runs), the changes into and out
  of a sustained failure not counted: a regression and its fix are two changes, not noise (`changes_and_flips`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from evalward._server.charts import case_chart
from evalward._server.dashboard import base_branch_of, case_view, read_gate, render_page, server_state
from evalward._server.streaks import changes_and_flips
from evalward.report.case_changes import gated_metrics
from evalward.store import case_views
from evalward.store.case_views import CaseRunPoint

if TYPE_CHECKING:
    from starlette.routing import Route

RECENT_RESULTS = 3
"""Newest runs whose results (trajectory diffs, responses) the page shows."""
WINDOW_RUNS = 50
"""Runs of the branch the page reads (newest first)."""


@dataclass(frozen=True)
class CaseStory:
    """What the points say, in the words the page leads with."""

    headline: str
    first_bad: CaseRunPoint | None
    """The first run of the newest sustained failing streak."""
    last_good: CaseRunPoint | None
    """The passing run just before `first_bad`."""
    flips: int
    pairs: int
    fixed_by: CaseRunPoint | None = None
    """The first passing run after the streak, when the case passes again (None: still failing)."""

    @property
    def failing(self) -> bool:
        """The case fails now in a sustained streak."""
        return self.first_bad is not None and self.fixed_by is None

    @property
    def flip_rate(self) -> float | None:
        return None if not self.pairs else self.flips / self.pairs


def tell(points: list[CaseRunPoint], branch: str) -> CaseStory:
    """The story of `points` (oldest first) on `branch`; see the module docstring for the rules."""
    if not points:
        return CaseStory(f"This case has no complete run on {branch}.", None, None, 0, 0)
    outcomes = [p.passed for p in points]
    streaks, flips, pairs = changes_and_flips(outcomes)
    noise = _noise(flips, pairs)
    runs = f"{len(points)} run{'s' if len(points) != 1 else ''} on {branch}"
    newest_failing = not outcomes[-1]
    if streaks and streaks[-1][1] == len(points) - 1:  # failing now, a sustained change
        first, last = streaks[-1]
        first_bad, last_good = points[first], points[first - 1]
        headline = (
            f"Failing since commit {_short(first_bad.commit)}: {last - first + 1} runs in a row, after passing "
            f"at {_short(last_good.commit)}.{noise}"
        )
        return CaseStory(headline, first_bad, last_good, flips, pairs)
    if newest_failing and not any(outcomes):
        return CaseStory(f"Failing in every one of the {runs}: it started before the runs shown.", None, None, 0, 0)
    if newest_failing:
        headline = (
            f"Failed in the newest run, after passing in the one before (one run: not yet a sustained change).{noise}"
        )
    elif streaks:
        first, last = streaks[-1]
        headline = (
            f"Passing since commit {_short(points[last + 1].commit)}, which fixed a failure that began at "
            f"{_short(points[first].commit)} ({last - first + 1} runs).{noise}"
        )
        return CaseStory(headline, points[first], points[first - 1], flips, pairs, fixed_by=points[last + 1])
    elif flips:
        headline = f"Passing in the newest run.{noise}"
    else:
        headline = f"Passing in all {runs}."
    return CaseStory(headline, None, None, flips, pairs)


def _noise(flips: int, pairs: int) -> str:
    if not flips:
        return ""
    return f" Flaky meanwhile: its outcome flipped {flips} time{'s' if flips != 1 else ''} in {pairs} pairs of runs."


def _short(commit: str | None) -> str:
    return (commit or "unknown")[:7]


async def case_page(request: Request) -> Response:
    if (redirect := read_gate(request)) is not None:
        return redirect
    state = server_state(request)
    repo = f"{request.path_params['owner']}/{request.path_params['repo']}"
    eval_set_id, case_id = request.path_params["eval_set"], request.path_params["case_id"]

    def load() -> tuple[str, list[CaseRunPoint], dict[str, list[Any]], set[str]]:
        branch = request.query_params.get("branch") or base_branch_of(state, repo)
        points = case_views.case_timeline(state.store, repo, branch, eval_set_id, case_id, limit=WINDOW_RUNS)
        if not points and not state.store.list_runs(repository=repo, limit=1):
            raise HTTPException(404, f"no runs for repository {repo}")
        recent = [p.run_id for p in points[-RECENT_RESULTS:]]
        # The criteria (a threshold in the newest run) lead the columns; informational metrics follow.
        newest = state.store.load_run_header(points[-1].run_id) if points else None
        gated = set(gated_metrics(newest.summary)) if newest else set()
        return branch, points, case_views.case_results_in(state.store, recent, eval_set_id, case_id), gated

    branch, points, results, gated = await run_in_threadpool(load)
    story = tell(points, branch)
    # Drawn off the event loop, as the repository page's charts are (vl-convert takes 0.1 s a chart).
    chart = await run_in_threadpool(case_chart, "share of repetitions passed", points)
    metrics = sorted({metric for point in points for metric in point.scores}, key=lambda m: (m not in gated, m))
    recent = [
        (point, [case_view(case) for case in results.get(point.run_id, [])]) for point in points[-RECENT_RESULTS:]
    ]
    return render_page(
        request,
        "case.html",
        repo=repo,
        branch=branch,
        eval_set_id=eval_set_id,
        case_id=case_id,
        story=story,
        points=list(reversed(points)),
        metrics=metrics,
        recent=list(reversed(recent)),
        chart=chart,
    )


def case_routes() -> list[Route]:
    from starlette.routing import Route

    return [Route("/repos/{owner}/{repo}/cases/{eval_set}/{case_id:path}", case_page, methods=["GET"])]
