"""Serve any agent target over the `cmd:` JSON-lines protocol, in a process of its own.

    python -m evalward.runners.jsonl_server TARGET [--options JSON] [--check]

Why: the gate runs a pull request's base side in the same job as its head (docs/gate.md §9). Both sides'
Python agents have the same module names (`my_agent.agent`), and one interpreter can hold only one module
per name, so the base side's agent runs here, in its own interpreter, with the base checkout as its
working directory, and evalward talks to it exactly as to any `cmd:` agent (`runners/process.py`: requests
`{"id", "request"}` on stdin, answers `{"id", "output"}` or `{"id", "error", "retryable"}` on stdout, in
any order, several in flight).

`--options` is the JSON of the `openai:` runner options (system prompt, tools, max steps); `--check` only
starts the agent and stops it: exit 0 when it loads, else the reason on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any, TextIO

from evalward.model import AgentRequest
from evalward.runners import make_agent
from evalward.runners.agent_contract import Agent, AgentFailure, AgentStartError

EXIT_CANNOT_START = 2


async def _answer(agent: Agent, message: dict[str, Any], out: TextIO, lock: asyncio.Lock) -> None:
    request_id = message.get("id")
    reply: dict[str, Any]
    try:
        request = AgentRequest.model_validate(message.get("request") or {})
        output = await agent.run_turn(request)
        reply = {"id": request_id, "output": output.model_dump(mode="json", exclude_none=True)}
    except AgentFailure as exc:
        reply = {"id": request_id, "error": f"{exc.kind}: {exc.message}", "retryable": exc.retryable}
    except Exception as exc:  # the agent's own bug: an error for this turn, never the server's death
        reply = {"id": request_id, "error": f"{type(exc).__name__}: {exc}", "retryable": False}
    line = json.dumps(reply, ensure_ascii=False, default=str)
    async with lock:
        out.write(line + "\n")
        out.flush()


async def serve(agent: Agent, stdin: TextIO, stdout: TextIO) -> None:
    """Answer every request line until stdin closes, then wait for the turns in flight and stop the agent."""
    loop = asyncio.get_running_loop()
    lock = asyncio.Lock()
    tasks: set[asyncio.Task[None]] = set()
    try:
        while True:
            line = await loop.run_in_executor(None, stdin.readline)
            if not line:
                break
            try:
                message = json.loads(line)
            except json.JSONDecodeError:
                print(f"jsonl_server: ignoring a line that is not JSON: {line[:200]!r}", file=sys.stderr)
                continue
            if not isinstance(message, dict) or "id" not in message:
                print("jsonl_server: ignoring a message without an id", file=sys.stderr)
                continue
            task = asyncio.create_task(_answer(agent, message, stdout, lock))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        await agent.aclose()


async def _main(target: str, options: dict[str, Any], check: bool) -> int:
    try:
        agent = make_agent(target, cwd=Path.cwd(), openai_options=options)
        await agent.start()
    except (AgentStartError, Exception) as exc:
        print(f"the agent {target!r} could not start in {Path.cwd()}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_CANNOT_START
    if check:
        await agent.aclose()
        return 0
    await serve(agent, sys.stdin, sys.stdout)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m evalward.runners.jsonl_server", description=__doc__.splitlines()[0]
    )
    parser.add_argument("target", help="an evalward agent target, e.g. my_agent.agent:run")
    parser.add_argument("--options", default="{}", help="JSON of the openai: runner options")
    parser.add_argument("--check", action="store_true", help="only check that the agent starts")
    args = parser.parse_args(argv)
    try:
        options = json.loads(args.options)
    except json.JSONDecodeError as exc:
        print(f"--options is not JSON: {exc}", file=sys.stderr)
        return EXIT_CANNOT_START
    return asyncio.run(_main(args.target, options if isinstance(options, dict) else {}, args.check))


if __name__ == "__main__":
    sys.exit(main())
