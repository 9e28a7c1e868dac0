"""Run an agent as long-lived subprocess(es) speaking JSON lines: target `cmd:COMMAND ARGS`.

The protocol
------------
The command (split like a shell would, with `shlex`, but run without a shell) is started once, at
`start()`, and serves every turn of the run. Messages are UTF-8 JSON objects, one per line.

evalward → agent (stdin), one line per turn to run::

    {"id": "<request id>", "request": {"case_id": ..., "turn": 0, "query": ..., "inputs": {...},
                                      "history": [...], "session_id": ..., "session_state": {...},
                                      "repetition": 0}}

agent → evalward (stdout), one line per answer, carrying the same id::

    {"id": "<request id>", "output": {"response": ..., "tool_calls": [{"name": ..., "args": {...}}], ...}}
    {"id": "<request id>", "error": "what went wrong", "retryable": false}

- Several requests may be outstanding at once (the executor runs cases concurrently); the agent may
  answer them in any order. An agent that handles one request at a time is also correct, only slower.
- `output` is an `AgentOutput` (see `evalward.model.AgentOutput`); unknown keys are kept in `outputs`.
  An `output` that does not fit fails the turn as `malformed_output`, naming the field.
- `error` fails the turn as `agent_error`; `"retryable": true` lets the executor retry it.
- stdout lines that are not JSON objects with an `id` (stray prints, logging) are logged and ignored.
  A JSON line with an id nobody waits for (a late answer after a timeout) is ignored (debug log).
  Send logs to stderr: its last 50 lines are kept and shown when the process dies.
- stdin closing means "shut down": exit promptly. After a grace period evalward terminates, then kills.
- `PYTHONUNBUFFERED=1` is set for the child (unless `env` overrides it) so Python agents need no flush.

Failures
--------
If the process dies, every request in flight on it fails as `crash` with its exit code (or signal) and
the tail of its stderr. The next request starts a new process. If a process dies
`MAX_CONSECUTIVE_DEATHS` times in a row without answering anything in between (it crashes at start-up),
it is not restarted again and further requests on it fail at once. A crash is not retried by the executor:
the request in flight may well be what crashes it. A command that cannot be found or executed raises
`AgentStartError` at `start()`.

With `processes=N`, N processes run side by side and each request goes to the least busy one
(round-robin among equally busy ones).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import shlex
import signal
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalward import cpu_placement
from evalward.errors import UsageError
from evalward.model import AgentOutput, AgentRequest, AgentTarget, canonical_hash
from evalward.redact import mask_command_text
from evalward.runners.agent_contract import AgentFailure, AgentStartError
from evalward.runners.outputs import coerce_output, snippet

logger = logging.getLogger(__name__)

STDERR_TAIL_LINES = 50
"""stderr lines kept per process for crash messages."""

MAX_CONSECUTIVE_DEATHS = 3
"""Deaths in a row (with no answer in between) after which a process slot is not restarted."""

LINE_LIMIT_BYTES = 64 * 1024 * 1024
"""Longest stdout/stderr line accepted (asyncio's default of 64 KiB is too small for big outputs)."""

SHUTDOWN_GRACE_S = 3.0
"""How long a process may take to exit after its stdin is closed, and again after SIGTERM."""

MAX_WARNED_STRAY_LINES = 5
"""Stray stdout lines logged as warnings per process; later ones are logged at debug level."""


def parse_command(target: str) -> list[str]:
    """`cmd:python agent.py --fast` → `["python", "agent.py", "--fast"]`; UsageError when empty or unparsable."""
    text = target.removeprefix("cmd:").strip()
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        raise UsageError(f"agent target {target!r}: cannot split the command ({exc})") from None
    if not argv:
        raise UsageError(f"agent target {target!r}: no command after `cmd:` (e.g. `cmd:python my_agent.py`)")
    return argv


def _describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"signal {signal.Signals(-returncode).name}"
        except ValueError:
            return f"signal {-returncode}"
    return f"exit code {returncode}"


class _Process:
    """One running child process: its pending requests, its stderr tail and how it ended."""

    def __init__(self, proc: asyncio.subprocess.Process, slot: _Slot) -> None:
        self.proc = proc
        self.slot = slot
        self.pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self.alive = True
        self.exit_message: str | None = None
        self.stray_lines = 0
        self.write_lock = asyncio.Lock()
        self.stderr_task = asyncio.create_task(self._read_stderr())
        self.stdout_task = asyncio.create_task(self._read_stdout())

    async def _read_stderr(self) -> None:
        stream = self.proc.stderr
        assert stream is not None
        while True:
            try:
                raw = await stream.readline()
            except ValueError:
                self.stderr_tail.append("[evalward: an over-long stderr line was dropped]")
                continue
            if not raw:
                return
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            self.stderr_tail.append(line)
            logger.debug("agent pid %s stderr: %s", self.proc.pid, line)

    async def _read_stdout(self) -> None:
        stream = self.proc.stdout
        assert stream is not None
        while True:
            try:
                raw = await stream.readline()
            except ValueError:
                logger.warning(
                    "agent pid %s wrote a stdout line over %d bytes; dropped", self.proc.pid, LINE_LIMIT_BYTES
                )
                continue
            if not raw:
                break
            self._handle_line(raw.decode("utf-8", "replace").strip())
        await self._on_exit()

    def _handle_line(self, line: str) -> None:
        if not line:
            return
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        if not isinstance(message, dict) or "id" not in message:
            self.stray_lines += 1
            log = logger.warning if self.stray_lines <= MAX_WARNED_STRAY_LINES else logger.debug
            log("agent pid %s: ignored a stdout line that is not a protocol answer: %s", self.proc.pid, snippet(line))
            return
        future = self.pending.get(str(message["id"]))
        if future is None:
            logger.debug("agent pid %s answered unknown or expired request id %r", self.proc.pid, message["id"])
            return
        self.slot.consecutive_deaths = 0
        if not future.done():
            future.set_result(message)

    async def _on_exit(self) -> None:
        self.alive = False
        try:
            returncode = await asyncio.wait_for(self.proc.wait(), SHUTDOWN_GRACE_S)
        except TimeoutError:
            # stdout closed but the process lingers: it can no longer answer, so it is ended.
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            returncode = await self.proc.wait()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self.stderr_task), 1.0)
        tail = "\n".join(self.stderr_tail)
        self.exit_message = (
            f"the agent process (pid {self.proc.pid}, `{shlex.join(self.slot.argv)}`) exited with "
            f"{_describe_exit(returncode)}" + (f"; last stderr lines:\n{tail}" if tail else "; stderr was empty")
        )
        if not self.slot.closing:
            self.slot.consecutive_deaths += 1
            logger.warning("%s", self.exit_message)
        failure_message = f"{self.exit_message}\n(the request was in flight when the process died)"
        for future in self.pending.values():
            if not future.done():
                future.set_exception(AgentFailure("crash", failure_message))
        self.pending.clear()

    async def request(self, request_id: str, request: AgentRequest) -> dict[str, Any]:
        """Send one request and wait for its answer (or for the process to die)."""
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        # Registered before writing, while `alive` is known true: a death from here on fails this future.
        self.pending[request_id] = future
        line = json.dumps({"id": request_id, "request": request.model_dump(mode="json")}, ensure_ascii=False) + "\n"
        stdin = self.proc.stdin
        assert stdin is not None
        try:
            try:
                async with self.write_lock:
                    stdin.write(line.encode("utf-8"))
                    await stdin.drain()
            except (BrokenPipeError, ConnectionResetError):
                # The process is dying; its exit handler fails `future` with the exit code and stderr.
                pass
            return await future
        finally:
            self.pending.pop(request_id, None)

    async def close(self) -> None:
        stdin = self.proc.stdin
        if stdin is not None and not stdin.is_closing():
            stdin.close()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                await stdin.wait_closed()
        for stop in (None, self.proc.terminate, self.proc.kill):
            if stop is not None and self.proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    stop()
            try:
                await asyncio.wait_for(self.proc.wait(), SHUTDOWN_GRACE_S)
                break
            except TimeoutError:
                continue
        await asyncio.gather(self.stdout_task, self.stderr_task, return_exceptions=True)


class _Slot:
    """One place in the pool: the current process and its restart bookkeeping."""

    def __init__(self, agent: SubprocessAgent, index: int) -> None:
        self.agent = agent
        self.index = index
        self.argv = agent.argv
        self.process: _Process | None = None
        self.consecutive_deaths = 0
        self.spawns = 0
        self.closing = False
        self.lock = asyncio.Lock()

    @property
    def busy(self) -> int:
        return len(self.process.pending) if self.process is not None and self.process.alive else 0

    async def ensure_running(self) -> _Process:
        async with self.lock:
            current = self.process
            if current is not None and current.alive:
                return current
            if current is not None:
                if self.consecutive_deaths >= MAX_CONSECUTIVE_DEATHS:
                    raise AgentFailure(
                        "crash",
                        f"the agent process died {self.consecutive_deaths} times in a row without answering; "
                        f"not restarting it. Last exit: {current.exit_message}",
                    )
                # Reap the dead process's reader tasks before replacing it.
                await asyncio.gather(current.stdout_task, current.stderr_task, return_exceptions=True)
            self.process = await self.agent.spawn(self)
            return self.process


class SubprocessAgent:
    """A pool of long-lived processes speaking the JSON-lines protocol (module docstring)."""

    def __init__(
        self, target: str, *, cwd: Path | None = None, env: Mapping[str, str] | None = None, processes: int = 1
    ) -> None:
        if processes < 1:
            raise UsageError(f"agent processes must be at least 1; found {processes}")
        self._target_text = target if target.startswith("cmd:") else f"cmd:{target}"
        self.argv = parse_command(self._target_text)
        self._cwd = cwd
        self._env = dict(env or {})
        self._slots = [_Slot(self, i) for i in range(processes)]
        self._ids = itertools.count(1)
        self._next_slot = 0
        self._started = False

    @property
    def target(self) -> AgentTarget:
        return AgentTarget(
            kind="subprocess",
            target=mask_command_text(self._target_text),
            config_hash=canonical_hash({"kind": "subprocess", "argv": self.argv, "env": sorted(self._env)}),
        )

    @property
    def spawn_count(self) -> int:
        """Processes started so far (the first ones plus restarts)."""
        return sum(slot.spawns for slot in self._slots)

    async def spawn(self, slot: _Slot) -> _Process:
        env = {**os.environ, "PYTHONUNBUFFERED": "1", **self._env}
        try:
            proc = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=self._cwd,
                env=env,
                limit=LINE_LIMIT_BYTES,
            )
            cpu_placement.release(proc.pid)  # the agent's process may use every CPU, the writer's too
        except FileNotFoundError as exc:
            where = f" (working directory {self._cwd})" if self._cwd else ""
            raise AgentStartError(
                f"agent command not found: {self.argv[0]!r}{where}; check the `cmd:` target and PATH ({exc})"
            ) from exc
        except PermissionError as exc:
            raise AgentStartError(f"agent command {self.argv[0]!r} is not executable ({exc})") from exc
        except OSError as exc:
            raise AgentStartError(f"agent command {shlex.join(self.argv)!r} could not be started: {exc}") from exc
        slot.spawns += 1
        logger.debug("started agent process pid %s (slot %d): %s", proc.pid, slot.index, shlex.join(self.argv))
        return _Process(proc, slot)

    async def start(self) -> None:
        if self._started:
            return
        self._started = True
        for slot in self._slots:
            await slot.ensure_running()

    def _pick_slot(self) -> _Slot:
        """The least busy slot; among equals, the next one in round-robin order."""
        count = len(self._slots)
        order = [self._slots[(self._next_slot + i) % count] for i in range(count)]
        chosen = min(order, key=lambda slot: slot.busy)
        self._next_slot = (chosen.index + 1) % count
        return chosen

    async def run_turn(self, request: AgentRequest) -> AgentOutput:
        slot = self._pick_slot()
        request_id = f"{request.case_id}#{request.repetition}.{request.turn}/{next(self._ids)}"
        while True:
            try:
                process = await slot.ensure_running()
            except AgentStartError as exc:
                raise AgentFailure("crash", f"the agent process could not be restarted: {exc}") from exc
            if process.alive:
                break
        answer = await process.request(request_id, request)
        return _interpret(answer)

    async def aclose(self) -> None:
        for slot in self._slots:
            slot.closing = True
        await asyncio.gather(*(slot.process.close() for slot in self._slots if slot.process is not None))


def _interpret(answer: dict[str, Any]) -> AgentOutput:
    """An answer line's `output` as an AgentOutput, or its `error` as an AgentFailure."""
    if answer.get("error") is not None:
        raise AgentFailure(
            "agent_error", f"the agent reported an error: {answer['error']}", retryable=answer.get("retryable") is True
        )
    if "output" not in answer:
        raise AgentFailure(
            "malformed_output",
            f"malformed answer line: expected an `output` or `error` key next to `id`; found keys {sorted(answer)}",
        )
    return coerce_output(answer["output"])
