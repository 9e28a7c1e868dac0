"""`Store`: every read and write of the history database, in terms of the shared `RunResult` model.

Write protocol of a run (each step is one transaction, so a `kill -9` at any point loses at most the
case being written, never corrupts one):
1. `begin_run(run, planned)`: the run row (status `running`) and its manifest of planned
   (eval_set_id, case_id, repetition) items;
2. `record_case(run_id, case)` as each case × repetition completes: the case JSON plus queryable
   columns and per-metric scores. The UNIQUE (run_id, eval_set_id, case_id, repetition) constraint makes
   it idempotent: a second write of the same item returns False and changes nothing;
3. `finish_run(run)`: status, summary and finished_at.

`missing_items(run_id)` = planned − recorded, which is exactly what `evalward run --resume` runs.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from evalward.errors import GateInputError
from evalward.metrics.run_fold import RunFold
from evalward.model import CaseResult, CaseSummary, RunResult
from evalward.model.records import in_key_order, iter_record_keys, record_keys
from evalward.model.verdict import RecordedVerdict, Verdict
from evalward.redact import redact_model
from evalward.spill import OrderedView, RecordLog, split_json_object
from evalward.store import writes
from evalward.store.engine import read_transaction, write_transaction
from evalward.store.history import HistoryViews
from evalward.store.judge_replies import JudgeReplies
from evalward.store.merge import merge_stored_shards
from evalward.store.row_shapes import CaseRows, now
from evalward.store.rows import (
    ROWS_PER_READ,
    ItemKey,
    ScoreRow,
    case_order_json,
    rows_of_case,
    run_columns,
    unique_keys,
)
from evalward.store.schema import cases_table, gate_verdicts_table, plan_table, runs_table, scores_table

if TYPE_CHECKING:
    from sqlalchemy import Connection, Engine


class Store(HistoryViews):
    """The history database. Thread-safe (one connection per call); several processes may share it."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @property
    def url(self) -> str:
        return self.engine.url.render_as_string(hide_password=True)

    def close(self) -> None:
        self.engine.dispose()

    def judge_replies(self) -> JudgeReplies:
        """The judge reply cache kept in this database (`judge_cache` table)."""
        return JudgeReplies(self.engine)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- writing a run ---------------------------------------------------------------------------

    def begin_run(self, run: RunResult, planned: Iterable[tuple[str, str, int]]) -> None:
        """Insert the run (status `running`) with its manifest of planned items (and any cases it already has).

        Raises UsageError when a run with this id is already stored (resume it instead).
        """
        with write_transaction(self.engine) as conn:
            writes.begin_run(conn, run.run_id, run_columns(run, "running"), unique_keys(planned))
            self._insert_cases(conn, run.run_id, run.cases)

    def record_case(self, run_id: str, case: CaseResult) -> bool:
        """Store one finished case × repetition in one transaction.

        Returns True when written, False when (run_id, eval_set_id, case_id, repetition) was already stored
        (nothing changes then). Raises GateInputError when the run does not exist.
        """
        return self.record_cases(run_id, [case]) == 1

    def record_cases(
        self, run_id: str, cases: Sequence[CaseResult], encoded: Sequence[bytes] | None = None, *, fresh: bool = False
    ) -> int:
        """Store several finished case results in one transaction (a writer's batch); return how many were new.

        Same idempotence as `record_case`: results already stored are skipped. If another writer raced a row
        in, the batch falls back to one transaction per case, so exactly one row per key survives.

        `encoded[i]`, when given, is what `redact.redact_encoded_model(cases[i], spill.encode_record)` returned
        for it: the case already redacted and its JSON. The row stores that text as it is, so a case is neither
        checked for secrets nor serialised a second time (~130 µs of the writer's time per case).

        `fresh`: the caller ran these results itself and has not stored them (a run's writer): they are inserted
        without first asking which are stored. The unique index still refuses a result stored meanwhile (a
        second process resuming the same run), and the batch then falls back to one case at a time.
        """
        at = now()

        def rows_at(index: int) -> CaseRows:
            return rows_of_case(run_id, cases[index], at, None if encoded is None else encoded[index])

        return writes.store_case_rows(self.engine, run_id, record_keys(cases), rows_at, fresh=fresh)

    def finish_run(self, run: RunResult) -> None:
        """Store the run's final status, summary and finished_at, and any of its cases not stored yet.

        A run that was never begun is inserted whole (its cases become its manifest).
        """
        keys = list(iter_record_keys(run.cases))
        with write_transaction(self.engine) as conn:
            writes.finish_run(conn, run.run_id, run_columns(run, run.status), keys)
            # The run's rows are its own results (written as they finished), so as many rows as results means
            # all of them are stored (the usual end of a run whose writer kept up): a large run then neither
            # reads its keys back nor compares them. Fewer rows: the missing ones are found and written.
            if len(run.cases) <= 100 or writes.stored_count(conn, run.run_id) != len(run.cases):
                self._insert_cases(conn, run.run_id, run.cases)

    def import_run(self, run: RunResult) -> str:
        """Store a run read from `evalward export` / `run --json`; idempotent by run id.

        Importing a run that is already stored adds only the case results it lacks. Raises GateInputError
        when a stored run with the same id has another fingerprint (a different run under a reused id).
        """
        with write_transaction(self.engine) as conn:
            existing = conn.execute(
                runs_table.select().with_only_columns(runs_table.c.fingerprint).where(runs_table.c.run_id == run.run_id)
            ).scalar_one_or_none()
            if existing is None:
                self._insert_run(conn, run, run.status, unique_keys(c.key for c in run.cases))
            elif existing != run.fingerprint:
                raise GateInputError(
                    f"cannot import run {run.run_id!r}: a different run with this id is stored "
                    f"(fingerprint {existing[:12]} in the database, {run.fingerprint[:12]} in the file)"
                )
            self._insert_cases(conn, run.run_id, run.cases)
        return run.run_id

    def import_new_run(self, run: RunResult) -> bool:
        """`import_run` of a run whose id was not stored a moment ago (an upload): False, instead of raising,
        when another writer stored a run under that id first — a different run (GateInputError) or the same id
        inserted at the same time (IntegrityError)."""
        from sqlalchemy.exc import IntegrityError

        try:
            self.import_run(run)
        except (GateInputError, IntegrityError):
            return False
        return True

    def record_verdict(self, verdict: Verdict, *, source: str) -> None:
        """Keep the verdict that gated `verdict.current_run_id` (append-only; `source`: gate, ci, serve, upload)."""
        from sqlalchemy import insert

        with write_transaction(self.engine) as conn:
            writes.require_run(conn, verdict.current_run_id)
            conn.execute(
                insert(gate_verdicts_table).values(
                    run_id=verdict.current_run_id,
                    baseline_run_id=verdict.baseline.run_id if verdict.baseline else None,
                    outcome=verdict.outcome,
                    policy_digest=verdict.policy_digest,
                    source=source,
                    created_at=datetime.now(UTC),
                    verdict_json=redact_model(verdict).model_dump(mode="json"),
                )
            )

    def recorded_verdicts(self, run_id: str, *, limit: int | None = None) -> list[RecordedVerdict]:
        """The verdicts recorded for `run_id`, newest first; the newest `limit` of them when given (a verdict on a
        large run is large: a page that shows the newest reads only it)."""
        from sqlalchemy import Text, cast, select

        t = gate_verdicts_table.c
        with read_transaction(self.engine) as conn:
            # The JSON as text, parsed once by pydantic (not decoded to Python objects first, then validated).
            rows = conn.execute(
                select(t.source, t.created_at, cast(t.verdict_json, Text))
                .where(t.run_id == run_id)
                .order_by(t.created_at.desc(), t.id.desc())
                .limit(limit)
            ).all()
        return [
            RecordedVerdict(source=source, recorded_at=at, verdict=Verdict.model_validate_json(text))
            for source, at, text in rows
        ]

    # -- reading ----------------------------------------------------------------------------------

    def has_run(self, run_id: str) -> bool:
        with read_transaction(self.engine) as conn:
            return writes.run_exists(conn, run_id)

    def run_repository(self, run_id: str) -> tuple[bool, str | None]:
        """(whether `run_id` is stored, the repository of that run): one indexed row, not the run."""
        from sqlalchemy import select

        with read_transaction(self.engine) as conn:
            row = conn.execute(select(runs_table.c.repository).where(runs_table.c.run_id == run_id)).one_or_none()
        return (False, None) if row is None else (True, row[0])

    def load_run(self, run_id: str) -> RunResult:
        """The run rebuilt from its rows: the recorded run with every stored case result.

        Cases follow the order `finish_run` saw them in; cases recorded after that (or before any
        `finish_run`) follow in the order they were written. Raises GateInputError for an unknown id.

        The case results are read as a stream into a `RecordLog` (`evalward.spill`): past a few hundred they
        wait in a temporary file as the JSON text the database holds (each validated once on the way), so a
        run of 100,000 cases loads in the memory of its keys instead of gigabytes of objects.
        """
        from sqlalchemy import Text, cast, select

        with read_transaction(self.engine) as conn:
            row = conn.execute(
                select(
                    cast(runs_table.c.run_json, Text), cast(runs_table.c.case_order, Text), runs_table.c.status
                ).where(runs_table.c.run_id == run_id)
            ).one_or_none()
            if row is None:
                raise writes.unknown_run(conn, run_id)
            run_json, order_json, status = row
            position = {
                (str(e), str(c), int(r)): i for i, (e, c, r) in enumerate(json.loads(order_json or "null") or [])
            }
            cases: RecordLog[CaseResult] = RecordLog(CaseResult)
            sort_keys = array("q")
            stream = conn.execution_options(yield_per=ROWS_PER_READ).execute(
                select(
                    cases_table.c.eval_set_id,
                    cases_table.c.case_id,
                    cases_table.c.repetition,
                    cases_table.c.status,
                    cast(cases_table.c.case_json, Text),
                )
                .where(cases_table.c.run_id == run_id)
                .order_by(cases_table.c.id)
            )
            for eval_set_id, case_id, repetition, case_status, text in stream:
                key = (eval_set_id, case_id, repetition)
                case = CaseResult.model_validate_json(text)
                cases.append(case, key, case_status, encoded=text.encode("utf-8"))
                # Cases finish_run saw first, in its order; later ones after them, in the order written.
                sort_keys.append(position.get(key, len(position) + len(sort_keys)))
        del position
        stored = _StoredSummaries()  # a row written before case summaries were left out holds them
        data = split_json_object(run_json, {"case_summaries": stored.add})
        data["status"] = status
        data["cases"] = []
        order = array("q", sorted(range(len(sort_keys)), key=sort_keys.__getitem__))
        run = RunResult.model_validate(data)
        ordered = OrderedView(cases, order)
        # A run still running (or killed while it ran) had no summaries yet: none are made up for it.
        summaries = stored.log if len(stored.log) or status == "running" else _summaries_of(run, ordered)
        return run.model_copy(update={"cases": ordered, "case_summaries": summaries})

    def load_run_header(self, run_id: str) -> RunResult:
        """The recorded run without its case results (context, eval-set records, summary): cheap at any size.
        Raises GateInputError for an unknown id."""
        from sqlalchemy import select

        with read_transaction(self.engine) as conn:
            row = conn.execute(
                select(runs_table.c.run_json, runs_table.c.status).where(runs_table.c.run_id == run_id)
            ).one_or_none()
            if row is None:
                raise writes.unknown_run(conn, run_id)
        data = dict(row.run_json)
        data["status"] = row.status
        data["cases"] = []
        return RunResult.model_validate(data)

    def missing_items(self, run_id: str) -> list[tuple[str, str, int]]:
        """Planned items of the run with no stored result, sorted; what a resumed run must still do."""
        from sqlalchemy import and_, select

        with read_transaction(self.engine) as conn:
            writes.require_run(conn, run_id)
            joined = plan_table.outerjoin(
                cases_table,
                and_(
                    cases_table.c.run_id == plan_table.c.run_id,
                    cases_table.c.eval_set_id == plan_table.c.eval_set_id,
                    cases_table.c.case_id == plan_table.c.case_id,
                    cases_table.c.repetition == plan_table.c.repetition,
                ),
            )
            rows = conn.execute(
                select(plan_table.c.eval_set_id, plan_table.c.case_id, plan_table.c.repetition)
                .select_from(joined)
                .where(plan_table.c.run_id == run_id, cases_table.c.id.is_(None))
                .order_by(plan_table.c.eval_set_id, plan_table.c.case_id, plan_table.c.repetition)
            ).all()
        return [(r.eval_set_id, r.case_id, r.repetition) for r in rows]

    def planned_items(self, run_id: str) -> list[tuple[str, str, int]]:
        """The run's declared manifest, sorted."""
        from sqlalchemy import select

        with read_transaction(self.engine) as conn:
            writes.require_run(conn, run_id)
            rows = conn.execute(
                select(plan_table.c.eval_set_id, plan_table.c.case_id, plan_table.c.repetition)
                .where(plan_table.c.run_id == run_id)
                .order_by(plan_table.c.eval_set_id, plan_table.c.case_id, plan_table.c.repetition)
            ).all()
        return [(r.eval_set_id, r.case_id, r.repetition) for r in rows]

    def find_resumable(
        self, commit: str | None, fingerprint: str, *, shard: tuple[int, int] | None = None
    ) -> str | None:
        """The newest unfinished (running, cancelled or failed) run with this commit, fingerprint and shard
        (`writes.find_resumable`)."""
        with read_transaction(self.engine) as conn:
            return writes.find_resumable(conn, commit, fingerprint, shard=shard)

    def load_scores(self, run_id: str, metrics: Sequence[str] | None = None) -> list[ScoreRow]:
        """The run's case-level metric scores (optionally only `metrics`), without parsing case JSON.

        This is the cheap read the gate needs from a baseline: one indexed range scan.
        """
        from sqlalchemy import select

        s = scores_table.c
        query = select(s.eval_set_id, s.case_id, s.repetition, s.metric, s.score, s.status).where(s.run_id == run_id)
        if metrics is not None:
            query = query.where(s.metric.in_(list(metrics)))
        with read_transaction(self.engine) as conn:
            writes.require_run(conn, run_id)
            rows = conn.execute(query).all()
        return [
            ScoreRow(
                eval_set_id=r.eval_set_id,
                case_id=r.case_id,
                repetition=r.repetition,
                metric=r.metric,
                score=r.score,
                status=r.status,
            )
            for r in rows
        ]

    def export_runs(self, run_ids: Sequence[str] | None = None) -> list[RunResult]:
        """The runs (all stored runs, newest first, when `run_ids` is None) as full RunResults."""
        if run_ids is None:
            from sqlalchemy import select

            c = runs_table.c
            with read_transaction(self.engine) as conn:
                run_ids = list(
                    conn.execute(
                        select(c.run_id).order_by(c.started_at.desc().nulls_last(), c.created_at.desc())
                    ).scalars()
                )
        return [self.load_run(run_id) for run_id in run_ids]

    # -- shards -----------------------------------------------------------------------------------

    def merge_runs(
        self,
        run_ids: Sequence[str] | None = None,
        *,
        group_id: str | None = None,
        new_run_id: str,
        finalize: Callable[[RunResult], RunResult] | None = None,
    ) -> RunResult:
        """Combine the shards of one logical run into a new complete run, or fail closed (`store.merge`)."""
        return merge_stored_shards(self, run_ids, group_id=group_id, new_run_id=new_run_id, finalize=finalize)

    def insert_complete_run(self, run: RunResult, planned: list[ItemKey]) -> None:
        """Store a run made outside a writer (a merge of shards) whole: row (with its case order), manifest, cases."""
        with write_transaction(self.engine) as conn:
            self._insert_run(conn, run, "complete", planned)
            self._insert_cases(conn, run.run_id, run.cases)

    # -- internals --------------------------------------------------------------------------------

    def _insert_run(self, conn: Connection, run: RunResult, status: str, plan: list[ItemKey]) -> None:
        order = case_order_json(iter_record_keys(run.cases)) if status != "running" else None
        writes.insert_run(conn, run.run_id, run_columns(run, status), plan, case_order=order)

    def _insert_cases(self, conn: Connection, run_id: str, cases: Sequence[CaseResult]) -> int:
        """Insert the cases not stored yet (checked under the caller's write transaction); return how many.
        Only those are read (a run's cases may live in a temporary file, `evalward.spill`)."""
        at = now()
        return writes.insert_case_rows(
            conn, run_id, record_keys(cases), lambda index: rows_of_case(run_id, cases[index], at), fresh=False
        )


def _summaries_of(run: RunResult, cases: Sequence[CaseResult]) -> Sequence[CaseSummary]:
    """Each case's summary folded from its results (as the run folded them), in key order, into a record log:
    one pass over the results, one case held at a time."""
    summaries: RecordLog[CaseSummary] = RecordLog(CaseSummary)
    fold = RunFold(repetitions=run.repetitions, pass_rule=run.pass_rule)
    for summary in fold.add_in_key_order(in_key_order(cases)):
        summaries.append(summary, (summary.eval_set_id, summary.case_id), "passed" if summary.passed else "failed")
    return summaries


class _StoredSummaries:
    """A stored run's case summaries, read one JSON text at a time into a `RecordLog` (kept in a temporary file
    when many: the runs row holds one per case)."""

    def __init__(self) -> None:
        self.log: RecordLog[CaseSummary] = RecordLog(CaseSummary)

    def add(self, text: str) -> None:
        summary = CaseSummary.model_validate_json(text)
        status = "passed" if summary.passed else "failed"
        self.log.append(summary, (summary.eval_set_id, summary.case_id), status, encoded=text.encode("utf-8"))
