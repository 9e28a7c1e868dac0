"""The compare page (`/compare/{baseline}...{candidate}`): what changed between two runs, case by case
(`report.case_changes`: the classes, the order, the response diffs; `evalward compare --html` writes the same view).

Each case is read from both runs' case and score rows (`store.case_views.case_tallies`, never the runs' JSON). The
header counts each class and links to it; `?show=` filters (a class, `flaky` or `all`), `?q=` keeps case ids
containing the text, `?sort=` orders by class then Δ (default), by Δ, or by case id; rows come a page at a time
(`?page=`), and only the page's changed rows have their responses read and diffed.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from evalward._server.dashboard import one_page, page_number, query_link, read_gate, render_page, server_state
from evalward.report.case_changes import (
    CLASSES,
    FILTERS,
    SORTS,
    CaseRow,
    class_counts,
    compare_rows,
    gated_metrics,
    response_diffs,
    select_rows,
)
from evalward.store import case_views

if TYPE_CHECKING:
    from starlette.routing import Route

ROWS_PER_PAGE = 100
"""Compare rows a page shows at a time."""


async def compare_page(request: Request) -> Response:
    if (redirect := read_gate(request)) is not None:
        return redirect
    state = server_state(request)
    baseline_id, separator, candidate_id = request.path_params["pair"].partition("...")
    if not separator or not baseline_id or not candidate_id:
        raise HTTPException(404, "compare two runs as /compare/BASELINE...CANDIDATE")
    params = request.query_params
    show = params.get("show", "all") if params.get("show", "all") in FILTERS else "all"
    sort = params.get("sort", "change") if params.get("sort", "change") in SORTS else "change"
    query = params.get("q", "")[:200]
    page = page_number(params.get("page"))

    def load() -> dict[str, Any]:
        for run_id in (baseline_id, candidate_id):
            if not state.store.has_run(run_id):
                raise HTTPException(404, f"run {run_id!r} is not stored")
        headers = {run_id: state.store.load_run_header(run_id) for run_id in (baseline_id, candidate_id)}
        gated = gated_metrics(headers[candidate_id].summary)
        # Only the gated metrics have a column: the other metrics' score rows are not read.
        rows = compare_rows(
            case_views.case_tallies(state.store, baseline_id, gated),
            case_views.case_tallies(state.store, candidate_id, gated),
        )
        chosen = select_rows(rows, show, query, sort)
        shown, pages = one_page(chosen, page, ROWS_PER_PAGE)
        keys = sorted({(r.eval_set_id, r.case_id) for r in shown if r.change != "unchanged"})
        texts: dict[tuple[str, str], list[tuple[str, str]]] = {}
        if keys:
            sides = [case_views.cases_of_run(state.store, run_id, keys) for run_id in (baseline_id, candidate_id)]
            texts = response_diffs(shown, *sides)
        return {
            "headers": headers,
            "gated": gated,
            "rows": rows,
            "shown": shown,
            "pages": pages,
            "count": len(chosen),
            "texts": texts,
        }

    loaded = await run_in_threadpool(load)
    rows: list[CaseRow] = loaded["rows"]
    counts = class_counts(rows)
    candidate_header = loaded["headers"][candidate_id]

    link = functools.partial(query_link, {"show": show, "q": query, "sort": sort}, {"show": "all", "sort": "change"})
    return render_page(
        request,
        "compare.html",
        baseline=loaded["headers"][baseline_id],
        candidate=candidate_header,
        counts=counts,
        classes=CLASSES,
        filters=FILTERS,
        sorts=SORTS,
        show=show,
        sort=sort,
        query=query,
        page=min(page, loaded["pages"]),
        pages=loaded["pages"],
        count=loaded["count"],
        rows=loaded["shown"],
        texts=loaded["texts"],
        gated=loaded["gated"],
        link=link,
        filter_link=lambda name: link(show=name),
    )


def compare_routes() -> list[Route]:
    from starlette.routing import Route

    return [Route("/compare/{pair:path}", compare_page, methods=["GET"])]
