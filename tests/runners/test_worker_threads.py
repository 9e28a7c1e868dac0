"""WorkerThreads: the hand-off of a sync agent's calls to threads keeps asyncio.to_thread's semantics."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time

import pytest

from evalward.runners.worker_threads import WorkerThreads

CASE = contextvars.ContextVar("case", default="none")


async def test_a_call_returns_its_value_from_another_thread() -> None:
    threads = WorkerThreads("test")
    try:
        name = await threads.call(lambda: threading.current_thread().name)
        assert name.startswith("test-")
        assert await threads.call(sum, [1, 2, 3]) == 6
    finally:
        threads.close()


async def test_the_call_sees_the_callers_context_variables() -> None:
    threads = WorkerThreads("test")

    async def case(name: str) -> str:
        CASE.set(name)
        return await threads.call(CASE.get)

    try:
        seen = await asyncio.gather(*(case(f"case-{i}") for i in range(20)))
        assert seen == [f"case-{i}" for i in range(20)]
    finally:
        threads.close()


async def test_an_exception_is_raised_in_the_awaiting_task() -> None:
    threads = WorkerThreads("test")

    def fail() -> None:
        raise ValueError("no such order")

    try:
        with pytest.raises(ValueError, match="no such order"):
            await threads.call(fail)
        assert await threads.call(lambda: "still working") == "still working"
    finally:
        threads.close()


async def test_concurrent_blocking_calls_each_get_a_thread() -> None:
    """Ten calls that each wait for all ten to have started: they can only finish if none waits for a thread
    (the default executor of asyncio.to_thread has at most six on this machine)."""
    threads = WorkerThreads("test")
    barrier = threading.Barrier(10, timeout=5)
    try:
        results = await asyncio.gather(*(threads.call(barrier.wait) for _ in range(10)))
        assert sorted(results) == list(range(10))
    finally:
        threads.close()


async def test_idle_threads_are_reused() -> None:
    threads = WorkerThreads("test")
    try:
        names = {await threads.call(lambda: threading.current_thread().name) for _ in range(50)}
        assert len(names) == 1
    finally:
        threads.close()


async def test_a_cancelled_call_runs_to_its_end_and_its_result_is_dropped() -> None:
    threads = WorkerThreads("test")
    finished = threading.Event()

    def slow() -> str:
        time.sleep(0.2)
        finished.set()
        return "late"

    try:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.02):
                await threads.call(slow)
        assert not finished.is_set()
        await asyncio.sleep(0.3)  # the late result arrives on the loop and is dropped without an error
        assert finished.is_set()
        assert await threads.call(lambda: "next") == "next"
    finally:
        threads.close()


async def test_closed_threads_refuse_calls_and_end() -> None:
    threads = WorkerThreads("closing")
    await threads.call(lambda: None)
    threads.close()
    with pytest.raises(RuntimeError, match="closed"):
        await threads.call(lambda: None)
    for thread in [t for t in threading.enumerate() if t.name.startswith("closing-")]:
        thread.join(timeout=5)
    assert not any(t.name.startswith("closing-") for t in threading.enumerate())


def test_a_result_after_the_loop_closed_is_dropped_quietly() -> None:
    """A timed-out call still running when the run's event loop closes: its thread must not raise."""
    threads = WorkerThreads("after-close")
    released = threading.Event()
    errors: list[BaseException] = []
    previous_hook = threading.excepthook
    threading.excepthook = lambda args: errors.append(args.exc_value)  # type: ignore[assignment]

    async def start_and_abandon() -> None:
        task = asyncio.ensure_future(threads.call(released.wait))
        await asyncio.sleep(0.01)
        task.cancel()

    try:
        asyncio.run(start_and_abandon())
        released.set()
        time.sleep(0.1)
    finally:
        threads.close()
        threading.excepthook = previous_hook
    assert errors == []


def _where() -> tuple[str, str, bool]:
    """The thread a call ran on, the case it saw, and whether it saw a running event loop."""
    try:
        asyncio.get_running_loop()
        running = True
    except RuntimeError:
        running = False
    return threading.current_thread().name, CASE.get(), running


async def test_proven_fast_calls_run_in_place_as_a_thread_would_run_them(monkeypatch: pytest.MonkeyPatch) -> None:
    from evalward.runners import worker_threads
    from evalward.runners.worker_threads import FAST_STREAK

    monkeypatch.setattr(worker_threads, "FAST_CALL_S", 1.0)  # every call counts as fast, however busy the machine
    threads = WorkerThreads("fast", inline_when_fast=True)
    CASE.set("case-7")
    try:
        early = [await threads.call(_where) for _ in range(FAST_STREAK)]
        assert all(name.startswith("fast-") for name, _, _ in early)
        later = [await threads.call(_where) for _ in range(5)]
        here = threading.current_thread().name
        # In place now: on the loop's thread, in the caller's context, and with no running loop, as in a thread.
        assert later == [(here, "case-7", False)] * 5
        asyncio.get_running_loop()  # the loop's own is back
        # A function that runs its own event loop still can.
        assert await threads.call(asyncio.run, asyncio.sleep(0, result="own loop")) == "own loop"
        with pytest.raises(ValueError, match="in place"):
            await threads.call(_raise, "in place")
    finally:
        threads.close()


def _raise(message: str) -> None:
    raise ValueError(message)


async def test_a_slow_call_in_place_sends_every_later_call_back_to_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    from evalward.runners import worker_threads
    from evalward.runners.worker_threads import FAST_STREAK, SLOW_CALL_S

    monkeypatch.setattr(worker_threads, "FAST_CALL_S", 1.0)
    threads = WorkerThreads("slow", inline_when_fast=True)
    try:
        for _ in range(FAST_STREAK):
            await threads.call(_where)
        assert threads.policy is not None and threads.policy.inline
        await threads.call(time.sleep, SLOW_CALL_S * 2)  # a cache miss that went to the network
        names = [(await threads.call(_where))[0] for _ in range(2 * FAST_STREAK)]
        assert all(name.startswith("slow-") for name in names)  # for good, however fast the calls are again
    finally:
        threads.close()


async def test_a_slow_call_in_a_thread_starts_the_count_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from evalward.runners import worker_threads
    from evalward.runners.worker_threads import FAST_STREAK

    fast_call_s = 0.05  # far above what `_where` takes, far below the slow call's sleep
    monkeypatch.setattr(worker_threads, "FAST_CALL_S", fast_call_s)
    threads = WorkerThreads("streak", inline_when_fast=True)
    try:
        for _ in range(FAST_STREAK - 1):
            await threads.call(_where)
        await threads.call(time.sleep, fast_call_s * 2)
        assert threads.policy is not None and not threads.policy.inline
        for _ in range(FAST_STREAK - 1):
            await threads.call(_where)
        assert not threads.policy.inline
        await threads.call(_where)
        assert threads.policy.inline
        threads.close()
        with pytest.raises(RuntimeError, match="closed"):
            await threads.call(_where)
    finally:
        threads.close()
