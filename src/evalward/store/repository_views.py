"""Read-only queries the API and dashboard need per repository (the store's history views are global).

- `repositories`: every repository with a stored run or a job;
- `metric_trend`: one point per complete, unsharded run on a branch of a repository (oldest first):
  the run's summary mean and 95% interval per metric, straight from the stored run summary;
- `case_history`: per run, one case's mean score per metric over its repetitions
  (mean = Σ non-null scores / number of non-null scores) and its pass count.
"""

from __future__ import annotations

from datetime import datetime
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from evalward.store.engine import read_transaction
from evalward.store.schema import cases_table, jobs_table, runs_table, scores_table

if TYPE_CHECKING:
    from evalward.store import Store


class TrendPoint(BaseModel):
    run_id: str
    commit: str | None
    started_at: datetime | None
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    n: int
    threshold: float | None = None
    """The metric's threshold in that run (None: informational)."""


class CasePoint(BaseModel):
    run_id: str
    commit: str | None
    branch: str | None
    started_at: datetime | None
    metric: str
    score: float | None
    """mean of the case's non-null scores in the run; None when none was scored."""
    scored: int
    passes: int
    results: int


def repositories(store: Store) -> list[str]:
    from sqlalchemy import select, union

    with read_transaction(store.engine) as conn:
        rows = conn.execute(
            union(select(runs_table.c.repository.label("r")), select(jobs_table.c.repo.label("r")))
        ).scalars()
        return sorted({r for r in rows if r})


def _complete_runs(repository: str, branch: str | None, limit: int) -> Any:
    from sqlalchemy import select

    c = runs_table.c
    query = select(c.run_id, c.commit_sha, c.branch, c.started_at, c.run_json).where(
        c.repository == repository,
        c.status == "complete",
        (c.shard_count.is_(None)) | (c.shard_count <= 1),
    )
    if branch is not None:
        query = query.where(c.branch == branch)
    return query.order_by(c.started_at.desc().nulls_last(), c.created_at.desc()).limit(limit)


def metric_trend(store: Store, repository: str, branch: str, *, limit: int = 50) -> dict[str, list[TrendPoint]]:
    """{metric: points oldest first} over the newest `limit` complete runs of `repository` on `branch`."""
    with read_transaction(store.engine) as conn:
        rows = list(conn.execute(_complete_runs(repository, branch, limit)).all())
    rows.reverse()
    trend: dict[str, list[TrendPoint]] = {}
    for row in rows:
        summary = (row.run_json or {}).get("summary") or {}
        for metric, values in summary.items():
            if not isinstance(values, dict):
                continue
            trend.setdefault(metric, []).append(
                TrendPoint(
                    run_id=row.run_id,
                    commit=row.commit_sha,
                    started_at=row.started_at,
                    mean=values.get("mean"),
                    ci_low=values.get("ci_low"),
                    ci_high=values.get("ci_high"),
                    n=int(values.get("n") or 0),
                    threshold=values.get("threshold"),
                )
            )
    return trend


def case_history(
    store: Store,
    repository: str,
    case_id: str,
    *,
    metric: str | None = None,
    branch: str | None = None,
    limit: int = 50,
) -> list[CasePoint]:
    """One point per (run, metric) for `case_id` in `repository`, oldest run first."""
    from sqlalchemy import case, func, select

    s = scores_table.c
    with read_transaction(store.engine) as conn:
        runs = list(conn.execute(_complete_runs(repository, branch, limit)).all())
        if not runs:
            return []
        info = {r.run_id: r for r in runs}
        query = (
            select(
                s.run_id,
                s.metric,
                func.avg(s.score).label("mean"),
                func.count(s.score).label("scored"),
                func.sum(case((s.status == "passed", 1), else_=0)).label("passes"),
                func.count().label("results"),
            )
            .where(s.run_id.in_(list(info)), s.case_id == case_id)
            .group_by(s.run_id, s.metric)
        )
        if metric is not None:
            query = query.where(s.metric == metric)
        rows = conn.execute(query).all()
    order = {r.run_id: i for i, r in enumerate(reversed(runs))}
    points = [
        CasePoint(
            run_id=r.run_id,
            commit=info[r.run_id].commit_sha,
            branch=info[r.run_id].branch,
            started_at=info[r.run_id].started_at,
            metric=r.metric,
            score=None if r.mean is None else float(r.mean),
            scored=int(r.scored),
            passes=int(r.passes or 0),
            results=int(r.results),
        )
        for r in rows
    ]
    points.sort(key=lambda p: (order[p.run_id], p.metric))
    return points


def case_outcomes(store: Store, repository: str, branch: str, *, limit: int = 50) -> dict[tuple[str, str], list[bool]]:
    """{(eval_set_id, case_id): [passed in run 1, run 2, …]} over complete runs on `branch`, oldest first.

    A case passes in a run when every repetition of it passed.
    """
    from sqlalchemy import select

    cc = cases_table.c
    with read_transaction(store.engine) as conn:
        runs = [r.run_id for r in conn.execute(_complete_runs(repository, branch, limit)).all()]
        runs.reverse()
        if not runs:
            return {}
        rows = conn.execute(select(cc.run_id, cc.eval_set_id, cc.case_id, cc.status).where(cc.run_id.in_(runs))).all()
    per: dict[tuple[str, str], dict[str, bool]] = {}
    for r in rows:
        runs_of = per.setdefault((r.eval_set_id, r.case_id), {})
        runs_of[r.run_id] = runs_of.get(r.run_id, True) and r.status == "passed"
    position = {run_id: i for i, run_id in enumerate(runs)}
    return {key: [v for _, v in sorted(d.items(), key=lambda kv: position[kv[0]])] for key, d in per.items()}


def flip_rate(outcomes: list[bool]) -> float | None:
    """flips / consecutive pairs; e.g. pass, fail, fail, pass → 2 / 3 = 0.667. None with fewer than 2 runs."""
    if len(outcomes) < 2:
        return None
    flips = sum(a != b for a, b in pairwise(outcomes))
    return flips / (len(outcomes) - 1)
