"""Finished cases handed to their delivery (scoring, storing) without holding up the workers that run cases.

The executor's workers start their next case as soon as one finishes, and each finished case is delivered
by a task of its own (a delivery may wait on a judge, and deliveries must not wait on each other). Created all
at once, a burst of deliveries (the cases of a wave that finished together) sat in the event loop's queue
ahead of the workers whose agents answered meanwhile: each such worker started its next case only after the
whole burst had been scored. At 1,000 cases × 50 ms, 50 at a time, that delay came back in every wave, and
scoring added 21 ms to a 1.04 s run (issue #33). Here deliveries start one per turn of the event loop: a
worker whose agent has answered waits for at most one delivery's first step, never for a burst.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Coroutine
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Deliveries(Generic[T]):
    """Each `add`ed item delivered by a task of its own, the tasks started one per event loop turn, in order."""

    def __init__(
        self, deliver: Callable[[T], Coroutine[Any, Any, None]], done: Callable[[asyncio.Task[None]], None]
    ) -> None:
        self._deliver = deliver
        self._done = done
        self._waiting: deque[T] = deque()
        self._starter: asyncio.Task[None] | None = None
        self.started: set[asyncio.Task[None]] = set()
        """Deliveries started and not finished."""

    def add(self, item: T) -> None:
        self._waiting.append(item)
        if self._starter is None or self._starter.done():
            self._starter = asyncio.create_task(self._start_one_per_turn())

    def start_all(self) -> None:
        """Start every waiting delivery now (the run is stopping: what finished is still delivered)."""
        while self._waiting:
            self._start(self._waiting.popleft())

    async def drain(self) -> None:
        """Wait until every item added has been delivered (no item may be added meanwhile)."""
        while self._waiting or self.started or (self._starter is not None and not self._starter.done()):
            if self._starter is not None and not self._starter.done():
                await asyncio.gather(self._starter, return_exceptions=True)
            if self.started:
                await asyncio.gather(*list(self.started), return_exceptions=True)

    async def stop(self) -> None:
        """Start what waits and wait for every started delivery to finish."""
        if self._starter is not None and not self._starter.done():
            self._starter.cancel()
            await asyncio.gather(self._starter, return_exceptions=True)
        self.start_all()
        if self.started:
            await asyncio.gather(*list(self.started), return_exceptions=True)

    async def _start_one_per_turn(self) -> None:
        while self._waiting:
            self._start(self._waiting.popleft())
            await asyncio.sleep(0)  # the next one after whatever else is ready (a worker whose agent answered)

    def _start(self, item: T) -> None:
        task = asyncio.create_task(self._deliver(item))
        self.started.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self.started.discard(task)
        self._done(task)
