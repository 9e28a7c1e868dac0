"""The event loop agents run on: asyncio's, with timers that fire when they are due instead of up to 1 ms late.

On Linux, asyncio waits for its next timer in `epoll_wait`, whose timeout is whole milliseconds; the selector
rounds the wait up, so every timer (an agent's own `sleep`, the rate limiter's spacing, a retry's backoff)
fires between 0 and 1 ms late, and some waits a full millisecond more where the float of the rounded value
lands just above it (asked for 9 ms, it waits 10). A run's workers drift apart by the work done between
cases, so each of them pays that rounding on every case: at 1,000 cases × 50 ms, 50 at a time, it was two
thirds of the executor's overhead (issue #33; `benchmarks/overhead.py`).

`TimelyEpollSelector` waits whole milliseconds rounded *down* (asyncio asks again for the rest) and sleeps
the last fraction of a millisecond with `time.sleep`, which has nanosecond resolution: a timer then fires
within the kernel's timer slack (~50 µs). The price: while the loop sleeps that last fraction, input that
arrives waits for it to end (under 1 ms, only when a timer is due within the millisecond), where before the
timer waited instead. Nothing spins.

Only asyncio's own loop with its default policy is replaced (a loop chosen by the user, uvloop's say, is
kept), and only where the selector is epoll (kqueue, macOS's, already takes fractions of a second).
"""

from __future__ import annotations

import asyncio
import math
import select
import selectors
import sys
import time
import warnings
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_WHOLE_MS_MARGIN = 0.5
"""Half a millisecond below the whole millisecond asked for: epoll rounds its timeout up to whole
milliseconds, from a float that can sit just above one."""


if sys.platform == "linux":  # epoll is Linux's: elsewhere asyncio's own loop runs the agents

    class TimelyEpollSelector(selectors.EpollSelector):
        """An epoll selector whose waits end on time (module docstring): whole milliseconds in epoll, rounded
        down, and the fraction left in `time.sleep`, then one more look for input."""

        def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
            if timeout is None or timeout <= 0:
                return super().select(timeout)
            whole_ms = math.floor(timeout * 1000)
            if whole_ms >= 1:
                return self._wait_ms(whole_ms)  # early by under 1 ms: the loop asks again for what is left
            ready = super().select(0)
            if ready:
                return ready
            time.sleep(timeout)
            return super().select(0)

        def _wait_ms(self, whole_ms: int) -> list[tuple[selectors.SelectorKey, int]]:
            epoll: select.epoll = self._selector  # type: ignore[attr-defined]  # EpollSelector's own epoll object
            try:
                polled = epoll.poll((whole_ms - _WHOLE_MS_MARGIN) / 1000, max(len(self.get_map()), 1))
            except InterruptedError:
                return []
            ready: list[tuple[selectors.SelectorKey, int]] = []
            for fd, flags in polled:
                key = self._key_from_fd(fd)  # type: ignore[attr-defined]
                if key is None:
                    continue
                # An error or hang-up wakes both directions, so whoever waits on the descriptor sees it.
                events = (selectors.EVENT_READ if flags & ~select.EPOLLOUT else 0) | (
                    selectors.EVENT_WRITE if flags & ~select.EPOLLIN else 0
                )
                ready.append((key, events & key.events))
            return ready


def _timely_loop_applies() -> bool:
    """Linux, asyncio's default loop policy (no loop the user chose), and the stdlib internals the selector reads."""
    if sys.platform != "linux" or _user_chose_a_loop():
        return False
    probe = selectors.EpollSelector()
    try:
        return hasattr(probe, "_selector") and hasattr(probe, "_key_from_fd")
    finally:
        probe.close()


def _user_chose_a_loop() -> bool:
    """An event loop policy other than asyncio's default is installed (uvloop's, say). Policies are deprecated
    from Python 3.14: where they are gone, nobody chose one."""
    policy_of = getattr(asyncio, "get_event_loop_policy", None)
    if policy_of is None:
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return type(policy_of()) is not asyncio.DefaultEventLoopPolicy


def run_on_time(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)` on a loop whose timers fire when due (module docstring), where that loop applies."""
    if not _timely_loop_applies():
        return asyncio.run(main)

    def new_loop() -> asyncio.AbstractEventLoop:
        assert sys.platform == "linux"  # `_timely_loop_applies`
        loop = asyncio.SelectorEventLoop(TimelyEpollSelector())
        asyncio.set_event_loop(loop)  # as asyncio.run does: code that asks for the current loop gets this one
        return loop

    try:
        with asyncio.Runner(loop_factory=new_loop) as runner:
            return runner.run(main)
    finally:
        asyncio.set_event_loop(None)
