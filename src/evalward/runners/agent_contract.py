"""The contract every agent runner implements.

A runner turns one `AgentRequest` into one `AgentOutput`. It raises `AgentFailure` when the agent fails
(raises, answers malformed output, dies, is unreachable); the executor records that as data for the case
and carries on with the rest of the run.
"""

from __future__ import annotations

from typing import Protocol

from evalward.model import AgentOutput, AgentRequest, AgentTarget, ErrorKind


class AgentFailure(Exception):
    """The agent could not produce an output for a turn."""

    def __init__(
        self, kind: ErrorKind, message: str, *, retryable: bool = False, retry_after_s: float | None = None
    ) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.message = message
        self.retryable = retryable
        # A server's hint (HTTP `Retry-After`) for when a retry may succeed; the executor waits at least this.
        self.retry_after_s = retry_after_s


class AgentStartError(Exception):
    """The agent could not be started at all (bad target, missing module, command not found)."""


class Agent(Protocol):
    """An agent under test, reachable through one of the runners."""

    @property
    def target(self) -> AgentTarget:
        """What is being run, for the run's fingerprint and reports."""
        ...

    async def start(self) -> None:
        """Prepare (import, spawn, connect). Raise `AgentStartError` when that is impossible."""
        ...

    async def run_turn(self, request: AgentRequest) -> AgentOutput:
        """Run one turn. Raise `AgentFailure` for a failure that belongs to this case."""
        ...

    async def aclose(self) -> None:
        """Release processes and connections."""
        ...


class SimulatorError(Exception):
    """The simulator could not give the next message (unreachable, refused, empty reply)."""
