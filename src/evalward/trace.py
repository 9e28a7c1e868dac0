"""Record what an agent does (tool calls, sub-agents, steps, usage) from anywhere inside its code.

An agent run in-process (the Python runner) can report its trajectory without threading it through its
return value:

    from evalward import trace

    def root_agent(request):
        trace.agent_call("planner")
        trace.step("plan")
        result = search(request["query"])
        trace.tool_call("search", {"q": request["query"]}, agent="planner", result=result)
        trace.record_usage(input_tokens=120, output_tokens=40, cost_usd=0.0011)
        return {"response": summarize(result)}

Attribution. The runner opens `capture()` around each turn; it installs a fresh `TraceCollector` in a
`ContextVar`. Every call made in that context goes to that collector: the agent's own code, asyncio tasks
it creates (tasks copy the context), and threads started with `asyncio.to_thread` or
`contextvars.copy_context().run`. So 50 cases running at once each see only their own calls. Plain
`threading.Thread` and `loop.run_in_executor` do NOT copy the context: calls made there are lost (no-ops)
unless the thread's target is wrapped with `contextvars.copy_context().run`.

Outside a capture (the agent imported and called directly, or run as a subprocess/HTTP service) every
function here is a no-op, so agents can keep their trace calls in production.

Merging into the turn's `AgentOutput` (`TraceCollector.apply`):
- traced tool calls are appended after the tool calls the agent returned;
- traced agents extend `agents` (duplicates dropped, first-call order kept);
- traced steps become `trajectory` only if the agent returned no trajectory of its own;
- traced usage is added field-wise to the usage the agent returned.

This replaces the global event-bus singleton of simpler evaluators, which mixes up concurrent cases.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from evalward.model import AgentOutput, ToolCall, Usage
from evalward.model.agent_io import CallStatus

__all__ = [
    "TraceCollector",
    "agent_call",
    "capture",
    "current",
    "record_usage",
    "step",
    "tool_call",
]


@dataclass
class TraceCollector:
    """What one turn of one case reported through `evalward.trace`.

    Appends take a lock because an agent may report from several worker threads at once.
    """

    tool_calls: list[ToolCall] = field(default_factory=list)
    agents: list[str] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)
    usage: Usage | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add_tool_call(self, call: ToolCall) -> None:
        with self._lock:
            self.tool_calls.append(call)

    def add_agent(self, name: str) -> None:
        with self._lock:
            self.agents.append(name)

    def add_step(self, name: str) -> None:
        with self._lock:
            self.steps.append(name)

    def add_usage(self, usage: Usage) -> None:
        with self._lock:
            self.usage = usage if self.usage is None else self.usage.plus(usage)

    @property
    def empty(self) -> bool:
        return not (self.tool_calls or self.agents or self.steps or self.usage is not None)

    def apply(self, output: AgentOutput) -> AgentOutput:
        """`output` with the traced calls, agents, steps and usage merged in (rules in the module docstring)."""
        if self.empty:
            return output
        with self._lock:
            tool_calls = [*output.tool_calls, *self.tool_calls]
            agents = output.agents
            if self.agents:
                # Without an explicit list the output's agents were derived from its tool calls; keep those
                # derivable names so tracing an agent never hides one that only issued calls.
                derived = [] if output.agents is not None else [c.agent for c in tool_calls if c.agent is not None]
                agents = _distinct([*(output.agents or []), *self.agents, *derived])
            trajectory = output.trajectory if output.trajectory is not None or not self.steps else list(self.steps)
            usage = output.usage
            if self.usage is not None:
                usage = self.usage if usage is None else usage.plus(self.usage)
        return output.model_copy(
            update={"tool_calls": tool_calls, "agents": agents, "trajectory": trajectory, "usage": usage}
        )


def _distinct(names: list[str]) -> list[str]:
    seen: dict[str, None] = {}
    for name in names:
        seen.setdefault(name, None)
    return list(seen)


_collector: ContextVar[TraceCollector | None] = ContextVar("evalward_trace_collector", default=None)


def current() -> TraceCollector | None:
    """The collector of the turn running in this context, or None outside a capture."""
    return _collector.get()


@contextmanager
def capture() -> Iterator[TraceCollector]:
    """Install a fresh collector for the code run inside the block (and tasks/threads that copy its context)."""
    collector = TraceCollector()
    token = _collector.set(collector)
    try:
        yield collector
    finally:
        _collector.reset(token)


def tool_call(
    name: str,
    args: dict[str, Any] | None = None,
    *,
    agent: str | None = None,
    result: Any = None,
    status: CallStatus = "ok",
) -> None:
    """Record one tool call (`status`: `ok`, `error` or `deferred`). No-op outside a capture."""
    collector = _collector.get()
    if collector is not None:
        collector.add_tool_call(ToolCall(name=name, args=args, agent=agent, result=result, status=status))


def agent_call(name: str) -> None:
    """Record that agent `name` took part in the turn. No-op outside a capture."""
    collector = _collector.get()
    if collector is not None:
        collector.add_agent(name)


def step(name: str) -> None:
    """Record one step (graph node, agent or tool) of the turn's trajectory. No-op outside a capture."""
    collector = _collector.get()
    if collector is not None:
        collector.add_step(name)


def record_usage(
    input_tokens: int | None = None, output_tokens: int | None = None, cost_usd: float | None = None
) -> None:
    """Add model usage to the turn's total (summed over calls). No-op outside a capture."""
    collector = _collector.get()
    if collector is not None:
        collector.add_usage(Usage(input_tokens=input_tokens, output_tokens=output_tokens, cost_usd=cost_usd))
