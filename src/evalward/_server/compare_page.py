"""The compare page (`/compare/{baseline}...{candidate}`): what changed between two runs, case by case.

Each case is read from both runs' case and score rows (`store.case_views.case_tallies`, never the runs' JSON) and
put in one class by its share of passing repetitions, b in the baseline and c in the candidate:
- `added` / `removed`: in one run only;
- `errored`: a repetition of the candidate ended in an error;
- `regressed`: c < b; `improved`: c > b;
- `still failing`: c = b < 1; `unchanged`: c = b = 1.
A case is also `flaky` when either side's repetitions disagree (0 < share < 1). The header counts each class and
links to it; `?show=` filters (a class, `flaky` or `all`), `?q=` keeps case ids containing the text, `?sort=`
orders by class then Δ (default), by Δ, or by case id; rows come a page at a time (`?page=`). The responses of
the first repetition on each side are shown with a word diff for the rows of the page that changed.
"""

from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from evalward.store.case_views import CaseTally

if TYPE_CHECKING:
    from starlette.routing import Route

CLASSES = ("regressed", "errored", "improved", "still failing", "added", "removed", "unchanged")
"""In the order the page lists them: what needs a look first."""
FILTERS = ("all", *CLASSES, "flaky")
ROWS_PER_PAGE = 100
SORTS = ("change", "delta", "case")


@dataclass(frozen=True)
class CaseRow:
    eval_set_id: str
    case_id: str
    baseline: CaseTally | None
    candidate: CaseTally | None
    change: str
    flaky: bool

    @property
    def delta(self) -> float | None:
        """candidate share − baseline share (None for a case in one run only)."""
        if self.baseline is None or self.candidate is None:
            return None
        return self.candidate.share - self.baseline.share


def classify(baseline: CaseTally | None, candidate: CaseTally | None) -> str:
    """The case's class (see the module docstring)."""
    if candidate is None:
        return "removed"
    if baseline is None:
        return "added"
    if candidate.errors:
        return "errored"
    if candidate.share < baseline.share:
        return "regressed"
    if candidate.share > baseline.share:
        return "improved"
    return "still failing" if candidate.share < 1 else "unchanged"


def compare_rows(
    baseline: dict[tuple[str, str], CaseTally], candidate: dict[tuple[str, str], CaseTally]
) -> list[CaseRow]:
    rows = []
    for key in sorted(baseline.keys() | candidate.keys()):
        b, c = baseline.get(key), candidate.get(key)
        flaky = any(side is not None and 0 < side.passes < side.results for side in (b, c))
        rows.append(CaseRow(key[0], key[1], b, c, classify(b, c), flaky))
    return rows


def select_rows(rows: list[CaseRow], show: str, query: str, sort: str) -> list[CaseRow]:
    """The rows `show` and `query` keep, in `sort` order."""
    kept = [
        r
        for r in rows
        if (show == "all" or (show == "flaky" and r.flaky) or r.change == show)
        and (not query or query.lower() in r.case_id.lower())
    ]
    if sort == "case":
        return sorted(kept, key=lambda r: (r.case_id, r.eval_set_id))
    by_delta = sorted(kept, key=lambda r: (r.delta if r.delta is not None else 0.0, r.case_id, r.eval_set_id))
    if sort == "delta":
        return by_delta
    order = {name: i for i, name in enumerate(CLASSES)}
    return sorted(by_delta, key=lambda r: order[r.change])


def word_diff(before: str, after: str) -> list[tuple[str, str]]:
    """(`same` | `del` | `add`, text) pieces turning `before` into `after`, word by word (spaces kept)."""
    old, new = re.findall(r"\S+|\s+", before), re.findall(r"\S+|\s+", after)
    pieces: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if op == "equal":
            pieces.append(("same", "".join(old[i1:i2])))
            continue
        if i2 > i1:
            pieces.append(("del", "".join(old[i1:i2])))
        if j2 > j1:
            pieces.append(("add", "".join(new[j1:j2])))
    return pieces


def _responses(cases: list[Any]) -> str:
    """The first repetition's responses, one line per turn."""
    if not cases:
        return ""
    return "\n".join(turn.actual_response or "" for turn in cases[0].invocations)


async def compare_page(request: Request) -> Response:
    from evalward._server.dashboard import one_page, page_number, query_link, read_gate, render_page, server_state
    from evalward.store import case_views

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
        rows = compare_rows(
            case_views.case_tallies(state.store, baseline_id), case_views.case_tallies(state.store, candidate_id)
        )
        chosen = select_rows(rows, show, query, sort)
        shown, pages = one_page(chosen, page, ROWS_PER_PAGE)
        changed = [r for r in shown if r.change != "unchanged"]
        keys = {(r.eval_set_id, r.case_id) for r in changed}
        texts: dict[tuple[str, str], list[tuple[str, str]]] = {}
        if keys:
            wanted = sorted(keys)
            sides = {
                run_id: case_views.cases_of_run(state.store, run_id, wanted) for run_id in (baseline_id, candidate_id)
            }
            for key in keys:
                before = _responses(sides[baseline_id].get(key, []))
                after = _responses(sides[candidate_id].get(key, []))
                if before != after:
                    texts[key] = word_diff(before, after)
        return {"headers": headers, "rows": rows, "shown": shown, "pages": pages, "count": len(chosen), "texts": texts}

    loaded = await run_in_threadpool(load)
    rows: list[CaseRow] = loaded["rows"]
    counts = {name: sum(r.change == name for r in rows) for name in CLASSES}
    counts["flaky"] = sum(r.flaky for r in rows)
    candidate_header = loaded["headers"][candidate_id]
    gated = sorted(name for name, s in candidate_header.summary.items() if s.threshold is not None)

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
        gated=gated,
        link=functools.partial(query_link, {"show": show, "q": query, "sort": sort}, {"show": "all", "sort": "change"}),
    )


def compare_routes() -> list[Route]:
    from starlette.routing import Route

    return [Route("/compare/{pair:path}", compare_page, methods=["GET"])]
