"""The history database written by a process of its own: `evalward run` hands each finished result to it.

Why a process: a run's own work (the agent's answers, scoring, redaction) is Python under one GIL; the
database's (importing SQLAlchemy, migrating, building and sending rows) was ~0.2 ms a case and ~0.1 s of
start-up on the same core, a third of a model-free run's time. In a process of its own it takes the other
core, and the run's process never imports SQLAlchemy at all (issue #33).

`HistoryProcess` is the run's side: the `Store` methods a run calls (`begin_run`, `record_cases`,
`finish_run`, `find_resumable`), sent as frames over the child's stdin; reads a run needs beyond those
(resuming a run, the judge cache) go to a `Store` the run's process opens itself once the child has
migrated the database (`HistoryProcess.reader`). The child (`writer_child.serve`, `python -m
evalward.store.writer_child`) opens the database, then runs each frame through the very `Store` methods
an in-process run uses, in order, one transaction each as before.

What is lost when: a `kill -9` of the run leaves the child to store everything it was sent and exit at
the end of its stdin (the run stays `running`, so `--resume` finds it); a dead child fails the run at its
next write or at its end with the child's error (InfrastructureError, exit 3), as a failed database did.
The child ignores SIGINT and SIGTERM, which a terminal or CI sends to the whole process group: the run
decides how to end and says so in its last frame.

Frames, both ways: one byte of kind, four bytes of big-endian length, the payload. The database URL
travels in the first frame, not on the command line, where `ps` would show its password.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import queue
import struct
import subprocess
import sys
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, InvalidStateError
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from evalward import cpu_placement
from evalward.errors import EvalwardError, GateInputError, InfrastructureError, UsageError

if TYPE_CHECKING:
    from evalward.model import CaseResult, RunResult
    from evalward.store.judge_replies import JudgeReplies
    from evalward.store.repository import Store

ItemKey = tuple[str, str, int]

# To the child.
OPEN = b"O"  # payload: the database URL ("" for the default)
FIND = b"F"  # payload: JSON {"commit", "fingerprint", "shard"}; answered with ANSWER
BEGIN = b"B"  # parts: run id, its runs-row columns (JSON), its planned keys (JSON), its run JSON
CASES = b"C"  # parts: run id, then each case's redacted JSON
FINISH = b"Z"  # parts: run id, its runs-row columns, its case keys in order (JSON lists: stored as the row's case
# order), its run JSON[, KEEP_EVAL_SETS]; answered with DONE
KEEP_EVAL_SETS = b"keep-eval-sets"
"""FINISH's last part when its run JSON leaves out the eval sets: the runs row keeps those BEGIN stored."""
# From the child.
READY = b"R"  # the database is open and migrated
ANSWER = b"A"  # payload: JSON, the answer to FIND
DONE = b"D"  # the run is finished and stored
ERROR = b"E"  # payload: JSON {"kind", "message"}; the child stores nothing after it

OUTBOX_FRAMES = 4
"""Frames queued for the writer process at most (a batch is up to `_pipeline.run.WRITE_BATCH_MAX` results)."""

FRAME_HEADER = struct.Struct(">cI")
"""A frame's kind (one byte) and its payload's length."""
_LENGTH = struct.Struct(">I")
ERRORS: dict[str, type[EvalwardError]] = {
    "UsageError": UsageError,
    "GateInputError": GateInputError,
    "InfrastructureError": InfrastructureError,
}


def write_frame(stream: IO[bytes], kind: bytes, payload: bytes = b"") -> None:
    stream.write(FRAME_HEADER.pack(kind, len(payload)))
    stream.write(payload)
    stream.flush()


def read_frame(stream: IO[bytes]) -> tuple[bytes, bytes] | None:
    """The next frame, or None at the end of the stream (a frame cut short by a dead writer included)."""
    header = stream.read(FRAME_HEADER.size)
    if len(header) < FRAME_HEADER.size:
        return None
    kind, length = FRAME_HEADER.unpack(header)
    payload = stream.read(length)
    return None if len(payload) < length else (kind, payload)


def pack_parts(parts: Iterable[bytes]) -> bytes:
    return b"".join(_LENGTH.pack(len(part)) + part for part in parts)


def unpack_parts(payload: bytes) -> list[bytes]:
    parts, at = [], 0
    while at < len(payload):
        (length,) = _LENGTH.unpack_from(payload, at)
        at += _LENGTH.size
        parts.append(payload[at : at + length])
        at += length
    return parts


def _without_json(columns: dict[str, Any], name: str) -> tuple[dict[str, Any], bytes]:
    """`columns` without the JSONText column `name`, and that column's text (sent as a part of its own)."""
    rest = dict(columns)
    return rest, rest.pop(name).text.encode("utf-8")


def _columns_json(columns: object) -> bytes:
    return json.dumps(columns, default=_iso_datetime, separators=(",", ":")).encode("utf-8")


def _iso_datetime(value: object) -> str:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"a {type(value).__name__} in a row sent to the history writer process")


DATETIME_COLUMNS = ("started_at", "finished_at")
"""The columns of the rows sent (runs, case_results) that hold datetimes."""


def revived(columns: dict[str, Any]) -> dict[str, Any]:
    """`columns` as sent, with the datetimes they held made datetimes again."""
    for name in DATETIME_COLUMNS:
        if isinstance(columns.get(name), str):
            columns[name] = datetime.fromisoformat(columns[name])
    return columns


class HistoryProcess:
    """The history database behind a writer process (see the module docstring).

    Started before the run reads its eval files, so the child imports SQLAlchemy while they load; the child
    touches the database only once `open` names it (after the eval files proved valid: a run refused for bad
    input creates no database)."""

    def __init__(self) -> None:
        self.url: str | None = None
        package_root = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
        self._child = subprocess.Popen(
            [sys.executable, "-m", "evalward.store.writer_child"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        assert self._child.stdin is not None and self._child.stdout is not None
        # The writer on a CPU of its own and the run on the others, until `close` (`evalward.cpu_placement`).
        self._placement = cpu_placement.separate(self._child.pid)
        # Frames are written by a thread of their own, in the order queued: a large frame (a run's eval sets,
        # a batch) sent while the child is still importing or busy never blocks the run's event loop. The
        # queue is short, so a child that falls behind slows the run's writer thread, not its memory.
        self._outbox: queue.Queue[tuple[bytes, bytes] | None] = queue.Queue(maxsize=OUTBOX_FRAMES)
        self._sender = threading.Thread(
            target=self._send_all, args=(self._child.stdin,), name="evalward-history-frames", daemon=True
        )
        self._queueing = threading.Lock()  # a FIND and its place among the pending answers, in one step
        self._ready = threading.Event()
        self._done = threading.Event()
        self._output_ended = threading.Event()
        self._finished = False
        self._pending: list[Future[str | None]] = []  # FIND requests not answered yet, oldest first
        self._pending_lock = threading.Lock()
        self._error: EvalwardError | None = None
        self._reader_store: Store | None = None
        # The eval sets each run began here was sent with: a run's end sends its own only when they differ
        # (a 2,000-case run's are ~0.5 MB of JSON, made and sent twice before).
        self._begun_sets: dict[str, list[Any]] = {}
        self._listener = threading.Thread(
            target=self._listen, args=(self._child.stdout,), name="evalward-history-replies", daemon=True
        )
        self._listener.start()
        self._sender.start()

    def open(self, url: str | None) -> HistoryProcess:
        """Have the child open (and migrate) the database at `url` (`open_store`'s default when None)."""
        self.url = url
        self._send(OPEN, (url or "").encode("utf-8"))
        return self

    # -- the Store methods a run calls -----------------------------------------------------------------

    def find_resumable(
        self, commit: str | None, fingerprint: str, *, shard: tuple[int, int] | None = None
    ) -> Future[str | None]:
        """`Store.find_resumable`, answered by the child: the answer's future, so a run that only prints a note
        about it need not wait for the database before it starts."""
        answer: Future[str | None] = Future()
        request = {"commit": commit, "fingerprint": fingerprint, "shard": list(shard) if shard else None}
        self._send(FIND, json.dumps(request).encode("utf-8"), awaiting=answer)
        return answer

    def begin_run(self, run: RunResult, planned: Iterable[ItemKey]) -> None:
        """`Store.begin_run`, not waited for: a refusal (the run id is taken) fails the next write."""
        # start-up: `prestart` imports this module first thing, to start the child at once; the rows need pydantic.
        from evalward.store.rows import run_columns, unique_keys

        columns, run_json = _without_json(run_columns(run, "running"), "run_json")
        plan = json.dumps(unique_keys(planned)).encode()
        self._send(BEGIN, pack_parts([run.run_id.encode(), _columns_json(columns), plan, run_json]))
        self._begun_sets[run.run_id] = run.eval_sets

    def record_cases(
        self, run_id: str, cases: Sequence[CaseResult], encoded: Sequence[bytes] | None = None, *, fresh: bool = False
    ) -> int:
        """`Store.record_cases` of a run's fresh results: their JSON (`encoded`, redacted, as the run pipeline
        has it) is all that is sent; the child reads the columns from it (`row_shapes.case_columns`)."""
        if encoded is None or not fresh:
            raise ValueError("the history writer process takes a run's fresh results with their JSON")
        self._send(CASES, pack_parts([run_id.encode(), *encoded]))
        return len(cases)

    def finish_run(self, run: RunResult) -> None:
        """`Store.finish_run`: waits until the child has stored everything it was sent and the run's end."""
        from evalward.model.records import iter_record_keys  # start-up: as in `begin_run`
        from evalward.store.rows import run_columns  # start-up: as in `begin_run`

        keep_sets = self._begun_sets.pop(run.run_id, None) is run.eval_sets
        columns, run_json = _without_json(run_columns(run, run.status, eval_sets=not keep_sets), "run_json")
        keys = json.dumps(list(iter_record_keys(run.cases))).encode()
        parts = [run.run_id.encode(), _columns_json(columns), keys, run_json]
        self._send(FINISH, pack_parts([*parts, KEEP_EVAL_SETS] if keep_sets else parts))
        self._done.wait()  # set by DONE, and by the listener when the child reports an error or is gone
        if self._error is not None or not self._finished:
            raise self._failure()

    # -- reads the child does not answer ---------------------------------------------------------------

    def reader(self) -> Store:
        """A `Store` in this process for reads (resuming a run, the judge cache): opened once the child has
        migrated the database, so the two never migrate it at once."""
        if self._reader_store is None:
            while not self._ready.wait(0.1):
                if self._stopped():
                    raise self._failure()
            # start-up: opening a database imports SQLAlchemy, which a run's process otherwise never does.
            from evalward.store.opening import open_store

            self._reader_store = open_store(self.url)
        return self._reader_store

    def load_run(self, run_id: str) -> RunResult:
        return self.reader().load_run(run_id)

    def missing_items(self, run_id: str) -> list[ItemKey]:
        return self.reader().missing_items(run_id)

    def judge_replies(self) -> JudgeReplies:
        return self.reader().judge_replies()

    def close(self) -> None:
        """End the child's input and wait for it to store what it was sent and close the database: the end of its
        output, which it closes then (`writer_child`), not its exit (an interpreter freeing its memory, ~5 ms), which
        the listener reaps."""
        self._outbox.put(None)
        self._sender.join()
        self._output_ended.wait()
        cpu_placement.restore(self._placement)
        if self._reader_store is not None:
            self._reader_store.close()

    # -- internals -------------------------------------------------------------------------------------

    def _send(self, kind: bytes, payload: bytes, *, awaiting: Future[str | None] | None = None) -> None:
        """Queue one frame for the child (waiting while the queue is full); `awaiting`, the future its answer
        resolves, takes its place among the pending answers first (the child may answer as soon as the frame is
        sent), in the same step, so answers meet their requests in the order sent. Raises the child's failure
        once it has stopped."""
        with self._queueing:
            if awaiting is not None:
                with self._pending_lock:
                    self._pending.append(awaiting)
            while True:
                if self._stopped():
                    failure = self._failure()
                    if awaiting is not None:
                        _fail(awaiting, failure)
                    raise failure
                try:
                    self._outbox.put((kind, payload), timeout=0.1)
                    return
                except queue.Full:
                    continue

    def _send_all(self, requests: IO[bytes]) -> None:
        try:
            while (frame := self._outbox.get()) is not None:
                write_frame(requests, *frame)
        except (BrokenPipeError, ValueError):  # the child is gone: its last words (the listener) say why
            pass
        finally:
            with contextlib.suppress(OSError):
                requests.close()

    def _stopped(self) -> bool:
        return self._error is not None or self._output_ended.is_set() or not self._sender.is_alive()

    def _failure(self) -> EvalwardError:
        if self._error is not None:
            return self._error
        code = self._child.poll()
        return InfrastructureError(f"the history database's writer process stopped (exit code {code})")

    def _listen(self, replies: IO[bytes]) -> None:
        try:
            while (frame := read_frame(replies)) is not None:
                kind, payload = frame
                if kind == READY:
                    self._ready.set()
                elif kind == ANSWER:
                    with self._pending_lock:
                        answer = self._pending.pop(0)
                    found = json.loads(payload)
                    answer.set_result(None if found is None else str(found))
                elif kind == DONE:
                    self._finished = True
                    self._done.set()
                elif kind == ERROR:
                    reported = json.loads(payload)
                    self._error = ERRORS.get(reported["kind"], InfrastructureError)(reported["message"])
        finally:
            self._done.set()  # nothing more will come: a run waiting for its end learns why (`finish_run`)
            with self._pending_lock:
                unanswered, self._pending = self._pending, []
            for answer in unanswered:
                _fail(answer, self._failure())
            self._output_ended.set()
        self._child.wait()  # its exit, which `close` does not wait for
        replies.close()


def _fail(answer: Future[str | None], failure: EvalwardError) -> None:
    """Resolve `answer` with `failure` unless it is resolved already (the sender and the listener both may)."""
    with contextlib.suppress(InvalidStateError):
        answer.set_exception(failure)


_prestarted: HistoryProcess | None = None


def prestart() -> None:
    """Start the writer process at once, before the `run` command's own modules load: the writer's start-up
    (an interpreter, SQLAlchemy, the schema: ~0.2 s) then overlaps all of the run's, and a 1-case run ends
    when its own work does (`_cli.entry`, for `evalward run` started from a console). `take` hands it to the
    run; one never taken (a usage error, `--no-history` from a settings file) is closed at exit."""
    global _prestarted
    if _prestarted is None:
        _prestarted = HistoryProcess()
        atexit.register(discard_prestarted)


def take() -> HistoryProcess:
    """The prestarted writer process, or a new one."""
    global _prestarted
    history, _prestarted = _prestarted, None
    return history or HistoryProcess()


def discard_prestarted() -> None:
    global _prestarted
    history, _prestarted = _prestarted, None
    if history is not None:
        history.close()
