"""The one retry wait (`evalward.backoff`): its formula, the server's hint and the cap."""

from __future__ import annotations

import random

import pytest

from evalward.backoff import MAX_RETRY_AFTER_S, backoff_wait, parse_retry_after, server_wait_s


def test_the_wait_doubles_and_the_jitter_keeps_it_between_half_and_all_of_it() -> None:
    # jitter 0.4 → factor 0.5 + 0.4/2 = 0.7: 0.5 s × 2^0 × 0.7 = 0.35 s; 0.5 × 2^2 × 0.7 = 1.4 s
    assert backoff_wait(1, base_s=0.5, jitter=lambda: 0.4) == pytest.approx(0.35)
    assert backoff_wait(3, base_s=0.5, jitter=lambda: 0.4) == pytest.approx(1.4)
    rng = random.Random(7)
    waits = [backoff_wait(2, base_s=1.0, jitter=rng.random) for _ in range(200)]
    assert all(1.0 <= w < 2.0 for w in waits)
    assert len({round(w, 6) for w in waits}) == 200  # spread out, not lockstep


def test_the_cap_bounds_the_nominal_wait_and_huge_retry_numbers_do_not_overflow() -> None:
    assert backoff_wait(10, base_s=0.5, cap_s=8.0, jitter=lambda: 0.999999) == pytest.approx(8.0, rel=1e-5)
    assert backoff_wait(5000, base_s=0.5, cap_s=8.0, jitter=lambda: 0.0) == 4.0


def test_the_servers_hint_is_a_floor_capped_at_two_minutes() -> None:
    assert backoff_wait(1, base_s=0.5, retry_after_s=7.0, jitter=lambda: 0.5) == 7.0
    assert backoff_wait(4, base_s=1.0, retry_after_s=0.1, jitter=lambda: 0.0) == 4.0
    assert backoff_wait(1, base_s=0.5, retry_after_s=10_000.0) == MAX_RETRY_AFTER_S


def test_retry_after_reads_seconds_decimals_and_http_dates() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(" 0.25 ") == 0.25
    assert parse_retry_after("-5") == 0.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("") is None
    assert parse_retry_after("soon") is None
    assert parse_retry_after("inf") is None
    # 07:28:00 GMT is 10 s after `now`
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412490.0) == 0.0


def test_retry_after_ms_wins_over_retry_after() -> None:
    assert server_wait_s({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert server_wait_s({"retry-after-ms": "nonsense", "retry-after": "9"}) == 9.0
    assert server_wait_s({}) is None
