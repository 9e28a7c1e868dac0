"""The agents' event loop (`runners.event_loop`): epoll waits whole milliseconds rounded down and sleeps the
fraction left, so timers fire when due; input is still seen at once; a loop the user chose is kept."""

from __future__ import annotations

import asyncio
import math
import selectors
import socket
import sys
import time
from collections.abc import Iterator

import pytest

if sys.platform != "linux":
    pytest.skip("epoll is Linux's: elsewhere asyncio's own loop runs the agents", allow_module_level=True)

from evalward.runners import event_loop
from evalward.runners.event_loop import TimelyEpollSelector, run_on_time


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    left, right = socket.socketpair()
    yield left, right
    left.close()
    right.close()


@pytest.fixture
def selector() -> Iterator[TimelyEpollSelector]:
    chosen = TimelyEpollSelector()
    yield chosen
    chosen.close()


class RecordingEpoll:
    """Stands in for the selector's epoll object: records each timeout asked for and reports nothing ready."""

    def __init__(self) -> None:
        self.timeouts: list[float] = []

    def poll(self, timeout: float = -1, maxevents: int = -1) -> list[tuple[int, int]]:
        self.timeouts.append(timeout)
        return []

    def close(self) -> None:
        return None


@pytest.mark.parametrize(
    ("asked_s", "epoll_ms"),
    [(0.0037, 3), (0.009, 9), (0.0499, 49), (0.0675, 67), (0.2681, 268), (0.001, 1), (2.5, 2500)],
)
def test_a_wait_of_a_millisecond_or_more_asks_epoll_for_the_whole_milliseconds_rounded_down(
    selector: TimelyEpollSelector, asked_s: float, epoll_ms: int
) -> None:
    fake = RecordingEpoll()
    real = selector._selector  # type: ignore[attr-defined]
    selector._selector = fake  # type: ignore[attr-defined]
    try:
        assert selector.select(asked_s) == []
    finally:
        selector._selector = real  # type: ignore[attr-defined]
    # CPython turns epoll's float timeout into nanoseconds and those into milliseconds, each rounded up (so
    # 0.009 s waits 10 ms): what epoll waits must be the whole milliseconds asked for, never one more.
    assert [math.ceil(math.ceil(timeout * 1e9) / 1e6) for timeout in fake.timeouts] == [epoll_ms]


def test_the_fraction_of_a_millisecond_is_slept_and_input_that_came_meanwhile_is_returned(
    selector: TimelyEpollSelector, pair: tuple[socket.socket, socket.socket], monkeypatch: pytest.MonkeyPatch
) -> None:
    left, right = pair
    key = selector.register(left, selectors.EVENT_READ)
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        right.send(b"x")  # input arrives while the loop sleeps the last fraction

    monkeypatch.setattr(event_loop.time, "sleep", sleep)
    assert selector.select(0.0004) == [(key, selectors.EVENT_READ)]
    assert slept == [0.0004]


def test_a_sub_millisecond_wait_does_not_sleep_when_input_is_already_there(
    selector: TimelyEpollSelector, pair: tuple[socket.socket, socket.socket], monkeypatch: pytest.MonkeyPatch
) -> None:
    left, right = pair
    key = selector.register(left, selectors.EVENT_READ)
    right.send(b"x")
    monkeypatch.setattr(event_loop.time, "sleep", lambda seconds: pytest.fail("slept with input waiting"))
    assert selector.select(0.0004) == [(key, selectors.EVENT_READ)]


@pytest.mark.parametrize(("asked_s", "at_least_s"), [(0.0004, 0.0004), (0.0031, 0.003)])
def test_waits_end_no_earlier_than_their_whole_milliseconds_or_their_sleep(
    selector: TimelyEpollSelector, asked_s: float, at_least_s: float
) -> None:
    began = time.monotonic()
    assert selector.select(asked_s) == []
    assert time.monotonic() - began >= at_least_s


def test_input_and_a_closed_peer_end_a_long_wait_at_once(
    selector: TimelyEpollSelector, pair: tuple[socket.socket, socket.socket]
) -> None:
    left, right = pair
    key = selector.register(left, selectors.EVENT_READ | selectors.EVENT_WRITE)
    assert selector.select(5.0) == [(key, selectors.EVENT_WRITE)]  # writable now: no waiting
    selector.modify(left, selectors.EVENT_READ)
    right.close()  # a hang-up is readable: the reader sees the end of the stream
    began = time.monotonic()
    assert selector.select(5.0) == [(selector.get_key(left), selectors.EVENT_READ)]
    assert time.monotonic() - began < 4.0
    assert key.fd == left.fileno()


def test_runs_go_on_the_timely_loop_and_timers_never_fire_early() -> None:
    async def main() -> tuple[bool, bool, float]:
        loop = asyncio.get_running_loop()
        began = loop.time()
        await asyncio.sleep(0.0123)
        elapsed = loop.time() - began
        chosen = isinstance(loop._selector, TimelyEpollSelector)  # type: ignore[attr-defined]
        return chosen, asyncio.get_event_loop() is loop, elapsed

    chosen, current, elapsed = run_on_time(main())
    assert chosen and current
    assert elapsed >= 0.0123


def test_a_loop_policy_the_user_chose_is_kept() -> None:
    made: list[asyncio.AbstractEventLoop] = []

    class OwnPolicy(asyncio.DefaultEventLoopPolicy):  # type: ignore[misc,valid-type]
        def new_event_loop(self) -> asyncio.AbstractEventLoop:
            loop = super().new_event_loop()
            made.append(loop)
            return loop

    async def main() -> asyncio.AbstractEventLoop:
        return asyncio.get_running_loop()

    before = asyncio.get_event_loop_policy()
    asyncio.set_event_loop_policy(OwnPolicy())
    try:
        loop = run_on_time(main())
    finally:
        asyncio.set_event_loop_policy(before)
    assert made == [loop]
    assert not isinstance(loop._selector, TimelyEpollSelector)  # type: ignore[attr-defined]


def test_elsewhere_than_linux_asyncio_runs_its_own_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> asyncio.AbstractEventLoop:
        return asyncio.get_running_loop()

    monkeypatch.setattr(event_loop.sys, "platform", "darwin")
    loop = run_on_time(main())
    assert not isinstance(loop._selector, TimelyEpollSelector)  # type: ignore[attr-defined]
