"""The pull request page (`/repos/{owner}/{repo}/pulls/{number}`): is my PR green, and if not, why?

It leads with the newest push's verdict (its outcome and headline, as the PR comment said them), then the cases
that verdict found regressed, each with its results in the pushed run (trajectory diff, responses) and links to
its history and to the comparison with the baseline; then the top-up the gate ran, if any; then every push of the
pull request with its verdict. The runs are the PR's own (its base side's runs belong to the base branch).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from evalward._server.dashboard import case_view, read_gate, render_page, server_state
from evalward.identifiers import is_pr_number
from evalward.store import case_views

if TYPE_CHECKING:
    from starlette.routing import Route

PUSHES_SHOWN = 30
"""Newest pushes the page lists."""
REGRESSED_SHOWN = 50
"""Regressed cases whose results the page shows (the rest are counted and reached through the comparison)."""


@dataclass(frozen=True)
class Push:
    """One head commit of the pull request: its newest run and that run's newest recorded verdict."""

    commit: str | None
    run: Any
    """The newest run of this commit (`RunRow`)."""
    runs: int
    """Runs of this commit (re-runs included)."""
    verdict: Any
    """The newest recorded `Verdict` of `run`, or None (not gated)."""
    recorded: Any
    """Its `RecordedVerdict` (source and time), or None."""


async def pr_page(request: Request) -> Response:
    if (redirect := read_gate(request)) is not None:
        return redirect
    state = server_state(request)
    repo = f"{request.path_params['owner']}/{request.path_params['repo']}"
    raw_number = request.path_params["number"]
    if not raw_number.isdigit() or not is_pr_number(int(raw_number)):
        raise HTTPException(404, f"{raw_number!r} is not a pull request number")
    number = int(raw_number)

    def load() -> tuple[list[Push], list[Any], int, Any]:
        rows = state.store.list_runs(repository=repo, pr_number=number, limit=200)
        if not rows:
            raise HTTPException(404, f"no runs for pull request #{number} of {repo}")
        by_commit: dict[str | None, list[Any]] = {}
        for row in rows:  # newest first, so each commit's first row is its newest run
            by_commit.setdefault(row.commit, []).append(row)
        pushes = []
        for commit, runs in list(by_commit.items())[:PUSHES_SHOWN]:
            recorded = state.store.recorded_verdicts(runs[0].run_id, limit=1)
            newest = recorded[0] if recorded else None
            pushes.append(Push(commit, runs[0], len(runs), newest.verdict if newest else None, newest))
        latest = pushes[0]
        regressed = [c for c in latest.verdict.cases if c.label == "regressed"] if latest.verdict else []
        shown = regressed[:REGRESSED_SHOWN]
        keys = [(c.eval_set_id, c.case_id) for c in shown]
        found = case_views.cases_of_run(state.store, latest.run.run_id, keys)
        results = [case for key in keys for case in found.get(key, [])]
        return pushes, results, len(regressed), state.store.load_run_header(latest.run.run_id)

    pushes, results, regressed_count, head = await run_in_threadpool(load)
    latest = pushes[0]
    return render_page(
        request,
        "pr.html",
        repo=repo,
        number=number,
        pushes=pushes,
        latest=latest,
        regressed=[case_view(case) for case in results],
        regressed_count=regressed_count,
        head=head,
    )


def pr_routes() -> list[Route]:
    from starlette.routing import Route

    return [Route("/repos/{owner}/{repo}/pulls/{number}", pr_page, methods=["GET"])]
