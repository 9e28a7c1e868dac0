"""One turn of a case, attempted until it succeeds, fails for good or runs out of retries (rules of `executor`).

- each attempt of a turn takes a token from the shared rate limiter, then runs under the per-turn timeout
  (`asyncio.timeout`). A timed-out sync Python agent keeps running in its thread (threads cannot be
  killed); its late result is discarded. An answer that comes back after the limit without the timeout having
  fired (a sync call run in place, `worker_threads`, cannot be interrupted) is a timeout all the same;
- a failure that is retryable (the agent said so, HTTP 429/5xx, connection errors) is retried up to
  `max_retries` times after `evalward.backoff.backoff_wait` (base `retry_backoff_s`, doubling, equal
  jitter), or the agent's `Retry-After` hint if longer (capped at two minutes).
  Timeouts, crashes, malformed output and raised exceptions are not retried.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evalward.backoff import backoff_wait
from evalward.model import AgentOutput, AgentRequest
from evalward.runners.agent_contract import Agent, AgentFailure

if TYPE_CHECKING:
    from evalward.runners.executor import ExecutorOptions, RateLimiter

# The executor's logger: a retry is logged under the name it always was.
logger = logging.getLogger("evalward.runners.executor")


@dataclass
class TurnOutcome:
    """The turn's output, or the failure that ended it; attempts made, and the successful attempt's duration."""

    output: AgentOutput | None = None
    failure: AgentFailure | None = None
    attempts: int = 1
    latency_s: float = 0.0


async def run_turn(
    agent: Agent,
    request: AgentRequest,
    options: ExecutorOptions,
    limiter: RateLimiter | None,
    rng: random.Random,
) -> TurnOutcome:
    """Attempt `request` on `agent` (rules in the module docstring); `rng` jitters the backoff."""
    attempts = 0
    while True:
        attempts += 1
        if limiter is not None:
            await limiter.acquire()
        began = time.monotonic()
        try:
            async with asyncio.timeout(options.timeout_s):
                output = await agent.run_turn(request)
            latency_s = time.monotonic() - began
            if options.timeout_s is not None and latency_s > options.timeout_s:
                raise TimeoutError  # answered late, without the timeout firing (module docstring)
            return TurnOutcome(output=output, attempts=attempts, latency_s=latency_s)
        except TimeoutError:
            failure = AgentFailure("timeout", f"turn {request.turn} did not finish within {options.timeout_s:g}s")
        except AgentFailure as exc:
            failure = exc
        except Exception as exc:
            # A runner bug or an unexpected library error: still data for this case, not a dead run.
            logger.debug("runner raised for case %s turn %d", request.case_id, request.turn, exc_info=True)
            failure = AgentFailure("crash", f"the runner failed: {type(exc).__name__}: {exc}")
        if not failure.retryable or attempts > options.max_retries:
            return TurnOutcome(failure=failure, attempts=attempts)
        delay = backoff_wait(
            attempts,
            base_s=options.retry_backoff_s,
            retry_after_s=failure.retry_after_s,
            jitter=rng.random,
        )
        logger.info(
            "case %s turn %d: %s (attempt %d); retrying in %.2fs",
            request.case_id,
            request.turn,
            failure.message,
            attempts,
            delay,
        )
        await asyncio.sleep(delay)
