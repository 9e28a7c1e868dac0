"""Scripted in-process agents for tests of the Python runner, the executor and the pipeline.

Two kinds:

1. Agent *functions*, reachable as targets `tests.fakes.agents:<name>` (or by file path
   `tests/fakes/agents.py:<name>`). Unless noted they answer with `answers.scripted_answer`, i.e. as the
   turn's `inputs` say (`response`, `tool_calls`, `output`, `state`, `usage`), else `echo: <query>`.

   | name | behaviour |
   | --- | --- |
   | `echo` | sync, scripted answer |
   | `async_echo` | async, scripted answer |
   | `typed_echo` | takes an `AgentRequest`, returns an `AgentOutput` |
   | `text_echo` | returns a bare str (`echo: <query>`) |
   | `slow` | async; sleeps `inputs.sleep_s` (default 0.05 s), then answers |
   | `sync_slow` | sync (in a thread); sleeps `inputs.sleep_s` (default 0.05 s), then answers |
   | `hang` | async; never answers (for timeouts) |
   | `raises` | raises `RuntimeError("boom in case <id> turn <n>")` |
   | `malformed` | returns a tool call without a `name` |
   | `reports_error` | returns `{"error": ..., "retryable": inputs.retryable}` |
   | `flaky` | the first `inputs.fail_times` (default 2) attempts of each session+turn return a retryable error |
   | `traced` | async; reports through `evalward.trace` from nested tasks and worker threads |
   | `sync_traced` | sync; reports through `evalward.trace` |
   | `history_echo` | answers with the roles/contents of the history it received (JSON) |

   `scripted_agent(script)` builds an agent answering per query from a table.

2. `FakeAgent`: an object implementing the `Agent` protocol directly (no runner) with a pluggable async
   handler; it records requests, `start`/`aclose` calls and the peak number of concurrent turns.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from tests.fakes.answers import scripted_answer

from evalward import trace
from evalward.model import AgentOutput, AgentRequest, AgentTarget

# --- agent functions ------------------------------------------------------------------------------------------


def echo(request: dict[str, Any]) -> dict[str, Any]:
    return scripted_answer(request)


async def async_echo(request: dict[str, Any]) -> dict[str, Any]:
    await asyncio.sleep(0)
    return scripted_answer(request)


def typed_echo(request: AgentRequest) -> AgentOutput:
    return AgentOutput(response=f"typed echo: {request.query}", outputs={"session_id": request.session_id})


def text_echo(request: dict[str, Any]) -> str:
    return f"echo: {request['query']}"


async def slow(request: dict[str, Any]) -> dict[str, Any]:
    await asyncio.sleep(float(request["inputs"].get("sleep_s", 0.05)))
    return scripted_answer(request)


def sync_slow(request: dict[str, Any]) -> dict[str, Any]:
    time.sleep(float(request["inputs"].get("sleep_s", 0.05)))
    return scripted_answer(request)


async def hang(request: dict[str, Any]) -> dict[str, Any]:
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


def raises(request: dict[str, Any]) -> dict[str, Any]:
    raise RuntimeError(f"boom in case {request['case_id']} turn {request['turn']}")


def malformed(request: dict[str, Any]) -> dict[str, Any]:
    return {"response": "ok", "tool_calls": [{"args": {"city": "Paris"}}]}


def reports_error(request: dict[str, Any]) -> dict[str, Any]:
    return {"error": "the model quota is exhausted", "retryable": bool(request["inputs"].get("retryable", False))}


FLAKY_ATTEMPTS: dict[tuple[str, int], int] = {}
"""Attempts seen by `flaky`, per (session_id, turn); session ids are unique per run, so tests don't collide."""
_flaky_lock = threading.Lock()


def flaky(request: dict[str, Any]) -> dict[str, Any]:
    key = (request["session_id"], request["turn"])
    with _flaky_lock:
        FLAKY_ATTEMPTS[key] = FLAKY_ATTEMPTS.get(key, 0) + 1
        attempt = FLAKY_ATTEMPTS[key]
    if attempt <= int(request["inputs"].get("fail_times", 2)):
        return {"error": f"overloaded (attempt {attempt})", "retryable": True}
    return {**scripted_answer(request), "attempt": attempt}


async def traced(request: dict[str, Any]) -> dict[str, Any]:
    """Reports, for case X: agent `root-X`, steps `start-X`/`end-X`, and tool calls from tasks and threads.

    Tool calls: `task_tool` (args {"case": X, "n": 0..2}) from three concurrent tasks, then `thread_tool`
    from a worker thread; usage 10 input + 5 output tokens. Random-length sleeps interleave the cases.
    """
    case_id = request["case_id"]
    trace.agent_call(f"root-{case_id}")
    trace.step(f"start-{case_id}")
    delay = (sum(map(ord, case_id)) % 7) / 1000

    async def sub_task(n: int) -> None:
        await asyncio.sleep(delay * n)
        trace.tool_call("task_tool", {"case": case_id, "n": n}, agent=f"root-{case_id}", result=n)

    await asyncio.gather(*(sub_task(n) for n in range(3)))

    def in_thread() -> None:
        time.sleep(delay)
        trace.tool_call("thread_tool", {"case": case_id}, agent=f"root-{case_id}")

    await asyncio.to_thread(in_thread)
    trace.record_usage(input_tokens=10, output_tokens=5)
    trace.step(f"end-{case_id}")
    return {"response": f"traced {case_id}"}


def sync_traced(request: dict[str, Any]) -> dict[str, Any]:
    trace.agent_call("sync_root")
    trace.step("sync_step")
    trace.tool_call("sync_tool", {"query": request["query"]})
    return {"response": "sync traced", "tool_calls": [{"name": "returned_tool"}]}


def history_echo(request: dict[str, Any]) -> dict[str, Any]:
    summary = [[m["role"], m.get("content")] for m in request["history"]]
    return {**scripted_answer(request), "response": json.dumps(summary)}


def scripted_agent(script: Mapping[str, dict[str, Any] | str]) -> Callable[[dict[str, Any]], dict[str, Any] | str]:
    """An agent answering each query from `script` (a dict output or a response string).

    An unscripted query gets an `error` output naming it, so a test sees a clear `agent_error`.
    """

    def agent(request: dict[str, Any]) -> dict[str, Any] | str:
        answer = script.get(request["query"])
        if answer is None:
            return {"error": f"no scripted answer for query {request['query']!r}"}
        return dict(answer) if isinstance(answer, dict) else answer

    return agent


# --- an Agent-protocol object ----------------------------------------------------------------------------------

Handler = Callable[[AgentRequest], Awaitable[AgentOutput]]


async def _echo_handler(request: AgentRequest) -> AgentOutput:
    return AgentOutput.model_validate(scripted_answer(request.model_dump(mode="json")))


class FakeAgent:
    """An `Agent` with a pluggable async handler (default: the scripted answer); records what it saw.

    The handler may raise `AgentFailure` to script failures. `peak_concurrency` is the most turns that were
    running at once, `requests` every request in arrival order.
    """

    def __init__(self, handler: Handler | None = None, *, name: str = "fake") -> None:
        self.handler = handler or _echo_handler
        self.name = name
        self.requests: list[AgentRequest] = []
        self.started = 0
        self.closed = 0
        self.running = 0
        self.peak_concurrency = 0

    @property
    def target(self) -> AgentTarget:
        return AgentTarget(kind="python", target=f"fake:{self.name}", config_hash="fake")

    async def start(self) -> None:
        self.started += 1

    async def run_turn(self, request: AgentRequest) -> AgentOutput:
        self.requests.append(request)
        self.running += 1
        self.peak_concurrency = max(self.peak_concurrency, self.running)
        try:
            return await self.handler(request)
        finally:
            self.running -= 1

    async def aclose(self) -> None:
        self.closed += 1
