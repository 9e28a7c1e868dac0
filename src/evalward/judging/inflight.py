"""`SingleFlight`: identical judge requests in flight are sent once, and every caller gets that one reply.

The judge cache only helps once a reply is back. A run's cases finish in waves (`--concurrency` at a time),
and cases with the same judge prompt finish together, so without this a wave asks the same question many
times over: 400 cases sharing 2 prompts at concurrency 20 sent 40 requests where 2 do.

`run(key, start)`: the first caller for `key` starts `start()` as a task of its own (the flight); a caller
arriving while it is in flight waits for the same task instead of starting another. The flight is forgotten
once it ends, whatever the outcome, so:
- a failure reaches every caller waiting for it, and is not remembered: the next caller starts afresh
  (whether a reply is remembered at all is the cache's business, inside `start`);
- a caller that is cancelled stops waiting, and the flight goes on for the others (`asyncio.shield`); only
  when every caller has gone is the flight cancelled, since nobody needs its reply any more.

The flight runs in an empty `contextvars.Context`: it serves several cases, so no case's context variables
(the trace collector of `evalward.trace`, …) are its own. A caller only joins a flight of its own event loop
(a task cannot be awaited from another), so an instance shared by several loops stays correct and merely
coalesces less. Not thread-safe beyond that: one event loop uses an instance at a time (a run's judges).
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic, TypeVar

V = TypeVar("V")


@dataclass
class _Flight(Generic[V]):
    task: asyncio.Task[V]
    waiters: int = 0


class SingleFlight(Generic[V]):
    """At most one flight per key at a time (module docstring)."""

    def __init__(self) -> None:
        self._flights: dict[str, _Flight[V]] = {}

    def waiting(self) -> int:
        """How many callers are waiting for a flight (the starters included), over all keys."""
        return sum(flight.waiters for flight in self._flights.values())

    async def run(self, key: str, start: Callable[[], Coroutine[Any, Any, V]]) -> tuple[V, bool]:
        """The value of the flight for `key`, started with `start()` when none is in flight.

        Returns (value, joined): joined is True when another caller had started the flight. The flight's
        exception is raised to every caller waiting for it.
        """
        loop = asyncio.get_running_loop()
        flight = self._flights.get(key)
        if flight is not None and flight.task.get_loop() is loop and not flight.task.done():
            joined = True
        else:
            joined = False
            # No await between the look-up above and this registration: no other caller can slip in between.
            task = loop.create_task(start(), context=contextvars.Context())
            flight = _Flight(task)
            self._flights[key] = flight
            task.add_done_callback(partial(self._land, key, flight))
        flight.waiters += 1
        try:
            return await asyncio.shield(flight.task), joined
        finally:
            flight.waiters -= 1
            if flight.waiters == 0 and not flight.task.done():
                flight.task.cancel()  # every caller was cancelled: nobody wants the reply

    def cancel_all(self) -> None:
        """Cancel the flights still going (nobody can be waiting for them once their run is over)."""
        for flight in list(self._flights.values()):
            flight.task.cancel()

    def _land(self, key: str, flight: _Flight[V], task: asyncio.Task[V]) -> None:
        if self._flights.get(key) is flight:
            del self._flights[key]
        if not task.cancelled():
            # Marks the exception as retrieved: when every waiter was cancelled just before the flight failed,
            # asyncio would otherwise log "Task exception was never retrieved" for an error nobody asked about.
            task.exception()
