"""The `openai` clients evalward builds (judges, the `openai:` agent): the client retries, evalward counts.

The `openai` package retries each request itself, up to `max_retries` times: HTTP 408, 409, 429 and 5xx
and connection errors or timeouts, unless the server answers `x-should-retry: false` (or `true`, which it
obeys either way). It waits what the server asks for — `retry-after-ms`, then `retry-after` in seconds or
as an HTTP date, when that is positive and at most two minutes — and otherwise an exponential backoff with
jitter (0.5 s doubling up to 8 s, each wait shortened by a random 0–25 %, so concurrent requests throttled
together do not retry in lockstep). evalward never retries on top of it: one retry policy, the one the API's
own client implements.

What evalward adds is counting: every client built here sends its requests through an httpx request hook
that adds one to the `AttemptCounter` of the call in progress (a context variable, so concurrent calls
in one event loop count separately). `attempts.retries` is then the number of retries the call needed,
which judges and agents report.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx
    from openai import AsyncOpenAI

NO_KEY = "evalward-no-key"
"""Sent to keyless local servers: the `openai` client refuses an empty key."""


@dataclass
class AttemptCounter:
    """HTTP requests one `openai` call sent (its first attempt and every retry)."""

    requests: int = 0

    @property
    def retries(self) -> int:
        return max(0, self.requests - 1)


_current_attempts: ContextVar[AttemptCounter | None] = ContextVar("evalward_openai_attempts", default=None)


@contextmanager
def counting_attempts() -> Iterator[AttemptCounter]:
    """Count the requests of the `openai` calls made inside the block (in this task)."""
    counter = AttemptCounter()
    token = _current_attempts.set(counter)
    try:
        yield counter
    finally:
        _current_attempts.reset(token)


async def _count_request(request: httpx.Request) -> None:
    counter = _current_attempts.get()
    if counter is not None:
        counter.requests += 1


def async_openai_client(
    *, base_url: str | None, api_key: str | None, timeout_s: float, max_retries: int
) -> AsyncOpenAI:
    """An `AsyncOpenAI` that retries per the module docstring and reports its attempts to `counting_attempts`."""
    import openai

    return openai.AsyncOpenAI(
        base_url=base_url,
        api_key=api_key or NO_KEY,
        timeout=timeout_s,
        max_retries=max_retries,
        # The openai package's own defaults (timeouts, connection limits, redirects), plus our hook.
        http_client=openai.DefaultAsyncHttpxClient(event_hooks={"request": [_count_request]}),
    )
