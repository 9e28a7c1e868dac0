"""The history writer process (`store.writer_process`): `evalward run` stores through it what an in-process
`Store` stores, never imports SQLAlchemy itself, keeps the database URL off command lines, and fails the run
(exit 3, the reason named) when the writer dies."""

from __future__ import annotations

import ast
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from evalward.errors import InfrastructureError, UsageError
from evalward.model import CaseResult, EvalSetInfo, MetricResult, RunResult
from evalward.store import open_store
from evalward.store.row_shapes import case_order_json
from evalward.store.writer_process import HistoryProcess, pack_parts, unpack_parts

AGENT = """
import os, time
def run(request):
    time.sleep(float(os.environ.get("AGENT_SLEEP", "0")))
    query = request["query"]
    return {"response": f"answer to {query}", "tool_calls": [{"name": "look", "args": {"q": query}}]}
"""


def run_cli(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalward", *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def write_project(folder: Path, cases: int) -> Path:
    items = [
        {
            "id": f"c{i:03d}",
            "query": f"q{i}",
            "expect": {"response": f"answer to q{i}", "tool_calls": [{"name": "look", "args": {"q": f"q{i}"}}]},
        }
        for i in range(cases)
    ]
    path = folder / "set.eval.json"
    path.write_text(json.dumps({"evalward": 1, "eval_set_id": "set", "cases": items}), encoding="utf-8")
    (folder / "agent.py").write_text(AGENT, encoding="utf-8")
    return path


def test_a_run_stores_through_the_writer_what_the_store_reads_back(tmp_path: Path) -> None:
    eval_file = write_project(tmp_path, 250)  # more than one writer batch
    db = tmp_path / "h.db"
    report = tmp_path / "run.json"
    agent = f"{tmp_path / 'agent.py'}:run"
    args = ["run", str(eval_file), "--agent", agent, "--repeat", "2", "--db", f"sqlite:///{db}", "--json", str(report)]
    completed = run_cli([*args, "-q"], cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    printed = RunResult.model_validate_json(report.read_text(encoding="utf-8"))
    with open_store(f"sqlite:///{db}") as store:
        stored = store.load_run(printed.run_id)
        assert store.missing_items(printed.run_id) == []
    assert stored.status == "complete" and stored.passed is True
    assert [c.key for c in stored.cases] == [c.key for c in printed.cases]
    assert [c.model_dump() for c in stored.cases] == [c.model_dump() for c in printed.cases]
    assert stored.eval_sets == printed.eval_sets
    with sqlite3.connect(db) as conn:
        (scores,) = conn.execute("SELECT count(*) FROM metric_scores WHERE run_id = ?", (printed.run_id,)).fetchone()
        started = conn.execute("SELECT started_at FROM case_results LIMIT 1").fetchone()[0]
        (order,) = conn.execute("SELECT case_order FROM runs WHERE run_id = ?", (printed.run_id,)).fetchone()
    assert scores == 500 * len(printed.cases[0].metric_results)
    assert started is not None
    # The order the run sent is stored as it came: the very text the in-process store writes.
    assert order == case_order_json(c.key for c in printed.cases).text


def test_the_run_process_never_imports_sqlalchemy(tmp_path: Path) -> None:
    eval_file = write_project(tmp_path, 3)
    args = ["run", str(eval_file), "--agent", f"{tmp_path / 'agent.py'}:run", "--db", f"sqlite:///{tmp_path / 'h.db'}"]
    probe = (
        "import sys\nfrom evalward._cli.main import main\ntry:\n"
        f"    main({args!r})\nexcept SystemExit as exit:\n    code = exit.code\n"
        "print(repr((code, sorted(m for m in ('sqlalchemy', 'alembic') if m in sys.modules))), file=sys.stderr)\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path
    )
    assert ast.literal_eval(completed.stderr.strip().splitlines()[-1]) == (0, []), completed.stderr
    with sqlite3.connect(tmp_path / "h.db") as conn:
        assert conn.execute("SELECT count(*) FROM case_results").fetchone() == (3,)


def test_the_database_url_is_never_on_a_command_line(tmp_path: Path) -> None:
    history = HistoryProcess()
    try:
        history.open(f"sqlite:///{tmp_path}/h.db?password=hunter2-very-secret")
        # Read until the kernel shows it: on a loaded machine the file was once read empty (seen in CI).
        cmdline, deadline = b"", time.monotonic() + 10
        while not cmdline and time.monotonic() < deadline:
            cmdline = Path(f"/proc/{history._child.pid}/cmdline").read_bytes()
            if not cmdline:
                time.sleep(0.01)
        assert b"hunter2" not in cmdline and b"sqlite" not in cmdline
        assert b"evalward.store.writer_child" in cmdline
    finally:
        history.close()


def _run(run_id: str) -> RunResult:
    info = EvalSetInfo(eval_set_id="s", format="native", content_hash="h", case_hashes={"a": "x", "b": "y"})
    return RunResult(run_id=run_id, status="running", passed=False, repetitions=1, eval_sets=[info])


def _case(case_id: str) -> tuple[CaseResult, bytes]:
    case = CaseResult(
        eval_set_id="s",
        case_id=case_id,
        repetition=0,
        status="passed",
        metric_results=[MetricResult(name="m", score=1.0, status="passed")],
    )
    return case, case.model_dump_json().encode()


def test_a_taken_run_id_fails_the_next_write_with_the_stores_own_refusal(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/h.db"
    with open_store(url) as store:
        store.begin_run(_run("taken"), [("s", "a", 0)])
    history = HistoryProcess().open(url)
    try:
        history.begin_run(_run("taken"), [("s", "a", 0)])
        case, text = _case("a")
        with pytest.raises(UsageError, match="run 'taken' already exists"):
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:  # refused as soon as the child's answer is in
                history.record_cases("taken", [case], [text], fresh=True)
                time.sleep(0.05)
    finally:
        history.close()


def test_a_killed_writer_fails_the_run_with_its_reason(tmp_path: Path) -> None:
    history = HistoryProcess().open(f"sqlite:///{tmp_path}/h.db")
    try:
        history.begin_run(_run("r1"), [("s", "a", 0), ("s", "b", 0)])
        case, text = _case("a")
        history.record_cases("r1", [case], [text], fresh=True)
        os.kill(history._child.pid, signal.SIGKILL)
        history._child.wait()
        with pytest.raises(InfrastructureError, match="writer process stopped"):
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                history.record_cases("r1", [case], [text], fresh=True)
                time.sleep(0.05)
    finally:
        history.close()


def _recording(history: HistoryProcess, sent: list[tuple[bytes, bytes]]) -> HistoryProcess:
    """`history`, noting in `sent` each frame it sends."""
    send = history._send

    def noted(kind: bytes, payload: bytes, **options: Any) -> None:
        sent.append((kind, payload))
        send(kind, payload, **options)

    history._send = noted  # type: ignore[method-assign]
    return history


def test_a_runs_end_sends_its_eval_sets_only_when_its_beginning_did_not(tmp_path: Path) -> None:
    """The eval sets a run began with (a large run's are most of its row) are not sent again at its end: the
    row keeps the stored ones, and reads back as the in-process store writes it. A run resumed by another
    process sends its own."""
    url = f"sqlite:///{tmp_path}/h.db"
    sent: list[tuple[bytes, bytes]] = []
    run = _run("r3")
    case, text = _case("a")
    finished = run.model_copy(update={"status": "complete", "passed": True, "cases": [case], "warnings": ["w"]})
    history = _recording(HistoryProcess().open(url), sent)
    try:
        history.begin_run(run, [("s", "a", 0)])
        history.record_cases("r3", [case], [text], fresh=True)
        history.finish_run(finished)
    finally:
        history.close()
    finish = unpack_parts(next(payload for kind, payload in sent if kind == b"Z"))
    assert json.loads(finish[3])["eval_sets"] == [] and finish[4:] == [b"keep-eval-sets"]
    with open_store(url) as store:
        stored = store.load_run("r3")
    assert stored.eval_sets == run.eval_sets and stored.warnings == ["w"] and stored.status == "complete"

    sent.clear()
    resumed = _recording(HistoryProcess().open(url), sent)
    try:
        resumed.finish_run(finished.model_copy(update={"warnings": ["w", "again"]}))
    finally:
        resumed.close()
    finish = unpack_parts(next(payload for kind, payload in sent if kind == b"Z"))
    assert len(finish) == 4 and json.loads(finish[3])["eval_sets"] == [s.model_dump(mode="json") for s in run.eval_sets]
    with open_store(url) as store:
        assert store.load_run("r3").eval_sets == run.eval_sets


def test_the_end_splices_the_eval_sets_its_beginning_read_as_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer keeps the eval sets a run began with as JSON text and splices them into the run's end: the
    row is what decoding and encoding the stored row gave (the fallback for a run another process began), and
    the end does not read the row back when this process stored its beginning."""
    from evalward.store import writer_child, writes
    from evalward.store.engine import write_transaction
    from evalward.store.opening import open_engine
    from evalward.store.rows import run_columns

    eval_sets = [{"eval_set_id": "s", "title": 'say "hi" \\ é', "nested": {"eval_sets": [1, {"k": None}]}}]
    ended = {"run_id": "r4", "eval_sets": [], "warnings": ["evalward-eval-sets-0"], "status": "complete"}
    spliced = writer_child._with_eval_sets(json.dumps(ended), writer_child._compact(eval_sets))
    assert json.loads(spliced) == {**ended, "eval_sets": eval_sets}

    run = _run("r4")
    finished = run.model_copy(update={"status": "complete", "passed": True, "warnings": ['say "hi" é']})
    engine = open_engine(f"sqlite:///{tmp_path}/h.db")
    try:
        with write_transaction(engine) as conn:
            writes.begin_run(conn, "r4", run_columns(run, "running"), [])
        ending = run_columns(finished, "complete", eval_sets=False)
        writer_child._finish(engine, "r4", dict(ending), [], keep_eval_sets=True)  # reads the row back
        with write_transaction(engine) as conn:
            read_back = writes.stored_run_json(conn, "r4")

        def no_reading(*args: object) -> None:
            raise AssertionError("the end read the row back")

        begun = writer_child._compact([info.model_dump(mode="json") for info in run.eval_sets])
        monkeypatch.setattr(writes, "stored_run_json", no_reading)
        writer_child._finish(engine, "r4", dict(ending), [], keep_eval_sets=True, begun=begun)
        monkeypatch.undo()
        with write_transaction(engine) as conn:
            assert writes.stored_run_json(conn, "r4") == read_back
        assert json.loads(str(read_back))["eval_sets"] == json.loads(begun)
    finally:
        engine.dispose()


def test_a_finished_run_missing_results_is_an_error_not_a_complete_run(tmp_path: Path) -> None:
    """The child counts what it stored against the run's keys: a result lost on the way fails the run."""
    url = f"sqlite:///{tmp_path}/h.db"
    history = HistoryProcess().open(url)
    run = _run("r2")
    case, text = _case("a")
    try:
        history.begin_run(run, [("s", "a", 0), ("s", "b", 0)])
        history.record_cases("r2", [case], [text], fresh=True)
        lost = _case("b")[0]  # finished but never sent
        with pytest.raises(InfrastructureError, match="1 case results were not stored"):
            history.finish_run(run.model_copy(update={"status": "complete", "cases": [case, lost]}))
    finally:
        history.close()
    with open_store(url) as store:
        assert store.load_run("r2").status == "running"  # the finish rolled back: resumable


def test_a_run_killed_with_sigkill_leaves_what_its_writer_was_sent_and_resumes(tmp_path: Path) -> None:
    eval_file = write_project(tmp_path, 40)
    db = tmp_path / "h.db"
    env = {**os.environ, "AGENT_SLEEP": "0.05", "EVALWARD_DB": f"sqlite:///{db}"}
    args = [
        sys.executable,
        "-m",
        "evalward",
        "run",
        str(eval_file),
        "--agent",
        f"{tmp_path / 'agent.py'}:run",
        "-j",
        "1",
    ]
    process = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    stored = 0
    while time.monotonic() < deadline and stored < 5:
        time.sleep(0.1)
        if db.exists():
            with sqlite3.connect(db) as conn:
                try:
                    stored = conn.execute("SELECT count(*) FROM case_results").fetchone()[0]
                except sqlite3.OperationalError:  # the schema is being made
                    stored = 0
    process.kill()
    process.communicate(timeout=60)  # the writer ends with its input: nothing holds the output open
    with sqlite3.connect(db) as conn:
        (run_id, status) = conn.execute("SELECT run_id, status FROM runs").fetchone()
    assert status == "running"
    resumed = run_cli(
        ["run", str(eval_file), "--agent", f"{tmp_path / 'agent.py'}:run", "--resume", run_id, "-q"],
        cwd=tmp_path,
        env={"EVALWARD_DB": f"sqlite:///{db}"},
    )
    assert resumed.returncode == 0, resumed.stderr
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT case_id, repetition FROM case_results WHERE run_id = ?", (run_id,)).fetchall()
        (status,) = conn.execute("SELECT status FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    assert sorted(rows) == sorted({(f"c{i:03d}", 0) for i in range(40)}) and status == "complete"


def test_parts_survive_packing() -> None:
    parts = [b"", b"run", "é".encode(), b"x" * 70_000]
    assert unpack_parts(pack_parts(parts)) == parts


def test_a_console_run_refused_for_bad_input_creates_no_database_and_leaves_no_writer(tmp_path: Path) -> None:
    """`evalward run` from a console starts its writer before anything loads (`_cli.main`); a run refused for
    its input closes it unused: no database is made and nothing keeps the command's output open."""
    (tmp_path / "agent.py").write_text(AGENT, encoding="utf-8")
    started = time.monotonic()
    completed = run_cli(
        ["run", str(tmp_path / "missing.eval.json"), "--agent", f"{tmp_path / 'agent.py'}:run"],
        cwd=tmp_path,
        env={"EVALWARD_DB": f"sqlite:///{tmp_path}/h.db"},
    )
    assert completed.returncode == 2, completed.stderr
    assert "missing.eval.json" in completed.stderr
    assert not (tmp_path / "h.db").exists()
    assert time.monotonic() - started < 60


@pytest.mark.parametrize(
    ("args", "env", "expected"),
    [
        (["run", "x.json", "--agent", "a.py:f"], {}, True),
        (["run", "x.json", "--no-history"], {}, False),
        (["run", "--help"], {}, False),
        (["run", "x.json"], {"EVALWARD_NO_HISTORY": "true"}, False),
        (["ci"], {}, False),
        ([], {}, False),
    ],
)
def test_the_writer_is_prestarted_only_for_runs_that_store(
    args: list[str], env: dict[str, str], expected: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalward._cli.entry import stores_a_run

    monkeypatch.delenv("EVALWARD_NO_HISTORY", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert stores_a_run(args) is expected


def test_a_results_columns_read_from_its_json_equal_those_read_from_the_model() -> None:
    """The writer process reads the columns from the JSON it stores; the run's process from the model."""
    import json
    from datetime import UTC, datetime

    from evalward.model import CaseError, Usage
    from evalward.store.row_shapes import case_columns

    case = _case("a")[0].model_copy(
        update={
            "status": "error",
            "must_pass": True,
            "latency_s": 1.5,
            "usage": Usage(input_tokens=10, output_tokens=4, cost_usd=0.002),
            "error": CaseError(kind="timeout", message="slow"),
            "started_at": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
            "finished_at": datetime(2026, 1, 2, 3, 4, 7, tzinfo=UTC),
        }
    )
    from_model = case_columns(case)
    assert case_columns(json.loads(case.model_dump_json())) == from_model
    assert from_model[0]["error_kind"] == "timeout" and from_model[0]["cost_usd"] == 0.002
    assert from_model[0]["started_at"] == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_the_writer_checkpoints_its_log_as_results_come_and_never_in_a_commit(tmp_path: Path) -> None:
    """SQLite's own checkpoint (every ~4 MB of log) could fall in a run's last commit, which the run waits for;
    the writer turns it off and checkpoints as it stores results (every 4 MB, every megabyte when idle)."""
    from sqlalchemy import text

    from evalward.store import writer_child
    from evalward.store.engine import write_transaction
    from evalward.store.opening import open_engine

    path = tmp_path / "h.db"
    engine = open_engine(f"sqlite:///{path}")
    try:
        checkpoints = writer_child.WalCheckpoints(engine)
        with write_transaction(engine) as conn:
            conn.execute(text("CREATE TABLE scratch (payload BLOB)"))
        before = path.stat().st_size
        chunk = os.urandom(1 << 20)
        for _ in range(6):  # 6 MB of log: SQLite alone would have checkpointed at ~4 MB
            with write_transaction(engine) as conn:
                conn.execute(text("INSERT INTO scratch VALUES (:p)"), {"p": chunk})
        assert path.stat().st_size == before  # all of it still in the log
        checkpoints.wrote(writer_child.CHECKPOINT_BYTES - 1)
        assert path.stat().st_size == before  # not enough yet
        checkpoints.wrote(1)
        assert path.stat().st_size >= 6 << 20  # copied into the file
        with write_transaction(engine) as conn:
            conn.execute(text("INSERT INTO scratch VALUES (:p)"), {"p": chunk})
        grown = path.stat().st_size
        checkpoints.wrote(writer_child.IDLE_CHECKPOINT_BYTES - 1, idle=True)
        assert path.stat().st_size == grown  # idle, but too little to be worth a sync
        checkpoints.wrote(1, idle=True)
        assert path.stat().st_size >= grown + (1 << 20)  # idle: what was stored is copied at once
    finally:
        engine.dispose()


def test_an_agent_that_cannot_start_leaves_a_failed_run_begun_then_ended(tmp_path: Path) -> None:
    """The writer stores a run's beginning in its own time; a run ended before any case (its agent did not start)
    is still stored whole: begun with its plan, then failed."""
    eval_file = write_project(tmp_path, 3)
    db = tmp_path / "h.db"
    args = ["run", str(eval_file), "--agent", f"{tmp_path / 'agent.py'}:nope", "--db", f"sqlite:///{db}", "-q"]
    completed = run_cli(args, cwd=tmp_path)
    assert completed.returncode == 3, completed.stderr
    assert "the agent could not start" in completed.stderr
    with open_store(f"sqlite:///{db}") as store:
        [row] = store.list_runs()
        assert (row.status, row.planned, row.recorded) == ("failed", 3, 0)


def test_the_writer_reads_whole_frames_and_knows_when_another_is_waiting() -> None:
    import threading

    from evalward.store.writer_child import Requests
    from evalward.store.writer_process import write_frame

    read_end, write_end = os.pipe()
    sending = os.fdopen(write_end, "wb")
    requests = Requests(read_end)
    assert not requests.waiting()
    write_frame(sending, b"C", b"x" * 10)
    write_frame(sending, b"Z", b"")
    assert requests.frame() == (b"C", b"x" * 10)
    assert requests.waiting()  # the next one is buffered or in the pipe
    assert requests.frame() == (b"Z", b"")
    assert not requests.waiting()
    big = os.urandom(200_000)  # more than the pipe holds: read in several pieces
    sender = threading.Thread(target=write_frame, args=(sending, b"C", big))
    sender.start()
    assert requests.frame() == (b"C", big)
    sender.join()
    assert not requests.waiting()
    sending.write(b"C\x00\x00\x00\x09half")  # a frame cut short by a killed run
    sending.close()
    assert requests.waiting()  # the end of the input is at hand too
    assert requests.frame() is None
    os.close(read_end)


def _frames_of_a_run(url: str, run_id: str, cases: int) -> list[tuple[bytes, bytes]]:
    """The frames a run of `cases` one-case batches sends its writer after OPEN (recorded from a real one storing
    at `url`)."""
    sent: list[tuple[bytes, bytes]] = []
    run = _run(run_id)
    results = [_case(f"c{i}") for i in range(cases)]
    history = _recording(HistoryProcess().open(url), sent)
    try:
        history.begin_run(run, [("s", case.case_id, 0) for case, _ in results])
        for case, text in results:
            history.record_cases(run_id, [case], [text], fresh=True)
        history.finish_run(run.model_copy(update={"status": "complete", "cases": [case for case, _ in results]}))
    finally:
        history.close()
    return sent


class _ServedInThread:
    """`writer_child.serve` in a thread of this process, fed through a pipe: a test decides when each frame
    arrives, and sees what the writer did in between (its transactions, its checkpoints)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import threading

        from evalward.store import writer_child

        self.stored_batches: list[int] = []
        self.checkpoints: list[int] = []  # the bytes each checkpoint copied
        store_cases, checkpoint = writer_child._store_cases, writer_child.WalCheckpoints.checkpoint

        def noted_store(engine: Any, run_id: str, parts: list[bytes]) -> None:
            self.stored_batches.append(len(parts))
            store_cases(engine, run_id, parts)

        def noted_checkpoint(checkpoints: writer_child.WalCheckpoints) -> None:
            self.checkpoints.append(checkpoints.pending)
            checkpoint(checkpoints)

        monkeypatch.setattr(writer_child, "_store_cases", noted_store)
        monkeypatch.setattr(writer_child.WalCheckpoints, "checkpoint", noted_checkpoint)
        read_end, write_end = os.pipe()
        replies_read, replies_write = os.pipe()
        self.sending = os.fdopen(write_end, "wb")
        self._replies = os.fdopen(replies_read, "rb")
        self._replies_sink = os.fdopen(replies_write, "wb")
        self.code: int | None = None

        def serve() -> None:
            self.code = writer_child.serve(writer_child.Requests(read_end), self._replies_sink)
            self._replies_sink.close()
            os.close(read_end)

        self._thread = threading.Thread(target=serve, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def send(self, frames: list[tuple[bytes, bytes]]) -> None:
        from evalward.store.writer_process import write_frame

        for kind, payload in frames:
            write_frame(self.sending, kind, payload)

    def finish(self) -> list[bytes]:
        """End the input, wait for the writer; the kinds of the frames it answered with."""
        from evalward.store.writer_process import read_frame

        self.sending.close()
        self._thread.join(timeout=60)
        kinds = []
        while (frame := read_frame(self._replies)) is not None:
            kinds.append(frame[0])
        self._replies.close()
        return kinds


def test_results_waiting_for_the_writer_are_stored_in_one_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run's last wave sends its results as they finish, a few a frame: the frames that are already waiting when
    the writer comes to them share one transaction (a commit each left the writer behind the run at its end), and
    nothing is checkpointed while more is waiting. Another run's frame, or the run's end, is not taken in."""
    frames = _frames_of_a_run(f"sqlite:///{tmp_path}/recorded.db", "r5", 30)
    url = f"sqlite:///{tmp_path}/h.db"
    kinds = [kind for kind, _ in frames]
    assert kinds == [b"B", *[b"C"] * 30, b"Z"]
    begin_other, cases_of_other, _ = _frames_of_a_run(f"sqlite:///{tmp_path}/other.db", "r6", 1)
    served = _ServedInThread(monkeypatch)
    # Everything is in the pipe before the writer reads a frame: 30 frames of r5 with one of r6 among them, r5's end.
    served.send([(b"O", url.encode()), begin_other, *frames[:16], cases_of_other, *frames[16:]])
    served.start()
    assert served.finish() == [b"R", b"D"] and served.code == 0
    assert served.stored_batches == [15, 1, 15]  # r5's first frame and the 14 behind it; r6's; the rest of r5's
    assert served.checkpoints == []  # the run's end was always waiting
    with open_store(url) as store:
        stored = store.load_run("r5")
        assert stored.status == "complete" and [c.case_id for c in stored.cases] == [f"c{i}" for i in range(30)]
        assert [c.case_id for c in store.load_run("r6").cases] == ["c0"]


def test_an_idle_writer_checkpoints_what_it_stored_before_the_run_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the run's agents work and nothing is waiting to be stored, the writer copies its log into the file, so
    that the run's end (the last connection's close) finds a short log; then the run ends as before."""
    frames = _frames_of_a_run(f"sqlite:///{tmp_path}/recorded.db", "r7", 20)
    db = tmp_path / "h.db"
    served = _ServedInThread(monkeypatch)
    served.send([(b"O", f"sqlite:///{db}".encode()), *frames[:-1]])
    served.start()
    deadline = time.monotonic() + 30
    while not served.checkpoints and time.monotonic() < deadline:
        time.sleep(0.01)
    assert served.checkpoints and served.checkpoints[0] > 0  # done while the run's end had not come
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        assert conn.execute("SELECT count(*) FROM case_results").fetchone() == (20,)
    served.send(frames[-1:])
    assert served.finish() == [b"R", b"D"] and served.code == 0
    with open_store(f"sqlite:///{db}") as store:
        stored = store.load_run("r7")
    assert stored.status == "complete" and len(stored.cases) == 20


def test_the_results_joining_a_transaction_stop_at_its_limit_and_at_a_frame_cut_short() -> None:
    from evalward.store.writer_child import Requests
    from evalward.store.writer_process import write_frame

    read_end, write_end = os.pipe()
    sending = os.fdopen(write_end, "wb")
    requests = Requests(read_end)
    for batch in ([b"a", b"b"], [b"c"], [b"d", b"e"]):
        write_frame(sending, b"C", pack_parts([b"r", *batch]))
    assert requests.more_cases(b"r", 2) == [b"a", b"b"]  # enough: the next frame stays for the next transaction
    assert requests.more_cases(b"r", 1000) == [b"c", b"d", b"e"]
    assert requests.more_cases(b"r", 1000) == []  # nothing waiting: nothing waited for
    write_frame(sending, b"C", pack_parts([b"r", b"f"]))
    sending.write(b"C\x00\x00\x00\x09half")  # a run killed while it sent a frame
    sending.close()
    assert requests.more_cases(b"r", 1000) == [b"f"]
    assert requests.frame() is None
    os.close(read_end)


def test_a_run_that_ends_after_its_beginning_keeps_the_beginnings_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer rehearses the run's end right after its beginning (its statements compiled while the agents
    work) and rolls it back: a run killed then leaves the row its beginning stored, nothing of an end."""
    begin, *_ = _frames_of_a_run(f"sqlite:///{tmp_path}/recorded.db", "r8", 3)
    db = tmp_path / "h.db"
    served = _ServedInThread(monkeypatch)
    served.send([(b"O", f"sqlite:///{db}".encode()), begin])
    served.start()
    assert served.finish() == [b"R"] and served.code == 0  # the input ended: the run was killed
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        row = conn.execute("SELECT status, case_order, passed, finished_at, planned_count FROM runs").fetchall()
    assert row == [("running", "null", None, None, 3)]  # JSON null: no case order yet
