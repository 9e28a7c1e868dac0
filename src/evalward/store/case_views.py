"""One case across runs, and every case of two runs side by side: the reads of the dashboard's case and compare
pages, each from the case rows and score rows (never a whole run's JSON).

- `case_timeline`: one case in each complete run of a branch (its repetitions' outcomes and mean scores);
- `case_results_in`: one case's results in a few runs;
- `case_tallies`: every case of one run, its repetitions' outcomes and mean score per metric.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from evalward.model import CaseResult
from evalward.model.case_tally import CaseTally
from evalward.store.engine import read_transaction
from evalward.store.schema import cases_table, scores_table

if TYPE_CHECKING:
    from evalward.store import Store


class CaseRunPoint(CaseTally):
    """One case in one complete run on a branch (`case_timeline`)."""

    run_id: str
    commit: str | None
    started_at: datetime | None


def case_timeline(
    store: Store, repository: str, branch: str, eval_set_id: str, case_id: str, *, limit: int = 50
) -> list[CaseRunPoint]:
    """The case in the newest `limit` complete, unsharded runs of `repository` on `branch` that ran it,
    oldest first."""
    from sqlalchemy import case, func, select

    cc, s = cases_table.c, scores_table.c
    with read_transaction(store.engine) as conn:
        runs = conn.execute(
            store.history_runs_query(branch=branch, case_id=case_id, limit=limit, repository=repository)
        ).all()
        ids = [r.run_id for r in runs]
        if not ids:
            return []
        outcomes = {
            r.run_id: r
            for r in conn.execute(
                select(
                    cc.run_id,
                    func.count().label("results"),
                    func.sum(case((cc.status == "passed", 1), else_=0)).label("passes"),
                    func.sum(case((cc.status == "error", 1), else_=0)).label("errors"),
                )
                .where(cc.run_id.in_(ids), cc.eval_set_id == eval_set_id, cc.case_id == case_id)
                .group_by(cc.run_id)
            )
        }
        scores: dict[str, dict[str, float | None]] = defaultdict(dict)
        for run_id, metric, mean in conn.execute(
            select(s.run_id, s.metric, func.avg(s.score))
            .where(s.run_id.in_(ids), s.eval_set_id == eval_set_id, s.case_id == case_id)
            .group_by(s.run_id, s.metric)
        ):
            scores[run_id][metric] = None if mean is None else float(mean)
    return [
        CaseRunPoint(
            run_id=r.run_id,
            commit=r.commit_sha,
            started_at=r.started_at,
            passes=int(outcomes[r.run_id].passes or 0),
            results=int(outcomes[r.run_id].results),
            errors=int(outcomes[r.run_id].errors or 0),
            scores=scores.get(r.run_id, {}),
        )
        for r in reversed(runs)
        if r.run_id in outcomes  # the same case id in another eval set only
    ]


def case_results_in(store: Store, run_ids: list[str], eval_set_id: str, case_id: str) -> dict[str, list[Any]]:
    """{run id: the case's results in that run, by repetition} — the case's JSON only, never a whole run."""
    from sqlalchemy import Text, cast, select

    cc = cases_table.c
    found: dict[str, list[Any]] = defaultdict(list)
    with read_transaction(store.engine) as conn:
        rows = conn.execute(
            select(cc.run_id, cast(cc.case_json, Text))
            .where(cc.run_id.in_(run_ids), cc.eval_set_id == eval_set_id, cc.case_id == case_id)
            .order_by(cc.run_id, cc.repetition)
        )
        for run_id, text in rows:
            found[run_id].append(CaseResult.model_validate_json(text))
    return dict(found)


def case_tallies(store: Store, run_id: str, metrics: Sequence[str] | None = None) -> dict[tuple[str, str], CaseTally]:
    """{(eval set, case id): its tally} over every case of the run: two grouped reads, whatever the run's size.
    `metrics`: the metrics whose mean scores are wanted (None: all; empty: none, and the score rows are not read)."""
    from sqlalchemy import case, func, select

    cc, s = cases_table.c, scores_table.c
    with read_transaction(store.engine) as conn:
        outcomes = conn.execute(
            select(
                cc.eval_set_id,
                cc.case_id,
                func.count(),
                func.sum(case((cc.status == "passed", 1), else_=0)),
                func.sum(case((cc.status == "error", 1), else_=0)),
            )
            .where(cc.run_id == run_id)
            .group_by(cc.eval_set_id, cc.case_id)
        ).all()
        scores: dict[tuple[str, str], dict[str, float | None]] = defaultdict(dict)
        if metrics is None or metrics:
            query = select(s.eval_set_id, s.case_id, s.metric, func.avg(s.score)).where(s.run_id == run_id)
            if metrics is not None:
                query = query.where(s.metric.in_(list(metrics)))
            for set_id, case_id, metric, mean in conn.execute(query.group_by(s.eval_set_id, s.case_id, s.metric)):
                scores[(set_id, case_id)][metric] = None if mean is None else float(mean)
    return {
        (set_id, case_id): CaseTally(
            passes=int(passes or 0),
            results=int(results),
            errors=int(errors or 0),
            scores=scores.get((set_id, case_id), {}),
        )
        for set_id, case_id, results, passes, errors in outcomes
    }


def cases_of_run(store: Store, run_id: str, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], list[Any]]:
    """{(eval set, case id): its results in `run_id`, by repetition} for `keys` (a page's worth: one read per
    eval set among them); keys without results are absent."""
    from sqlalchemy import Text, cast, select

    cc = cases_table.c
    found: dict[tuple[str, str], list[Any]] = defaultdict(list)
    with read_transaction(store.engine) as conn:
        for set_id in dict.fromkeys(set_id for set_id, _ in keys):
            ids = [case_id for s, case_id in keys if s == set_id]
            rows = conn.execute(
                select(cc.case_id, cast(cc.case_json, Text))
                .where(cc.run_id == run_id, cc.eval_set_id == set_id, cc.case_id.in_(ids))
                .order_by(cc.case_id, cc.repetition)
            )
            for case_id, text in rows:
                found[(set_id, case_id)].append(CaseResult.model_validate_json(text))
    return dict(found)
