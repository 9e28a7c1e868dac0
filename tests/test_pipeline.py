"""The pipeline's own bookkeeping: summaries built while the run is going equal those built afterwards."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.cases import make_case, make_set

from evalward._pipeline import EmptyAnswers, RunOptions, prepare, run_blocking
from evalward.metrics.aggregate import summarize_run
from evalward.model import AgentOutput, AgentRequest, AgentTarget
from evalward.runners.executor import WorkItem
from evalward.testing import evaluate


class AlternatingAgent:
    """Right on even-numbered cases, wrong tool on odd ones; repetition-dependent answers on case 1."""

    def __init__(self) -> None:
        self.calls = 0

    @property
    def target(self) -> AgentTarget:
        return AgentTarget(kind="python", target="tests.test_pipeline:AlternatingAgent", config_hash="")

    async def start(self) -> None:
        return None

    async def run_turn(self, request: AgentRequest) -> AgentOutput:
        self.calls += 1
        await asyncio.sleep(0)
        number = int(request.case_id.split("-")[1])
        tool = "lookup" if number % 2 == 0 or self.calls % 3 == 0 else "refund"
        return AgentOutput.model_validate(
            {"response": f"order {number} shipped", "tool_calls": [{"name": tool, "args": {"id": number}}]}
        )

    async def aclose(self) -> None:
        return None


def test_case_summaries_built_during_the_run_match_a_summary_of_the_stored_results(tmp_path: Path) -> None:
    cases = [
        {
            "eval_id": f"case-{i}",
            "conversation": [
                {
                    "user_content": {"parts": [{"text": f"where is order {i}?"}]},
                    "final_response": {"parts": [{"text": f"order {i} shipped"}]},
                    "intermediate_data": {"tool_uses": [{"name": "lookup", "args": {"id": i}}]},
                }
            ],
        }
        for i in range(7)
    ]
    path = tmp_path / "orders.evalset.json"
    path.write_text(json.dumps({"eval_set_id": "orders", "eval_cases": cases}), encoding="utf-8")
    prepared = prepare(RunOptions(paths=[str(path)], agent="-", concurrency=3, repeat=3, timeout_s=30))

    run = run_blocking(prepared, agent=AlternatingAgent())

    assert len(run.cases) == 21 and len(run.case_summaries) == 7
    after = summarize_run(run.cases, repetitions=3, pass_rule=run.pass_rule)
    assert run.case_summaries == after.case_summaries
    assert run.summary == after.summary
    assert {c.passes for c in run.case_summaries} - {0, 3}  # some cases are flaky: the summaries carry counts


MULTIVERSE = Path(__file__).parent / "loaders" / "fixtures" / "benchmarks" / "multiverse_math.eval.json"


def test_a_langchain_benchmarks_agent_is_scored_on_its_steps_and_output() -> None:
    """The benchmark's agent contract, answered as an AgentExecutor would: steps are (action, observation) pairs."""
    plans: dict[str, tuple[str, list[str]]] = {
        "Add 2 and 3": ("6.2", ["add"]),
        "Multiply the result of (3 + 4) by 2, then negate it": ("-18", ["add", "multiply", "negate"]),
        "What is the sine of pi over two plus the cosine of zero?": ("1.1", ["cos", "pi", "divide", "sin", "add"]),
        "ecks": ("0", ["add"]),  # one step too many: its trajectory fails
    }

    def agent(request: dict[str, object]) -> dict[str, object]:
        inputs = request["inputs"]
        assert isinstance(inputs, dict)
        answer, tools = plans[inputs["question"]]
        steps = [({"tool": tool, "tool_input": {"x": 1}, "log": ""}, 1.0) for tool in tools]
        return {"question": inputs["question"], "output": answer, "intermediate_steps": steps}

    run = evaluate(agent, MULTIVERSE, num_runs=1, raise_on_failure=False)
    statuses = {case.case_id[-2:]: case.status for case in run.cases}
    assert statuses == {"01": "passed", "02": "passed", "03": "passed", "04": "failed"}
    rouge = {case.case_id[-2:]: case.metric("response_rouge1") for case in run.cases}
    assert {key: metric.score for key, metric in rouge.items() if metric is not None} == {
        "01": 1.0,
        "02": 1.0,
        "03": 1.0,
        "04": 1.0,
    }
    assert run.warnings == []


def test_answers_in_an_unknown_shape_warn_once_with_a_count(tmp_path: Path) -> None:
    def agent(request: dict[str, object]) -> dict[str, object]:
        if request["case_id"].endswith("04"):  # type: ignore[union-attr]
            return {"response": "0"}
        return {"answer": "6.2", "steps": ["add"]}

    run = evaluate(agent, MULTIVERSE, num_runs=2, raise_on_failure=False)
    assert run.warnings == [
        "agent output: 6 of 8 case runs had an answer with no response, tool calls or steps (scored as empty); "
        "evalward reads `response`/`tool_calls`, a string, or `output`/`intermediate_steps` (langchain); "
        "first: case '0b3e0f5c-5a1d-4c52-9d0e-2f1c8a7b6e01' turn 0, keys 'answer', 'steps'"
    ]
    assert len(run.warnings[0]) < 300  # the reports' warning lines are cut at 300 characters
    assert all(case.status != "error" for case in run.cases)  # a warning, not an error


def test_an_output_the_case_expects_is_not_an_empty_answer() -> None:
    case = make_case("route-1")
    case.turns[0].expected_outputs = {"route": "refunds"}
    eval_set = make_set(case)
    seen = EmptyAnswers()
    seen.see(WorkItem(eval_set, case, 0), [AgentOutput(outputs={"route": "refunds"})])
    seen.see(WorkItem(eval_set, case, 1), [AgentOutput(outputs={})])
    assert (seen.runs, seen.empty, seen.first) == (2, 1, "case 'route-1' turn 0, an empty object")


def test_results_wait_for_a_slow_history_writer_and_a_dead_one_stops_the_run() -> None:
    # The history queue is bounded: a finished result waits while it is full (memory stays flat when the agent
    # outruns the database), and when the writer dies instead of draining it, its error ends the wait.
    from evalward._pipeline.run import _hand_to_writer

    async def scenario() -> list[str]:
        seen: list[str] = []
        queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=1)
        release = asyncio.Event()

        async def slow_writer() -> None:
            await release.wait()
            while (item := await queue.get()) is not None:
                seen.append(item)

        writer = asyncio.create_task(slow_writer())
        await _hand_to_writer(queue, "a", writer)
        waiting = asyncio.create_task(_hand_to_writer(queue, "b", writer))
        await asyncio.sleep(0.01)
        assert not waiting.done() and queue.qsize() == 1  # full: "b" waits for the writer
        release.set()
        await waiting
        await _hand_to_writer(queue, None, writer)
        await writer

        failing_queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=1)
        failing_queue.put_nowait("c")

        async def dying_writer() -> None:
            await asyncio.sleep(0.01)
            raise RuntimeError("database is locked")

        dying = asyncio.create_task(dying_writer())
        try:
            await asyncio.wait_for(_hand_to_writer(failing_queue, "d", dying), timeout=5)
        except RuntimeError as exc:
            seen.append(f"error: {exc}")
        return seen

    assert asyncio.run(scenario()) == ["a", "b", "error: database is locked"]


def test_a_history_database_failing_mid_run_stops_the_run_with_its_error(tmp_path: Path) -> None:
    from evalward.store import open_store

    prepared = prepare(RunOptions(paths=[str(_orders(tmp_path, 40))], agent="-", concurrency=2, timeout_s=30))
    store = open_store(f"sqlite:///{tmp_path / 'history.db'}")

    def failing_write(run_id: str, results: Any, *_: Any, **__: Any) -> None:
        raise RuntimeError("disk I/O error")

    store.record_cases = failing_write  # type: ignore[method-assign]
    try:
        with pytest.raises(RuntimeError, match="disk I/O error"):
            run_blocking(prepared, agent=AlternatingAgent(), store=store)
    finally:
        store.close()


def test_an_unreadable_reference_trajectory_is_reported_at_its_turn(tmp_path: Path) -> None:
    """Before anything runs, `reference_messages` the step metrics cannot read is bad input at its turn: the file,
    the turn's line, its JSON path and the case id; a readable one beside it is no problem."""
    from evalward.errors import EvalFileError

    (tmp_path / "set.eval.yaml").write_text(
        "evalward: 1\n"
        "eval_set_id: refs\n"
        "cases:\n"
        "  - id: good_reference\n"
        "    query: Who recorded it?\n"
        "    reference_messages: [{role: assistant, content: Pink Floyd.}]\n"
        "  - id: bad_reference\n"
        "    turns:\n"
        "      - query: hi\n"
        "      - query: Who recorded it?\n"
        "        reference_messages:\n"
        "          - {role: assistant, content: Pink Floyd.}\n"
        "          - {role: user, content: thanks}\n",
        encoding="utf-8",
    )
    options = RunOptions(paths=[str(tmp_path / "set.eval.yaml")], agent="unused.py:agent")
    with pytest.raises(EvalFileError) as raised:
        prepare(options)
    [problem] = raised.value.problems
    assert (problem.path, problem.line, problem.case_id) == (str(tmp_path / "set.eval.yaml"), 10, "bad_reference")
    assert problem.json_path == "$.cases[1].turns[1]"
    assert "reference_messages[1]: nothing may follow the final assistant answer" in problem.message


class StaggeredAgent(AlternatingAgent):
    """Answers case i after (i + 1) × `step` seconds, and notes when each call began."""

    def __init__(self, step: float) -> None:
        super().__init__()
        self.step = step
        self.began: list[float] = []

    async def run_turn(self, request: AgentRequest) -> AgentOutput:
        self.began.append(asyncio.get_running_loop().time())
        await asyncio.sleep(self.step * (int(request.case_id.split("-")[1]) + 1))
        return await super().run_turn(request)


def _orders(tmp_path: Path, count: int) -> Path:
    cases = [
        {
            "eval_id": f"case-{i}",
            "conversation": [
                {
                    "user_content": {"parts": [{"text": f"where is order {i}?"}]},
                    "final_response": {"parts": [{"text": f"order {i} shipped"}]},
                }
            ],
        }
        for i in range(count)
    ]
    path = tmp_path / "orders.evalset.json"
    path.write_text(json.dumps({"eval_set_id": "orders", "eval_cases": cases}), encoding="utf-8")
    return path


def test_the_last_wave_of_a_run_is_stored_as_it_finishes_not_after_its_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once every case left is running, each result goes to the history as soon as the writer is free: the run's
    end then waits for the last one alone, not for a window's worth."""
    from evalward._pipeline import run as pipeline_run
    from evalward.store import open_store

    monkeypatch.setattr(pipeline_run, "WRITE_WINDOW_S", 30.0)  # a window the run would visibly wait for
    prepared = prepare(RunOptions(paths=[str(_orders(tmp_path, 5))], agent="-", concurrency=5, timeout_s=30))
    store = open_store(f"sqlite:///{tmp_path / 'history.db'}")
    written: list[list[str]] = []
    record = store.record_cases

    def recording(run_id: str, cases: Any, *args: Any, **kwargs: Any) -> int:
        written.append([case.case_id for case in cases])
        return record(run_id, cases, *args, **kwargs)

    store.record_cases = recording  # type: ignore[method-assign]
    try:
        began = time.monotonic()
        run_blocking(prepared, agent=StaggeredAgent(0.05), store=store)
        assert time.monotonic() - began < 10.0  # not the 30 s window
        assert len(written) >= 4 and sorted(c for batch in written for c in batch) == [f"case-{i}" for i in range(5)]
        assert store.missing_items(store.list_runs()[0].run_id) == []
    finally:
        store.close()


def test_the_first_history_row_waits_for_the_agents_first_calls(tmp_path: Path) -> None:
    """Making a run's first row holds the GIL for its whole length (its eval sets): every first call goes out
    before it is made."""
    from evalward.store.writer_process import HistoryProcess

    prepared = prepare(RunOptions(paths=[str(_orders(tmp_path, 6))], agent="-", concurrency=3, timeout_s=30))
    history = HistoryProcess().open(f"sqlite:///{tmp_path / 'history.db'}")
    agent = StaggeredAgent(0.01)
    begun: list[int] = []
    begin = history.begin_run

    def noting(*args: Any, **kwargs: Any) -> None:
        begun.append(len(agent.began))
        begin(*args, **kwargs)

    history.begin_run = noting  # type: ignore[method-assign]
    try:
        run = run_blocking(prepared, agent=agent, store=history)
    finally:
        history.close()
    assert begun == [3]  # after the first wave's three calls, before any later one
    assert run.status == "complete" and len(run.cases) == 6
