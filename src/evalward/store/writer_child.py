"""The history writer process's side (`python -m evalward.store.writer_child`, started by
`writer_process.HistoryProcess`): open the database named by the first frame, then store each frame, in order,
through the `store.writes` functions an in-process `Store` uses, one transaction each.

A module of its own so that its imports (SQLAlchemy, the schema, the writes) are at its top: the run's process
imports `writer_process` early, to start this one at once, and never imports SQLAlchemy. Neither pydantic nor
evalward's models load here.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import sys
import uuid
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

from sqlalchemy import event

from evalward.errors import EvalwardError, InfrastructureError
from evalward.store import writes
from evalward.store.engine import JSONText, read_transaction, rehearsal_transaction, write_transaction
from evalward.store.opening import open_engine
from evalward.store.row_shapes import CaseRows, case_columns, case_rows, now, unique_keys
from evalward.store.writer_process import (
    ANSWER,
    BEGIN,
    CASES,
    DONE,
    ERROR,
    ERRORS,
    FIND,
    FINISH,
    FRAME_HEADER,
    KEEP_EVAL_SETS,
    OPEN,
    READY,
    ItemKey,
    revived,
    unpack_parts,
    write_frame,
)

if TYPE_CHECKING:
    from sqlalchemy import Engine


class Requests:
    """The frames the run sends (`writer_process.write_frame`), read from the pipe's descriptor through a buffer of
    this class's own, so that the writer can tell whether another one is already waiting without blocking."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._buffer = bytearray()
        self._held: tuple[bytes, bytes] | None = None

    def frame(self) -> tuple[bytes, bytes] | None:
        """The next frame, or None at the end of the input (a frame cut short by a killed run included)."""
        if self._held is not None:
            held, self._held = self._held, None
            return held
        if not self._fill(FRAME_HEADER.size):
            return None
        kind, length = FRAME_HEADER.unpack_from(self._buffer)
        if not self._fill(FRAME_HEADER.size + length):
            return None
        payload = bytes(self._buffer[FRAME_HEADER.size : FRAME_HEADER.size + length])
        del self._buffer[: FRAME_HEADER.size + length]
        return kind, payload

    def waiting(self, within: float = 0.0) -> bool:
        """True when input is at hand, or comes within `within` seconds: buffered, or readable (the end of the
        input counts)."""
        return self._held is not None or bool(self._buffer) or bool(select.select([self._fd], [], [], within)[0])

    def unread(self, frame: tuple[bytes, bytes]) -> None:
        """Give `frame` back: the next `frame()` returns it."""
        assert self._held is None, "one frame at most is given back"
        self._held = frame

    def more_cases(self, run_id: bytes, limit: int) -> list[bytes]:
        """The results of the CASES frames of run `run_id` already arriving, up to about `limit` of them: a frame
        only partly in the pipe is read to its end, none not yet sent is waited for; the first other frame is given
        back."""
        parts: list[bytes] = []
        while len(parts) < limit and self.waiting():
            following = self.frame()
            if following is None:  # the end of the input: the next `frame()` says so again
                break
            kind, payload = following
            if kind == CASES:
                following_run, *results = unpack_parts(payload)
                if following_run == run_id:
                    parts.extend(results)
                    continue
            self.unread(following)
            break
        return parts

    def _fill(self, size: int) -> bool:
        while len(self._buffer) < size:
            chunk = os.read(self._fd, max(size - len(self._buffer), READ_CHUNK))
            if not chunk:
                return False
            self._buffer += chunk
        return True


READ_CHUNK = 1 << 16
CASES_PER_TRANSACTION = 1000
"""Most results one transaction stores when CASES frames queue up (each holds up to
`_pipeline.run.WRITE_BATCH_MAX`)."""


def serve(requests: Requests, replies: IO[bytes]) -> int:
    """The child: open the database named by the first frame, then store each frame, in order."""
    first = requests.frame()
    if first is None or first[0] != OPEN:
        return 2
    try:
        engine = open_engine(first[1].decode("utf-8") or None)
    except Exception as exc:  # a driver's connection error: reported as `open_history` reports it in-process
        reason = (
            exc if isinstance(exc, EvalwardError) else InfrastructureError(f"cannot open the history database: {exc}")
        )
        _report(replies, reason)
        return 1
    checkpoints = WalCheckpoints(engine)
    write_frame(replies, READY)
    begun_eval_sets: dict[str, str] = {}
    """A run's eval sets as its beginning stored them (JSON text), for its end to splice back in."""
    try:
        while True:
            if checkpoints.pending and not requests.waiting(within=IDLE_CHECKPOINT_WAIT_S):
                checkpoints.checkpoint()  # the run has nothing for this process now: its end finds a short log
            if (frame := requests.frame()) is None:
                break
            kind, payload = frame
            if kind == FIND:
                request = json.loads(payload)
                write_frame(replies, ANSWER, json.dumps(_find_resumable(engine, request)).encode("utf-8"))
                continue
            run_id_bytes, *parts = unpack_parts(payload)
            run_id = run_id_bytes.decode("utf-8")
            if kind == BEGIN:
                columns, plan, run_json = revived(json.loads(parts[0])), json.loads(parts[1]), parts[2]
                columns["run_json"] = JSONText(run_json.decode("utf-8"))
                with write_transaction(engine) as conn:
                    writes.begin_run(conn, run_id, columns, unique_keys(plan))
                # Read now, while the run's agents work: its end then splices the text in (`_finish`).
                begun_eval_sets[run_id] = _compact(json.loads(run_json)["eval_sets"])
                _rehearse_finish(engine, run_id, columns)
            elif kind == CASES:
                # Results already waiting join this transaction: a run's last wave sends them as they finish, a
                # few a frame, and a commit each (~1.5 ms) left this process behind the run, which waits for it.
                parts.extend(requests.more_cases(run_id_bytes, CASES_PER_TRANSACTION - len(parts)))
                _store_cases(engine, run_id, parts)
                checkpoints.wrote(sum(map(len, parts)), idle=not requests.waiting())
            elif kind == FINISH:
                columns, order, run_json = revived(json.loads(parts[0])), parts[1].decode("utf-8"), parts[2]
                keep_sets = parts[3:] == [KEEP_EVAL_SETS]
                columns["run_json"] = JSONText(run_json.decode("utf-8"))
                keys = [(str(e), str(c), int(r)) for e, c, r in json.loads(order)]
                _finish(
                    engine,
                    run_id,
                    columns,
                    keys,
                    case_order=JSONText(order),
                    keep_eval_sets=keep_sets,
                    begun=begun_eval_sets.get(run_id),
                )
                # The run's last frame: DONE once it is committed; the database is closed (SQLite checkpoints
                # its WAL into the file) while the run writes its reports, and the run's `close` waits for that.
                write_frame(replies, DONE)
                engine.dispose()
                return 0
    except Exception as exc:
        _report(replies, exc)
        return 1
    finally:
        engine.dispose()
    return 0


CHECKPOINT_BYTES = 4 << 20
"""Case JSON stored between two checkpoints of a SQLite history's write-ahead log (`WalCheckpoints`): about as
often as SQLite's own (every 1,000 pages), at a moment the run does not wait for."""
IDLE_CHECKPOINT_BYTES = 1 << 20
"""Case JSON stored since the last checkpoint that makes one worth its syncs when nothing else is waiting to be
stored. A lower mark checkpointed after nearly every batch of a fast run, whose next batch is on its way: ten times
the syncs (283 against 25 for 2,000 cases)."""
IDLE_CHECKPOINT_WAIT_S = 0.002
"""How long the writer waits for the run's next frame before it checkpoints whatever the log holds: a run whose
agents take their time sends a batch every `_pipeline.run.WRITE_WINDOW_S` or so, and the last connection's close
copies what the log still holds into the file while the run waits (~11 ms a megabyte here). A fast run's batches
come sooner than this, and checkpoint by size."""


class WalCheckpoints:
    """Checkpoints of a SQLite history's write-ahead log while the run goes on, by this process, whose CPU the run
    does not use: SQLite's own (every ~4 MB of log, by whichever commit crosses the line) fell now and then in a
    run's last commit, and the last connection's close copies what the log still holds into the file; the run
    waits for both. Checkpointing as results are committed (every 4 MB, or every megabyte when nothing else is
    waiting) leaves its end a short log. Nothing for PostgreSQL."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._pending = 0
        self._on = engine.dialect.name == "sqlite"
        if self._on:
            # Per connection: the pooled one (the migration's) now, any other one as it connects.
            event.listen(engine, "connect", lambda connection, _record: _no_auto_checkpoint(connection))
            self._raw(_no_auto_checkpoint)

    def wrote(self, size: int, *, idle: bool = False) -> None:
        """`size` more bytes were committed: checkpoint once `CHECKPOINT_BYTES` have gathered, or
        `IDLE_CHECKPOINT_BYTES` when nothing else is waiting to be stored (`idle`), so that its end finds a short
        log."""
        if not self._on:
            return
        self._pending += size
        if self._pending >= CHECKPOINT_BYTES or (idle and self._pending >= IDLE_CHECKPOINT_BYTES):
            self.checkpoint()

    @property
    def pending(self) -> int:
        """Bytes committed since the last checkpoint (0 for PostgreSQL)."""
        return self._pending

    def checkpoint(self) -> None:
        """Copy the log into the database file now."""
        self._pending = 0
        # PASSIVE: copies what no reader still needs, without waiting for readers (the run's own reader).
        self._raw(lambda connection: connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall())

    def _raw(self, use: Callable[[Any], object]) -> None:
        # The driver's connection, outside SQLAlchemy's transaction: a checkpoint cannot run inside one.
        raw = self._engine.raw_connection()
        try:
            use(raw.driver_connection)
        finally:
            raw.close()


def _no_auto_checkpoint(connection: Any) -> None:
    connection.execute("PRAGMA wal_autocheckpoint = 0")


def _store_cases(engine: Engine, run_id: str, parts: list[bytes]) -> None:
    """A CASES frame's results, in one transaction (`writes.store_case_rows`)."""
    at = now()
    texts = [part.decode("utf-8") for part in parts]
    read = [case_columns(json.loads(text)) for text in texts]

    def rows_at(index: int) -> CaseRows:
        columns, scores = read[index]
        return case_rows(run_id, columns, scores, JSONText(texts[index]), at)

    keys = [(c["eval_set_id"], c["case_id"], c["repetition"]) for c, _scores in read]
    writes.store_case_rows(engine, run_id, keys, rows_at, fresh=True)


def _find_resumable(engine: Engine, request: dict[str, Any]) -> str | None:
    shard = tuple(request["shard"]) if request["shard"] else None
    with read_transaction(engine) as conn:
        return writes.find_resumable(conn, request["commit"], request["fingerprint"], shard=shard)


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _with_eval_sets(run_json: str, eval_sets: str) -> str:
    """`run_json` with its `eval_sets` replaced by the JSON text `eval_sets`, spliced in as text: a large run's
    eval sets are megabytes, which decoding and encoding again cost its end ~10 ms a thousand cases."""
    placeholder = f"evalward-eval-sets-{uuid.uuid4().hex}"  # a string no run JSON holds
    document = json.loads(run_json)
    document["eval_sets"] = placeholder
    return _compact(document).replace(json.dumps(placeholder), eval_sets, 1)


def _finish(
    engine: Engine,
    run_id: str,
    columns: dict[str, Any],
    keys: list[ItemKey],
    *,
    case_order: JSONText | None = None,
    keep_eval_sets: bool,
    begun: str | None = None,
) -> None:
    """`Store.finish_run` of a run whose cases this process stored: a stored count short of its keys means
    results were lost, an InfrastructureError. `keep_eval_sets`: the run JSON sent leaves out the eval sets,
    and the row keeps those its beginning stored (`begun`, when this process stored that beginning, else read
    back from the row)."""
    with write_transaction(engine) as conn:
        if keep_eval_sets:
            if begun is None:
                stored = writes.stored_run_json(conn, run_id)
                if stored is None:
                    raise InfrastructureError(f"run {run_id} ended without the beginning that stored its eval sets")
                begun = _compact(json.loads(stored)["eval_sets"])
            columns["run_json"] = JSONText(_with_eval_sets(columns["run_json"].text, begun))
        writes.finish_run(conn, run_id, columns, keys, case_order=case_order)
        missing = len(keys) - writes.stored_count(conn, run_id)
        if missing > 0:
            raise InfrastructureError(f"run {run_id}: {missing} case results were not stored")


def _rehearse_finish(engine: Engine, run_id: str, columns: dict[str, Any]) -> None:
    """Run the statements of the run's end (`_finish`) on its beginning's row, and roll them back: SQLAlchemy
    compiles each statement on its first use in a process (~1.7 ms for these three here, of a 1,000-case run's
    ~4 ms end), and the run waits for its end, not for this moment, while its agents work."""
    with rehearsal_transaction(engine) as conn:
        writes.finish_run(conn, run_id, columns, [], case_order=JSONText("[]"))
        writes.stored_count(conn, run_id)


def _report(replies: IO[bytes], exc: Exception) -> None:
    kind = type(exc).__name__ if type(exc).__name__ in ERRORS else "InfrastructureError"
    message = (
        str(exc) if isinstance(exc, EvalwardError) else f"the history database failed: {type(exc).__name__}: {exc}"
    )
    with contextlib.suppress(OSError):  # the run is gone: nobody to tell
        write_frame(replies, ERROR, json.dumps({"kind": kind, "message": message}).encode("utf-8"))


if __name__ == "__main__":
    import signal

    # The terminal's Ctrl-C and CI's cancel reach the whole process group; the run decides how it ends.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    code = serve(Requests(sys.stdin.fileno()), sys.stdout.buffer)
    sys.stdout.flush()
    # The run waits for the end of this output (the database is closed by now), not for this process's exit.
    os.close(sys.stdout.fileno())
    os._exit(code)
