"""Threads that run a sync agent's calls for the event loop, with a cheaper hand-off than `asyncio.to_thread`.

`asyncio.to_thread` goes through the loop's default `ThreadPoolExecutor`: a `concurrent.futures.Future`,
chained to an asyncio future by two layers of callbacks. For an agent that answers in microseconds (a
model-free or rule-based agent) that hand-off was the largest cost of a case: ~150 µs a call in a 2,000-case
run, where this one takes about half (`benchmarks/vs_adk_eval.py`). It also capped a sync agent at the
default executor's 6 threads whatever `--concurrency` said; here a call never waits for a thread: a new one
starts when none is idle, so the executor's concurrency is the only limit.

Semantics kept from `asyncio.to_thread`: the call runs in a copy of the caller's context (so `evalward.trace`
attributes what it records to its case), its exception is raised in the awaiting task, and cancelling the
awaiting task (a timeout) does not stop the thread: it runs to its end and its result is dropped. The
threads are daemons: a timed-out call still running when the run ends does not hold the process open.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_Job = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", contextvars.Context, Callable[..., Any], tuple[Any, ...]]


class WorkerThreads:
    """A growing set of daemon threads running blocking calls handed to them by `call` (see the module)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._threads = 0
        self._closed = False

    async def call(self, function: Callable[..., T], *args: Any) -> T:
        """`function(*args)` in a worker thread, in a copy of the current context."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        with self._lock:
            if self._closed:
                raise RuntimeError(f"{self._name}: the worker threads are closed")
            if self._idle:
                self._idle -= 1  # that thread takes this job
            else:
                self._threads += 1
                threading.Thread(target=self._work, name=f"{self._name}-{self._threads}", daemon=True).start()
        self._jobs.put((loop, future, contextvars.copy_context(), function, args))
        return await future

    def close(self) -> None:
        """Let idle threads end; busy ones end after their call. Later `call`s raise."""
        with self._lock:
            self._closed = True
            threads = self._threads
        for _ in range(threads):
            self._jobs.put(None)

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            loop, future, context, function, args = job
            result: Any = None
            error: BaseException | None = None
            try:
                result = context.run(function, *args)
            except BaseException as exc:  # handed to the awaiting task, as asyncio.to_thread does
                error = exc
            # Counted idle before the result is handed over: the task it wakes may call again at once, and
            # must find this thread rather than start another.
            with self._lock:
                closed = self._closed
                if not closed:
                    self._idle += 1
            _deliver(loop, future, result, error)
            if closed:
                return


def _deliver(
    loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], result: Any, error: BaseException | None
) -> None:
    # RuntimeError: the loop has closed, the run ended while this (timed-out) call was still running.
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(_settle, future, result, error)


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.cancelled():
        return  # the turn timed out or the run was cancelled: the late result is dropped
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)
