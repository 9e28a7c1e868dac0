"""The executor: turn order and history, failures as data, retries, timeouts, concurrency, rate limit,
cancellation, tracing under load and sharding. Nothing here asserts on wall-clock durations."""

from __future__ import annotations

import asyncio
import random
import time

import pytest
from tests.fakes.agents import FakeAgent
from tests.fakes.cases import make_case, make_set, many_cases

from evalward.errors import UsageError
from evalward.model import AgentOutput, AgentRequest, Usage
from evalward.runners import make_agent
from evalward.runners.agent_contract import AgentFailure
from evalward.runners.executor import (
    CaseRun,
    ExecutorOptions,
    RateLimiter,
    WorkItem,
    execute,
    plan_work,
)
from evalward.runners.sharding import select_shard

FAST = ExecutorOptions(concurrency=4, timeout_s=10, retry_backoff_s=0)


async def test_turns_run_in_order_with_openai_shaped_history() -> None:
    case = make_case(
        "c1",
        "weather in Paris?",
        "and tomorrow?",
        inputs=[{"tool_calls": [{"name": "get_weather", "args": {"city": "Paris"}}], "response": "Sunny."}, {}],
        state={"user": "ada"},
    )
    agent = FakeAgent()
    summary = await execute(plan_work([make_set(case)], repeat=1), agent, FAST)

    run = summary.completed[0]
    assert run.error is None
    assert [o.response for o in run.outputs] == ["Sunny.", "echo: and tomorrow?"]
    first, second = agent.requests
    assert (first.turn, second.turn) == (0, 1)
    assert first.history == []
    assert [m.model_dump(exclude_none=True) for m in second.history] == [
        {"role": "user", "content": "weather in Paris?"},
        {
            "role": "assistant",
            "tool_calls": [{"name": "get_weather", "args": {"city": "Paris"}, "id": "call_0_0", "status": "ok"}],
        },
        {"role": "tool", "content": "result of get_weather", "tool_call_id": "call_0_0", "name": "get_weather"},
        {"role": "assistant", "content": "Sunny."},
    ]
    assert first.session_id == second.session_id
    assert first.session_state == second.session_state == {"user": "ada"}
    assert len(run.turn_latencies_s) == 2
    assert run.attempts == 2


async def test_session_ids_differ_per_repetition_and_case() -> None:
    agent = FakeAgent()
    items = plan_work([make_set(make_case("a"), make_case("b"))], repeat=2)
    await execute(items, agent, FAST)
    assert sorted((r.case_id, r.repetition) for r in agent.requests) == [("a", 0), ("a", 1), ("b", 0), ("b", 1)]
    assert len({r.session_id for r in agent.requests}) == 4


async def test_a_failing_turn_stops_the_case_and_is_recorded() -> None:
    async def handler(request: AgentRequest) -> AgentOutput:
        if request.turn == 1:
            raise AgentFailure("malformed_output", "tool_calls[0].name: Field required")
        return AgentOutput(response="fine", usage=Usage(input_tokens=3), state={"step": request.turn})

    agent = FakeAgent(handler)
    summary = await execute(plan_work([make_set(make_case("c", "t0", "t1", "t2"))], 1), agent, FAST)

    run = summary.completed[0]
    assert [r.turn for r in agent.requests] == [0, 1]  # turn 2 never ran
    assert len(run.outputs) == 1
    assert run.error is not None
    assert (run.error.kind, run.error.turn, run.error.attempts) == ("malformed_output", 1, 1)
    assert run.error.message == "tool_calls[0].name: Field required"
    assert run.final_state == {"step": 0}
    assert run.usage == Usage(input_tokens=3)


async def test_usage_is_summed_and_final_state_is_the_last_outputs() -> None:
    async def handler(request: AgentRequest) -> AgentOutput:
        return AgentOutput(
            response="ok", usage=Usage(input_tokens=10, output_tokens=request.turn, cost_usd=0.5), state=request.turn
        )

    summary = await execute(plan_work([make_set(make_case("c", "a", "b", "c"))], 1), FakeAgent(handler), FAST)
    run = summary.completed[0]
    # input 10+10+10 = 30; output 0+1+2 = 3; cost 0.5*3 = 1.5
    assert run.usage == Usage(input_tokens=30, output_tokens=3, cost_usd=1.5)
    assert run.final_state == 2


def flaky_handler(fail_times: int, *, retryable: bool = True) -> tuple[FakeAgent, dict[str, int]]:
    calls: dict[str, int] = {}

    async def handler(request: AgentRequest) -> AgentOutput:
        calls[request.case_id] = calls.get(request.case_id, 0) + 1
        if calls[request.case_id] <= fail_times:
            raise AgentFailure("agent_error", f"busy #{calls[request.case_id]}", retryable=retryable)
        return AgentOutput(response="ok")

    return FakeAgent(handler), calls


async def test_retryable_failures_are_retried_until_success() -> None:
    agent, calls = flaky_handler(2)
    summary = await execute(plan_work([make_set(make_case("c"))], 1), agent, FAST)
    run = summary.completed[0]
    assert run.error is None
    assert calls == {"c": 3}  # 2 failures + 1 success, within max_retries=2
    assert run.attempts == 3


async def test_retries_are_bounded_by_max_retries() -> None:
    agent, calls = flaky_handler(5)
    summary = await execute(plan_work([make_set(make_case("c"))], 1), agent, FAST)
    run = summary.completed[0]
    assert calls == {"c": 3}  # 1 attempt + max_retries=2
    assert run.error is not None
    assert (run.error.kind, run.error.attempts, run.error.message) == ("agent_error", 3, "busy #3")


async def test_non_retryable_failures_are_not_retried() -> None:
    agent, calls = flaky_handler(1, retryable=False)
    summary = await execute(plan_work([make_set(make_case("c"))], 1), agent, FAST)
    assert calls == {"c": 1}
    assert summary.completed[0].error is not None


async def test_a_hanging_turn_times_out_and_other_cases_continue() -> None:
    async def handler(request: AgentRequest) -> AgentOutput:
        if request.case_id == "hangs":
            await asyncio.Event().wait()
        return AgentOutput(response="ok")

    options = ExecutorOptions(concurrency=2, timeout_s=0.05, retry_backoff_s=0)
    items = plan_work([make_set(make_case("hangs"), make_case("fine"))], 1)
    summary = await execute(items, FakeAgent(handler), options)
    by_case = {r.item.case.case_id: r for r in summary.completed}
    assert by_case["fine"].error is None
    error = by_case["hangs"].error
    assert error is not None
    assert (error.kind, error.turn, error.attempts) == ("timeout", 0, 1)
    assert error.message == "turn 0 did not finish within 0.05s"


async def test_an_answer_that_held_the_loop_past_the_limit_is_a_timeout() -> None:
    """A sync call run in place (`worker_threads`) cannot be interrupted: answered after the limit, it is a
    timeout all the same, as it would have been in a thread."""

    async def handler(request: AgentRequest) -> AgentOutput:
        if request.case_id == "holds":
            time.sleep(0.08)  # noqa: ASYNC251  # deliberately holds the loop: nothing it could cancel
        return AgentOutput(response="ok")

    options = ExecutorOptions(concurrency=1, timeout_s=0.05, retry_backoff_s=0)
    summary = await execute(
        plan_work([make_set(make_case("holds"), make_case("fine"))], 1), FakeAgent(handler), options
    )
    by_case = {r.item.case.case_id: r for r in summary.completed}
    assert by_case["fine"].error is None
    error = by_case["holds"].error
    assert error is not None and (error.kind, error.message) == ("timeout", "turn 0 did not finish within 0.05s")


async def test_a_runner_bug_becomes_a_crash_for_that_case() -> None:
    async def handler(request: AgentRequest) -> AgentOutput:
        raise KeyError("oops")

    summary = await execute(plan_work([make_set(make_case("c"))], 1), FakeAgent(handler), FAST)
    error = summary.completed[0].error
    assert error is not None
    assert (error.kind, error.message) == ("crash", "the runner failed: KeyError: 'oops'")


async def test_cases_really_run_concurrently() -> None:
    # Three cases must all be inside the agent at once to pass the barrier; a serial executor would hang
    # (and the outer wait_for would fail the test instead).
    barrier = asyncio.Barrier(3)

    async def handler(request: AgentRequest) -> AgentOutput:
        await barrier.wait()
        return AgentOutput(response="met")

    agent = FakeAgent(handler)
    items = plan_work([make_set(*many_cases(3))], 1)
    summary = await asyncio.wait_for(execute(items, agent, ExecutorOptions(concurrency=3)), 10)
    assert [r.outputs[0].response for r in summary.completed] == ["met"] * 3
    assert agent.peak_concurrency == 3


async def test_concurrency_is_a_limit_over_cases() -> None:
    async def handler(request: AgentRequest) -> AgentOutput:
        await asyncio.sleep(0.001)
        return AgentOutput(response="ok")

    agent = FakeAgent(handler)
    items = plan_work([make_set(*[make_case(f"c{i}", "a", "b") for i in range(12)])], 1)
    summary = await execute(items, agent, ExecutorOptions(concurrency=3))
    assert len(summary.completed) == 12
    assert agent.peak_concurrency == 3
    # Within a case, turn 1 never starts before turn 0 (per case, requests arrive in turn order).
    for case_id in {r.case_id for r in agent.requests}:
        assert [r.turn for r in agent.requests if r.case_id == case_id] == [0, 1]


async def test_rate_limiter_spaces_requests_by_reserved_slots() -> None:
    now = [100.0]
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    limiter = RateLimiter(2.0, clock=lambda: now[0], sleep=fake_sleep)
    for _ in range(4):
        await limiter.acquire()
    # 2/s → one slot every 0.5 s: the first goes at once, then waits of 0.5, 1.0, 1.5 from t=100.
    assert slept == [0.5, 1.0, 1.5]
    now[0] = 110.0  # long idle: no backlog, the next request goes at once
    await limiter.acquire()
    assert slept == [0.5, 1.0, 1.5]
    assert limiter.acquired == 5


async def test_every_turn_attempt_takes_a_rate_limit_token() -> None:
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    limiter = RateLimiter(10.0, clock=lambda: 0.0, sleep=fake_sleep)
    agent, calls = flaky_handler(1)  # every case fails once, then succeeds
    items = plan_work([make_set(make_case("a", "t0", "t1"), make_case("b"))], 1)
    await execute(items, agent, FAST, rate_limiter=limiter)
    # case a: 1 failed + 2 turns = 3 attempts; case b: 1 failed + 1 = 2 attempts → 5 tokens
    assert sum(calls.values()) == 5
    assert limiter.acquired == 5
    # the clock never moves, so the k-th token waits k/10 s: 0.1, 0.2, 0.3, 0.4
    assert slept == pytest.approx([0.1, 0.2, 0.3, 0.4])


async def test_callbacks_see_every_case_as_it_finishes() -> None:
    done: list[str] = []
    progress: list[tuple[int, int]] = []

    async def on_case_done(run: CaseRun) -> None:
        done.append(run.item.case.case_id)

    items = plan_work([make_set(*many_cases(3))], 1)
    agent = FakeAgent()
    summary = await execute(
        items, agent, FAST, on_case_done=on_case_done, on_progress=lambda d, t: progress.append((d, t))
    )
    assert sorted(done) == ["case-000", "case-001", "case-002"]
    assert progress == [(0, 3), (1, 3), (2, 3), (3, 3)]
    assert summary.cancelled is False
    assert summary.not_run == []
    assert agent.closed == 1


async def test_an_error_in_on_case_done_propagates_and_the_agent_is_closed() -> None:
    async def on_case_done(run: CaseRun) -> None:
        raise OSError("database is gone")

    agent = FakeAgent()
    with pytest.raises(OSError, match="database is gone"):
        await execute(plan_work([make_set(*many_cases(4))], 1), agent, FAST, on_case_done=on_case_done)
    assert agent.closed == 1


async def test_cancellation_keeps_finished_cases_and_reports_in_flight_as_not_run() -> None:
    blocked_started = asyncio.Event()

    async def handler(request: AgentRequest) -> AgentOutput:
        if request.case_id in {"case-002", "case-003"}:
            if request.case_id == "case-003":
                blocked_started.set()
            await asyncio.Event().wait()
        return AgentOutput(response="done")

    stored: list[str] = []

    async def on_case_done(run: CaseRun) -> None:
        stored.append(run.item.case.case_id)

    agent = FakeAgent(handler)
    items = plan_work([make_set(*many_cases(6))], 1)
    task = asyncio.create_task(execute(items, agent, ExecutorOptions(concurrency=2), on_case_done=on_case_done))
    # Workers take cases in order: 000 and 001 finish, then 002 and 003 block both workers.
    await asyncio.wait_for(blocked_started.wait(), 10)
    task.cancel()
    summary = await task

    assert summary.cancelled is True
    assert summary.finished == 2 and summary.completed == []  # handed to on_case_done, not kept
    assert sorted(stored) == ["case-000", "case-001"]
    assert sorted(i.case.case_id for i in summary.not_run) == ["case-002", "case-003", "case-004", "case-005"]
    assert agent.closed == 1


async def test_fifty_concurrent_traced_cases_keep_their_own_calls() -> None:
    agent = make_agent("tests.fakes.agents:traced")
    await agent.start()
    items = plan_work([make_set(*many_cases(50))], 1)
    summary = await execute(items, agent, ExecutorOptions(concurrency=50, timeout_s=30))

    assert len(summary.completed) == 50
    for run in summary.completed:
        case_id = run.item.case.case_id
        assert run.error is None, run.error
        output = run.outputs[0]
        assert output.response == f"traced {case_id}"
        assert sorted((c.name, c.args["case"] if c.args else None) for c in output.tool_calls) == [
            ("task_tool", case_id),
            ("task_tool", case_id),
            ("task_tool", case_id),
            ("thread_tool", case_id),
        ]
        assert sorted(c.args.get("n", -1) for c in output.tool_calls if c.args) == [-1, 0, 1, 2]
        assert output.agents == [f"root-{case_id}"]
        assert output.trajectory == [f"start-{case_id}", f"end-{case_id}"]
        assert output.usage == Usage(input_tokens=10, output_tokens=5)


# --- planning and sharding ----------------------------------------------------------------------------------


def sample_sets() -> list:
    return [make_set(*many_cases(10, prefix=f"s{s}"), eval_set_id=f"set{s}") for s in range(3)]


def keys(items: list[WorkItem]) -> set[tuple[str, str, int]]:
    return {i.key for i in items}


def test_plan_work_lists_sets_cases_and_repetitions_in_order() -> None:
    sets = [make_set(make_case("a"), make_case("b"), eval_set_id="x"), make_set(make_case("c"), eval_set_id="y")]
    assert [i.key for i in plan_work(sets, repeat=2)] == [
        ("x", "a", 0),
        ("x", "a", 1),
        ("x", "b", 0),
        ("x", "b", 1),
        ("y", "c", 0),
        ("y", "c", 1),
    ]


@pytest.mark.parametrize("count", [1, 2, 3, 7])
def test_shards_are_disjoint_complete_balanced_and_keep_repetitions_together(count: int) -> None:
    everything = plan_work(sample_sets(), repeat=2)
    shards = [plan_work(sample_sets(), repeat=2, shard=(k, count)) for k in range(1, count + 1)]

    union = set().union(*(keys(s) for s in shards))
    assert union == keys(everything)
    assert sum(len(s) for s in shards) == len(everything)  # disjoint: no item counted twice
    case_shard: dict[tuple[str, str], int] = {}
    for index, shard in enumerate(shards):
        for item in shard:
            assert case_shard.setdefault((item.eval_set.eval_set_id, item.case.case_id), index) == index
    # 30 cases dealt round-robin: every shard has floor(30/n) or ceil(30/n) cases
    sizes = [len({(i.eval_set.eval_set_id, i.case.case_id) for i in s}) for s in shards]
    assert max(sizes) - min(sizes) <= 1


def test_shard_membership_does_not_depend_on_input_order() -> None:
    items = plan_work(sample_sets(), repeat=1)
    shuffled = list(items)
    random.Random(4).shuffle(shuffled)
    for k in (1, 2, 3):
        assert keys(select_shard(items, (k, 3))) == keys(select_shard(shuffled, (k, 3)))


@pytest.mark.parametrize("shard", [(0, 2), (3, 2), (1, 0)])
def test_bad_shards_are_usage_errors(shard: tuple[int, int]) -> None:
    with pytest.raises(UsageError, match="--shard must be k/n"):
        plan_work(sample_sets(), repeat=1, shard=shard)
