"""A run's writes as rows: the SQL of `Store.begin_run`, `record_cases` and `finish_run`, on row dicts made
elsewhere (`rows.run_columns`, `rows.case_columns`).

The row dicts are made where the run is; these functions run where the database is: in the run's process
(`Store`) or in the history writer process (`writer_child`), which therefore imports SQLAlchemy and the
schema but neither pydantic nor evalward's models. Each function that takes an engine is one transaction
(or, after a race, one per case); each that takes a connection runs inside the caller's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from evalward.errors import GateInputError, UsageError
from evalward.store.engine import JSONText, read_transaction, write_transaction
from evalward.store.row_shapes import ROWS_PER_INSERT, CaseRows, ItemKey, case_order_json, now, unique_keys
from evalward.store.schema import cases_table, plan_table, runs_table, scores_table

if TYPE_CHECKING:
    from sqlalchemy import Connection, Engine

KEYS_PER_LOOKUP = 100
"""Most keys one "already stored?" query names (`recorded_keys`)."""


def begin_run(conn: Connection, run_id: str, columns: dict[str, Any], plan: list[ItemKey]) -> None:
    """Insert a new run (status `running`) and its manifest; UsageError when the id is taken."""
    if run_exists(conn, run_id):
        raise UsageError(
            f"run {run_id!r} already exists in the history database; "
            f"use `evalward run --resume {run_id}` to finish it, or choose another run id"
        )
    insert_run(conn, run_id, columns, plan, case_order=None)


def insert_run(
    conn: Connection, run_id: str, columns: dict[str, Any], plan: list[ItemKey], *, case_order: JSONText | None
) -> None:
    from sqlalchemy import insert

    values = {**columns, "planned_count": len(plan), "created_at": now(), "case_order": case_order}
    conn.execute(insert(runs_table).values(**values))
    # In batches: a million planned items as one list of row dicts would take gigabytes at once.
    for start in range(0, len(plan), ROWS_PER_INSERT):
        conn.execute(
            insert(plan_table),
            [
                {"run_id": run_id, "eval_set_id": e, "case_id": c, "repetition": r}
                for e, c, r in plan[start : start + ROWS_PER_INSERT]
            ],
        )


def finish_run(
    conn: Connection,
    run_id: str,
    columns: dict[str, Any],
    keys: Sequence[ItemKey],
    *,
    case_order: JSONText | None = None,
) -> None:
    """The runs row at a run's end: its final columns and its case order (`keys`, the run's results in order); a
    run never begun is inserted, its keys its manifest. The case rows are the caller's business. `case_order`:
    the keys as JSON lists, when the caller has that text (made again, it was a third of a run's last write)."""
    order = case_order if case_order is not None else case_order_json(keys)
    if run_exists(conn, run_id):
        update_run(conn, run_id, columns, order)
    else:
        insert_run(conn, run_id, columns, unique_keys(keys), case_order=order)


def update_run(conn: Connection, run_id: str, columns: dict[str, Any], case_order: JSONText) -> None:
    from sqlalchemy import update

    where = runs_table.c.run_id == run_id
    conn.execute(update(runs_table).where(where).values(**columns, case_order=case_order))


def insert_case_rows(
    conn: Connection, run_id: str, keys: Sequence[ItemKey], rows_at: Callable[[int], CaseRows], *, fresh: bool
) -> int:
    """Insert the rows (`rows_at(i)` for `keys[i]`) of the keys not stored yet; return how many. `fresh`: the
    caller made these results and never stored them, so nothing is looked up first (the unique index still
    refuses a row stored meanwhile: IntegrityError)."""
    from sqlalchemy import insert

    if not keys:
        return 0
    stored = set() if fresh else recorded_keys(conn, run_id, keys)
    case_rows: list[dict[str, Any]] = []
    score_rows: list[dict[str, Any]] = []
    seen: set[ItemKey] = set()
    for index, key in enumerate(keys):
        if key in stored or key in seen:
            continue
        seen.add(key)
        row, scores = rows_at(index)
        case_rows.append(row)
        score_rows.extend(scores)
    if case_rows:
        conn.execute(insert(cases_table), case_rows)
    if score_rows:
        conn.execute(insert(scores_table), score_rows)
    return len(case_rows)


def store_case_rows(
    engine: Engine, run_id: str, keys: Sequence[ItemKey], rows_at: Callable[[int], CaseRows], *, fresh: bool
) -> int:
    """`insert_case_rows` in one transaction; return how many were new. If another writer raced a row in (a
    second process resuming the same run), one transaction per case, so exactly one row per key survives.
    GateInputError when the run is not stored."""
    from sqlalchemy.exc import IntegrityError

    try:
        with write_transaction(engine) as conn:
            require_run(conn, run_id)
            return insert_case_rows(conn, run_id, keys, rows_at, fresh=fresh)
    except IntegrityError:
        if len(keys) == 1 and not fresh:
            # Two writers raced on PostgreSQL: the other one's row won, which is exactly one row.
            with read_transaction(engine) as conn:
                if recorded_keys(conn, run_id, keys):
                    return 0
            raise

        def alone(index: int) -> Callable[[int], CaseRows]:
            return lambda _: rows_at(index)

        return sum(store_case_rows(engine, run_id, [key], alone(i), fresh=False) for i, key in enumerate(keys))


def stored_count(conn: Connection, run_id: str) -> int:
    from sqlalchemy import func, select

    return int(conn.execute(select(func.count()).where(cases_table.c.run_id == run_id)).scalar_one())


def recorded_keys(conn: Connection, run_id: str, keys: Sequence[ItemKey]) -> set[ItemKey]:
    from sqlalchemy import select, tuple_

    cc = cases_table.c
    query = select(cc.eval_set_id, cc.case_id, cc.repetition).where(cc.run_id == run_id)
    if len(keys) > KEYS_PER_LOOKUP * 10:
        # A large write (a whole run: finish_run, import) reads the run's keys once.
        return {(r.eval_set_id, r.case_id, r.repetition) for r in conn.execute(query)}
    # A writer's batch checks just its keys through the unique index, in chunks: reading every stored key
    # of the run for each batch made a run's writes quadratic in its size.
    found: set[ItemKey] = set()
    for start in range(0, len(keys), KEYS_PER_LOOKUP):
        chunk = [tuple(k) for k in keys[start : start + KEYS_PER_LOOKUP]]
        in_chunk = query.where(tuple_(cc.eval_set_id, cc.case_id, cc.repetition).in_(chunk))
        found.update((r.eval_set_id, r.case_id, r.repetition) for r in conn.execute(in_chunk))
    return found


def stored_run_json(conn: Connection, run_id: str) -> str | None:
    """The run JSON of the runs row `run_id`, as stored; None without that row."""
    from sqlalchemy import Text, cast, select

    found = conn.execute(select(cast(runs_table.c.run_json, Text)).where(runs_table.c.run_id == run_id)).first()
    return None if found is None else str(found[0])


def run_exists(conn: Connection, run_id: str) -> bool:
    from sqlalchemy import select

    return conn.execute(select(runs_table.c.run_id).where(runs_table.c.run_id == run_id)).first() is not None


def require_run(conn: Connection, run_id: str) -> None:
    if not run_exists(conn, run_id):
        raise unknown_run(conn, run_id)


def unknown_run(conn: Connection, run_id: str) -> GateInputError:
    from sqlalchemy import select

    similar = conn.execute(
        select(runs_table.c.run_id).where(runs_table.c.run_id.startswith(run_id[:6], autoescape=True)).limit(5)
    ).scalars()
    hint = ", ".join(similar)
    return GateInputError(
        f"run {run_id!r} is not in the history database" + (f" (similar ids: {hint})" if hint else "")
    )


def find_resumable(
    conn: Connection, commit: str | None, fingerprint: str, *, shard: tuple[int, int] | None = None
) -> str | None:
    """The newest unfinished (running, cancelled or failed) run with this commit, fingerprint and shard.

    `shard` = (index, count) of the shard about to run; None matches only unsharded runs, so shard 2 is never
    offered shard 1's run.
    """
    from sqlalchemy import select

    c = runs_table.c
    query = select(c.run_id).where(c.fingerprint == fingerprint, c.status != "complete")
    query = query.where(c.commit_sha.is_(None) if commit is None else c.commit_sha == commit)
    if shard is None:
        query = query.where(c.shard_count.is_(None))
    else:
        query = query.where(c.shard_index == shard[0], c.shard_count == shard[1])
    query = query.order_by(c.started_at.desc().nulls_last(), c.created_at.desc()).limit(1)
    return conn.execute(query).scalar_one_or_none()
