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
