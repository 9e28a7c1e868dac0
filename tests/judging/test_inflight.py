"""Identical judge requests in flight are sent once (`judging.inflight`), through the real `openai` client
against the fake server: a run's count, a shared failure, cancelled waiters, samples, `--no-judge-cache`.

Where timing matters the fake holds its reply until the test has seen every caller waiting
(`Judging.waiting`), so the counts below do not depend on how fast this machine is.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.judging.scored import judge_case

from evalward.judging.cache import MemoryJudgeCache
from evalward.judging.inflight import SingleFlight
from evalward.judging.judge_config import JudgeConfig
from evalward.judging.judged_case import Judging
from evalward.model import AgentOutput, CaseResult, EvalCase, Invocation, MetricSpec

QUESTION = "How many songs do you have by James Brown?"
REFERENCE = "We have 20 songs by James Brown"
CORRECTNESS = MetricSpec(name="answer_correctness", threshold=1.0)
RIGHT = [AgentOutput(response="There are 20 James Brown songs in the store.")]


class Held:
    """A responder that holds every reply until `release()` (or 30 s, so a broken test cannot hang)."""

    def __init__(self, reply: Callable[[dict[str, Any]], Reply]) -> None:
        self.reply = reply
        self.released = threading.Event()

    def __call__(self, body: dict[str, Any]) -> Reply:
        self.released.wait(30)
        return self.reply(body)

    def release(self) -> None:
        self.released.set()


def grade(is_correct: bool) -> Reply:
    return Reply.json({"reasoning": f"the student says {is_correct}", "is_correct": is_correct})


def case(number: int = 0) -> EvalCase:
    return EvalCase(case_id=f"case-{number}", turns=[Invocation(query=QUESTION, expected_response=REFERENCE)])


def judging_for(fake: FakeOpenAI, store: MemoryJudgeCache | None = None, **config: Any) -> Judging:
    return Judging(
        JudgeConfig(model="judge-model", base_url=fake.base_url, **config),
        cache=store,
        environ={"OPENAI_API_KEY": "sk-secret"},
    )


async def until(condition: Callable[[], bool], timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for the judge's callers"
        await asyncio.sleep(0.005)


def judged(results: list[CaseResult], metric: str = "answer_correctness") -> list[tuple[Any, ...]]:
    out = []
    for result in results:
        found = result.metric(metric)
        assert found is not None
        out.append((found.score, found.status, found.explanation))
    return out


# --- a run ----------------------------------------------------------------------------------------------------


def test_400_cases_sharing_2_judge_prompts_send_2_requests(tmp_path: Path) -> None:
    """The issue's run: 400 judged cases, 2 distinct judge prompts, 1 sample, 20 cases at a time. Every case's
    score is the judge's verdict on its own prompt."""
    questions = [("How many songs by James Brown?", REFERENCE), ("Who recorded Wish You Were Here?", "Pink Floyd")]
    cases = [
        {"id": f"c{i:03d}", "query": questions[i % 2][0], "expect": {"response": questions[i % 2][1]}}
        for i in range(400)
    ]
    eval_file = tmp_path / "shared.json"
    eval_file.write_text(
        json.dumps(
            {"evalward": 1, "eval_set_id": "shared", "metrics": [{"name": "answer_correctness", "threshold": 1.0}]}
            | {"cases": cases}
        ),
        encoding="utf-8",
    )
    agent = tmp_path / "agent.py"
    # Right about James Brown, wrong about Pink Floyd: the two prompts get different verdicts.
    agent.write_text(
        "def run(request):\n"
        "    return 'We have 20 songs by James Brown' if 'James' in request['query'] else 'It was Nirvana'\n",
        encoding="utf-8",
    )

    def grader(body: dict[str, Any]) -> Reply:
        time.sleep(0.05)  # a judge takes a while: later cases finish while the first requests are in flight
        student = body["messages"][1]["content"].split("STUDENT RESPONSE: ")[1]
        return grade("20 songs" in student)

    with FakeOpenAI(models=["judge-model"]) as fake:
        fake.responder = grader
        environment = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "EVALWARD_"))}
        command = [sys.executable, "-m", "evalward", "run", str(eval_file), "--agent", f"{agent}:run"]
        completed = subprocess.run(
            [*command, "--judge-model", "judge-model", "-j", "20", "--json", str(tmp_path / "run.json")],
            cwd=tmp_path,
            env={**environment, "OPENAI_BASE_URL": fake.base_url, "EVALWARD_DB": f"sqlite:///{tmp_path}/h.db"},
            capture_output=True,
            text=True,
            timeout=300,
        )
        requests = len(fake.completions())

    assert completed.returncode == 1, completed.stdout + completed.stderr  # the Pink Floyd cases fail
    assert requests == 2
    summary = re.search(r"judge: 400 replies \((\d+) cached, (\d+) shared\), 2 requests", completed.stdout)
    assert summary is not None, completed.stdout
    assert int(summary[1]) + int(summary[2]) == 398
    run = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    scores = {
        c["case_id"]: next(m["score"] for m in c["metric_results"] if m["name"] == "answer_correctness")
        for c in run["cases"]
    }
    assert scores == {f"c{i:03d}": 1.0 if i % 2 == 0 else 0.0 for i in range(400)}


# --- failures and cancellation ----------------------------------------------------------------------------------


async def test_a_failed_shared_request_fails_every_waiter_and_is_not_cached(fake_openai: FakeOpenAI) -> None:
    held = Held(lambda body: Reply.error(422, "the judge is unwell"))  # 422: not retried by the openai client
    fake_openai.responder = held
    cache = MemoryJudgeCache()
    judging = judging_for(fake_openai, cache)
    tasks = [asyncio.create_task(judge_case(case(n), [CORRECTNESS], RIGHT, judging)) for n in range(5)]
    await until(lambda: judging.waiting == 5)
    held.release()
    results = await asyncio.gather(*tasks)

    assert len(fake_openai.completions()) == 1
    verdicts = judged(results)
    assert len(set(verdicts)) == 1  # one error, word for word, for every waiter
    score, status, explanation = verdicts[0]
    assert (score, status) == (None, "error")
    assert "answered HTTP 422 for model 'judge-model': the judge is unwell" in explanation
    assert all(r.error is not None and r.error.kind == "judge_error" for r in results)
    assert cache.entries == {}
    assert judging.waiting == 0

    # The failure was not remembered: the same question later is asked again, and answered.
    fake_openai.responder = lambda body: grade(True)
    again = await judge_case(case(), [CORRECTNESS], RIGHT, judging)
    await judging.aclose()
    assert len(fake_openai.completions()) == 2
    assert judged([again])[0][:2] == (1.0, "passed")
    assert len(cache.entries) == 1


async def test_a_cancelled_waiter_leaves_the_request_to_the_others(fake_openai: FakeOpenAI) -> None:
    held = Held(lambda body: grade(True))
    fake_openai.responder = held
    judging = judging_for(fake_openai, MemoryJudgeCache())
    tasks = [asyncio.create_task(judge_case(case(n), [CORRECTNESS], RIGHT, judging)) for n in range(3)]
    await until(lambda: judging.waiting == 3)
    tasks[0].cancel()  # the case whose ask started the request
    await until(lambda: judging.waiting == 2)
    held.release()
    results = await asyncio.gather(*tasks[1:])
    with pytest.raises(asyncio.CancelledError):
        await tasks[0]
    await judging.aclose()

    assert len(fake_openai.completions()) == 1
    assert [v[:2] for v in judged(results)] == [(1.0, "passed"), (1.0, "passed")]
    assert judging.usage.describe().startswith("judge: 3 replies (0 cached, 2 shared), 1 requests")


async def test_a_flight_every_caller_left_is_cancelled_and_forgotten() -> None:
    """SingleFlight alone: the starter leaving does not stop the flight; the last caller leaving does, and the
    next caller starts a new one."""
    flights: SingleFlight[str] = SingleFlight()
    gate = asyncio.Event()
    started: list[int] = []
    ended: list[str] = []

    async def ask(value: str) -> str:
        started.append(1)
        try:
            await gate.wait()
        except asyncio.CancelledError:
            ended.append("cancelled")
            raise
        ended.append("answered")
        return value

    first = asyncio.create_task(flights.run("k", lambda: ask("one")))
    second = asyncio.create_task(flights.run("k", lambda: ask("unused")))
    await until(lambda: flights.waiting() == 2)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    assert ended == []  # the starter left; the flight goes on for the second caller
    gate.set()
    assert await second == ("one", True)
    assert (len(started), ended) == (1, ["answered"])

    gate.clear()
    lone = asyncio.create_task(flights.run("k", lambda: ask("two")))
    await until(lambda: flights.waiting() == 1)
    lone.cancel()
    with pytest.raises(asyncio.CancelledError):
        await lone
    await until(lambda: ended == ["answered", "cancelled"])  # nobody waited any more: the flight was cancelled
    gate.set()
    assert await flights.run("k", lambda: ask("three")) == ("three", False)
    assert len(started) == 3


# --- samples and options ----------------------------------------------------------------------------------------


async def test_each_sample_is_its_own_request_shared_by_the_cases(fake_openai: FakeOpenAI) -> None:
    """final_response_match_v2 asks 5 samples (5 cache keys): 3 cases with one prompt send 5 requests, not 1
    and not 15, and every case folds the same 5 verdicts."""
    verdicts = iter([True, False, True, True, False])
    lock = threading.Lock()

    def next_verdict(body: dict[str, Any]) -> Reply:
        with lock:
            return grade(next(verdicts))

    held = Held(next_verdict)
    fake_openai.responder = held
    judging = judging_for(fake_openai, MemoryJudgeCache())
    spec = MetricSpec(name="final_response_match_v2", threshold=0.5)
    tasks = [asyncio.create_task(judge_case(case(n), [spec], RIGHT, judging)) for n in range(3)]
    await until(lambda: judging.waiting == 15)
    held.release()
    results = await asyncio.gather(*tasks)
    await judging.aclose()

    assert len(fake_openai.completions()) == 5
    samples = {tuple(sorted(s["value"] for s in r.metric_results[0].details["samples"])) for r in results}
    assert samples == {(0.0, 0.0, 1.0, 1.0, 1.0)}
    # hand calculation: 3 VALID of 5 > 5/2 -> VALID -> 1.0 >= 0.5
    assert [v[:2] for v in judged(results, "final_response_match_v2")] == [(1.0, "passed")] * 3
    assert (judging.usage.completions, judging.usage.shared) == (5, 10)


async def test_without_the_cache_identical_requests_are_all_sent(fake_openai: FakeOpenAI) -> None:
    """`--no-judge-cache` asks afresh: cases with one prompt get a reply each, even when asked at the same time."""

    def slow(body: dict[str, Any]) -> Reply:
        time.sleep(0.2)
        return grade(True)

    fake_openai.responder = slow
    judging = judging_for(fake_openai, MemoryJudgeCache(), cache=False)
    results = await asyncio.gather(*(judge_case(case(n), [CORRECTNESS], RIGHT, judging) for n in range(3)))
    await judging.aclose()
    assert len(fake_openai.completions()) == 3
    assert [v[:2] for v in judged(results)] == [(1.0, "passed")] * 3
    assert judging.usage.shared == 0
