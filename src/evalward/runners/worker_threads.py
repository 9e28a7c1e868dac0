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

A hand-off costs the event loop's thread more than it looks: the worker must take the GIL from it and give it
back, two hand-overs between threads that are each a wake-up of a sleeping thread (tens of µs on a 2-core VM).
For an agent that answers in microseconds that was a third of a 2,000-case run (issue #33: 0.87 s against
0.58 s for the same agent written `async def`). So, with `inline_when_fast`, calls that have shown they are fast
run on the loop's thread instead (`InlinePolicy`): after `FAST_STREAK` calls in a row each took under
`FAST_CALL_S` in a thread, a call runs in place, in a copy of the caller's context and with no running event loop
(as in a thread, so a function that calls `asyncio.run` itself still can). A call that fast cannot be waiting on
a service, so running it in place holds the loop for less than the hand-off did. The first inline call that
takes `SLOW_CALL_S` or more (a cache miss that went to the network) sends every later call back to threads, for
good: the loop was held once, for that call's length. A timeout cannot stop an inline call (it waits on nothing
the loop could cancel); one that runs over its limit is a timeout when it returns (`turn_attempts`).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import queue
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_Job = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", contextvars.Context, Callable[..., Any], tuple[Any, ...]]

FAST_CALL_S = 0.0005
"""A call in a thread taking less than this (wall clock, measured in the thread) counts towards running inline."""
FAST_STREAK = 16
"""Calls in a row under `FAST_CALL_S` before calls run inline (the first calls of an agent warm its caches)."""
SLOW_CALL_S = 0.002
"""An inline call taking this long or longer sends every later call back to threads."""


class InlinePolicy:
    """Whether the next call of one function runs in a thread or in place (module docstring): in threads until
    `FAST_STREAK` calls in a row were fast, then in place until one is slow, then in threads for good."""

    def __init__(self) -> None:
        self.streak = 0
        self.inline = False
        self.never = False
        """An inline call was slow: this function may wait on something, and never runs in place again."""

    def threaded(self, seconds: float) -> None:
        """A call took `seconds` in a thread."""
        if self.never or self.inline:
            return
        self.streak = self.streak + 1 if seconds < FAST_CALL_S else 0
        self.inline = self.streak >= FAST_STREAK

    def in_place(self, seconds: float) -> None:
        """A call took `seconds` in place."""
        if seconds >= SLOW_CALL_S:
            self.inline, self.never = False, True


class WorkerThreads:
    """A growing set of daemon threads running blocking calls handed to them by `call` (see the module).
    `inline_when_fast`: the calls are of one function, run in place once they have shown they are fast."""

    def __init__(self, name: str, *, inline_when_fast: bool = False) -> None:
        self._name = name
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._threads = 0
        self._closed = False
        self.policy = InlinePolicy() if inline_when_fast else None

    async def call(self, function: Callable[..., T], *args: Any) -> T:
        """`function(*args)` in a worker thread (or in place, see the module), in a copy of the current context."""
        if self.policy is not None and self.policy.inline:
            if self._closed:
                raise RuntimeError(f"{self._name}: the worker threads are closed")
            result = _in_place(self.policy, function, args)
            # A turn of the loop, as a hand-off gives: a worker running case after case of fast calls would not
            # let the others' answers, timers and deliveries in until its back-pressure stopped it.
            await asyncio.sleep(0)
            return result
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
            started = time.perf_counter()
            try:
                result = context.run(function, *args)
            except BaseException as exc:  # handed to the awaiting task, as asyncio.to_thread does
                error = exc
            took = time.perf_counter() - started
            # Counted idle before the result is handed over: the task it wakes may call again at once, and
            # must find this thread rather than start another.
            with self._lock:
                closed = self._closed
                if not closed:
                    self._idle += 1
                if self.policy is not None:
                    self.policy.threaded(took)
            _deliver(loop, future, result, error)
            if closed:
                return


def _in_place(policy: InlinePolicy, function: Callable[..., T], args: tuple[Any, ...]) -> T:
    """`function(*args)` on this thread, as a worker thread would run it: in a copy of the context, with no
    running event loop (the loop's own is put back after)."""
    loop = asyncio.events._get_running_loop()
    asyncio.events._set_running_loop(None)
    started = time.perf_counter()
    try:
        return contextvars.copy_context().run(function, *args)
    finally:
        policy.in_place(time.perf_counter() - started)
        asyncio.events._set_running_loop(loop)


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
