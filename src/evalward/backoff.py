"""One retry wait for everything evalward retries itself (the `openai` client retries its own requests).

Used by the GitHub client, the history-server upload, agent turns a runner marks retryable (HTTP agents,
subprocess agents, Python agents) and teacher-forced steps.

    wait(k) = min(base · 2^(k−1), cap) · (0.5 + U/2),   U uniform in [0, 1),   k = 1, 2, … (the retry)

("equal jitter": never more than the nominal wait and never less than half of it, so clients throttled
together spread out instead of retrying in lockstep), and at least the server's own hint — `retry-after-ms`,
else `retry-after` as seconds or an HTTP date — capped at `MAX_RETRY_AFTER_S`, so a broken or hostile
server cannot park a run for hours.
"""

from __future__ import annotations

import email.utils
import math
import random
import time
from collections.abc import Callable, Mapping
from datetime import UTC

MAX_RETRY_AFTER_S = 120.0
"""The longest server-requested wait honoured (the `openai` client's limit too)."""


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """A `retry-after` value as seconds to wait: seconds (decimals allowed) or an HTTP date; None if unreadable."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if math.isfinite(seconds) else None
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # HTTP dates are GMT; a date without a zone is read as such
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def server_wait_s(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """The wait a response asks for: `retry-after-ms` (milliseconds), else `retry-after`; None without one."""
    milliseconds = headers.get("retry-after-ms")
    if milliseconds is not None:
        try:
            value = float(milliseconds)
        except ValueError:
            value = math.nan
        if math.isfinite(value):
            return max(0.0, value / 1000.0)
    return parse_retry_after(headers.get("retry-after"), now=now)


def backoff_wait(
    retry: int,
    *,
    base_s: float,
    cap_s: float | None = None,
    retry_after_s: float | None = None,
    jitter: Callable[[], float] = random.random,
) -> float:
    """Seconds before retry number `retry` (1-based), per the module docstring's formula."""
    nominal = base_s * 2.0 ** min(retry - 1, 60)
    if cap_s is not None:
        nominal = min(nominal, cap_s)
    wait = nominal * (0.5 + jitter() / 2.0)
    if retry_after_s is not None:
        wait = max(wait, min(retry_after_s, MAX_RETRY_AFTER_S))
    return wait
