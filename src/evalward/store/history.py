"""Reading history: the run list, per-metric score history, flip rates, and the per-repository views of
the API and dashboard.

- `HistoryViews.list_runs`: `evalward runs`, newest first, with per-run counts;
- `HistoryViews.case_history`: per run, the mean score per metric (over one case's repetitions with
  `case_id`, over every case result without): mean = Σ non-null scores / number of non-null scores;
- `HistoryViews.flip_rates`: per case, flips / consecutive pairs of runs on a branch;
- `repositories`, `metric_trend`, `case_outcomes`, `gate_outcomes`: what the daemon's API and dashboard show per
  repository.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from evalward.store.engine import read_transaction
from evalward.store.rows import HistoryPoint, RunRow
from evalward.store.schema import cases_table, gate_verdicts_table, jobs_table, runs_table, scores_table

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from evalward.store import Store


class HistoryViews:
    """The history queries of `Store` (a mixin: `Store` provides the engine)."""

    engine: Engine

    def list_runs(
        self,
        *,
        repository: str | None = None,
        branch: str | None = None,
        commit: str | None = None,
        status: str | None = None,
        pr_number: int | None = None,
        limit: int = 50,
    ) -> list[RunRow]:
        """Summary rows, newest first (by start time, then insertion); `commit` matches a SHA prefix; `pr_number`
        keeps a pull request's own runs (its base side's runs belong to the base branch)."""
        from sqlalchemy import case, func, select

        c = runs_table.c
        query = select(runs_table)
        if repository is not None:
            query = query.where(c.repository == repository)
        if branch is not None:
            query = query.where(c.branch == branch)
        if commit is not None:
            query = query.where(c.commit_sha.startswith(commit, autoescape=True))
        if status is not None:
            query = query.where(c.status == status)
        if pr_number is not None:
            query = query.where(c.pr_number == pr_number)
        query = query.order_by(c.started_at.desc().nulls_last(), c.created_at.desc(), c.run_id).limit(limit)
        with read_transaction(self.engine) as conn:
            rows = conn.execute(query).all()
            ids = [r.run_id for r in rows]
            counts: dict[str, tuple[int, int, int, int]] = {}
            if ids:
                cc = cases_table.c
                for run_id, total, passes, failures, errors in conn.execute(
                    select(
                        cc.run_id,
                        func.count(),
                        func.sum(case((cc.status == "passed", 1), else_=0)),
                        func.sum(case((cc.status == "failed", 1), else_=0)),
                        func.sum(case((cc.status == "error", 1), else_=0)),
                    )
                    .where(cc.run_id.in_(ids))
                    .group_by(cc.run_id)
                ):
                    counts[run_id] = (int(total), int(passes or 0), int(failures or 0), int(errors or 0))
        return [
            RunRow(
                run_id=r.run_id,
                status=r.status,
                repository=r.repository,
                commit=r.commit_sha,
                branch=r.branch,
                pr_number=r.pr_number,
                shard_index=r.shard_index,
                shard_count=r.shard_count,
                group_id=r.group_id,
                started_at=r.started_at,
                finished_at=r.finished_at,
                passed=r.passed,
                fingerprint=r.fingerprint,
                comparability_key=r.comparability_key,
                evalward_version=r.evalward_version,
                planned=r.planned_count,
                recorded=counts.get(r.run_id, (0, 0, 0, 0))[0],
                passes=counts.get(r.run_id, (0, 0, 0, 0))[1],
                failures=counts.get(r.run_id, (0, 0, 0, 0))[2],
                errors=counts.get(r.run_id, (0, 0, 0, 0))[3],
            )
            for r in rows
        ]

    def history_runs_query(
        self, *, branch: str | None, case_id: str | None, limit: int, repository: str | None = None
    ) -> Any:
        """Complete, unsharded runs (newest first) for history views; with `case_id`, only runs that have it;
        with `repository`, only that repository's."""
        from sqlalchemy import exists, select

        c = runs_table.c
        query = select(c.run_id, c.commit_sha, c.branch, c.started_at, c.created_at).where(
            c.status == "complete", (c.shard_count.is_(None)) | (c.shard_count <= 1)
        )
        if repository is not None:
            query = query.where(c.repository == repository)
        if branch is not None:
            query = query.where(c.branch == branch)
        if case_id is not None:
            query = query.where(exists().where(cases_table.c.run_id == c.run_id, cases_table.c.case_id == case_id))
        return query.order_by(c.started_at.desc().nulls_last(), c.created_at.desc()).limit(limit)

    def case_history(
        self,
        *,
        case_id: str | None = None,
        metric: str | None = None,
        branch: str | None = None,
        limit: int = 50,
        repository: str | None = None,
    ) -> list[HistoryPoint]:
        """Per-metric score history over the newest `limit` complete runs, oldest first (sparkline order).

        With `case_id`: one point per (run, eval set, metric) = mean over that case's repetitions.
        Without: one point per (run, metric) = mean over every case result of the run. Sharded partial
        runs are left out (their merged run carries the same results).
        """
        from sqlalchemy import case, func, select

        s = scores_table.c
        with read_transaction(self.engine) as conn:
            runs = conn.execute(
                self.history_runs_query(branch=branch, case_id=case_id, limit=limit, repository=repository)
            ).all()
            if not runs:
                return []
            info = {r.run_id: r for r in runs}
            group: list[Any] = [s.run_id, s.metric]
            if case_id is not None:
                group += [s.eval_set_id, s.case_id]
            query = (
                select(
                    *group,
                    func.avg(s.score).label("mean"),
                    func.count(s.score).label("scored"),
                    func.sum(case((s.status == "passed", 1), else_=0)).label("passes"),
                    func.count().label("results"),
                )
                .where(s.run_id.in_(list(info)))
                .group_by(*group)
            )
            if case_id is not None:
                query = query.where(s.case_id == case_id)
            if metric is not None:
                query = query.where(s.metric == metric)
            rows = conn.execute(query).all()
        order = {run_id: position for position, run_id in enumerate(reversed([r.run_id for r in runs]))}
        points = [
            HistoryPoint(
                run_id=r.run_id,
                commit=info[r.run_id].commit_sha,
                branch=info[r.run_id].branch,
                started_at=info[r.run_id].started_at,
                metric=r.metric,
                eval_set_id=r.eval_set_id if case_id is not None else None,
                case_id=r.case_id if case_id is not None else None,
                score=None if r.mean is None else float(r.mean),
                scored=int(r.scored),
                passes=int(r.passes or 0),
                results=int(r.results),
            )
            for r in rows
        ]
        points.sort(key=lambda p: (order[p.run_id], p.metric, p.eval_set_id or "", p.case_id or ""))
        return points

    def flip_rates(
        self,
        branch: str,
        *,
        comparability_key: str | None = None,
        fingerprint: str | None = None,
        limit_runs: int = 50,
    ) -> dict[tuple[str, str], float]:
        """Per case: flips / consecutive pairs, over the newest `limit_runs` complete runs on `branch`.

        A case passes in a run when every repetition of it passed. A pair of consecutive runs (by start
        time) counts only when the case ran in both with the same content hash; it is a flip when the
        pass/fail outcome differs. Cases with no such pair are absent from the result.
        Example: outcomes pass, fail, fail, pass → 2 flips / 3 pairs = 0.667.
        """
        from sqlalchemy import select

        c = runs_table.c
        runs_query = self.history_runs_query(branch=branch, case_id=None, limit=limit_runs)
        if comparability_key is not None:
            runs_query = runs_query.where(c.comparability_key == comparability_key)
        if fingerprint is not None:
            runs_query = runs_query.where(c.fingerprint == fingerprint)
        cc = cases_table.c
        with read_transaction(self.engine) as conn:
            runs = [r.run_id for r in conn.execute(runs_query).all()]
            runs.reverse()  # oldest first
            if len(runs) < 2:
                return {}
            rows = conn.execute(
                select(cc.run_id, cc.eval_set_id, cc.case_id, cc.content_hash, cc.status).where(cc.run_id.in_(runs))
            )
            position = {run_id: i for i, run_id in enumerate(runs)}
            # {(eval set, case): {run position: (content hash, every repetition passed so far)}}
            outcome: dict[tuple[str, str], dict[int, tuple[str, bool]]] = defaultdict(dict)
            for run_id, set_id, case_id, content_hash, status in rows:
                per_run = outcome[(set_id, case_id)]
                at = position[run_id]
                previous = per_run.get(at)
                per_run[at] = (content_hash, status == "passed" and (previous is None or previous[1]))
        rates: dict[tuple[str, str], float] = {}
        for key, per_run in outcome.items():
            pairs = flips = 0
            for at, (content_hash, passed) in per_run.items():
                following = per_run.get(at + 1)
                if following is not None and following[0] == content_hash:
                    pairs += 1
                    flips += passed != following[1]
            if pairs:
                rates[key] = flips / pairs
        return rates

    def list_runs_in_group(self, group_id: str) -> list[tuple[str, int | None, int | None, str]]:
        """(run_id, shard_index, shard_count, status) of the runs tagged `group_id`, newest first."""
        from sqlalchemy import select

        c = runs_table.c
        with read_transaction(self.engine) as conn:
            rows = conn.execute(
                select(c.run_id, c.shard_index, c.shard_count, c.status)
                .where(c.group_id == group_id)
                .order_by(c.started_at.desc().nulls_last(), c.created_at.desc())
            ).all()
        return [(r.run_id, r.shard_index, r.shard_count, r.status) for r in rows]


class TrendPoint(BaseModel):
    model_config = ConfigDict(defer_build=True)

    run_id: str
    commit: str | None
    started_at: datetime | None
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    n: int
    threshold: float | None = None
    """The metric's threshold in that run (None: informational)."""


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


def cost_per_result(store: Store, run_ids: list[str]) -> dict[str, float]:
    """{run id: mean cost in US dollars of its case results that reported one} for the runs of `run_ids` with any
    (the dashboard's cost chart: one grouped read of the case rows, never the runs' JSON)."""
    from sqlalchemy import func, select

    if not run_ids:
        return {}
    cc = cases_table.c
    with read_transaction(store.engine) as conn:
        rows = conn.execute(
            select(cc.run_id, func.avg(cc.cost_usd))
            .where(cc.run_id.in_(run_ids), cc.cost_usd.is_not(None))
            .group_by(cc.run_id)
        ).all()
    return {run_id: float(mean) for run_id, mean in rows if mean is not None}


def gate_outcomes(store: Store, run_ids: list[str]) -> dict[str, str]:
    """{run id: the outcome of the newest verdict recorded for it} (`pass`, `fail`, `inconclusive`, `error`) for the
    runs of `run_ids` a gate judged; a run list shows it first, the run's own threshold result second."""
    from sqlalchemy import select

    if not run_ids:
        return {}
    v = gate_verdicts_table.c
    outcomes: dict[str, str] = {}
    with read_transaction(store.engine) as conn:
        rows = conn.execute(
            select(v.run_id, v.outcome).where(v.run_id.in_(run_ids)).order_by(v.created_at.desc(), v.id.desc())
        )
        for run_id, outcome in rows:
            outcomes.setdefault(run_id, outcome)  # the newest first
    return outcomes
