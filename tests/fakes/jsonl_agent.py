"""A subprocess agent speaking evalward's JSON-lines protocol, scriptable for tests.

Run it through the subprocess runner: `make_agent(target("--garbage"))`, where `target(*flags)` builds
`cmd:<python> <this file> <flags>`. It reads `{"id", "request"}` lines from stdin and answers
`{"id", "output"}` lines on stdout, each request in its own thread, so answers may come out of order.

Process-wide behaviour, from argv (or the same flags in the `JSONL_AGENT_ARGS` environment variable):

| flag | behaviour |
| --- | --- |
| `--crash-on QUERY` | on a request with this query: write `fatal: crash requested` to stderr, exit with code 3 |
| `--hang-on QUERY` | never answer requests with this query |
| `--error-on QUERY` | answer `{"id", "error": "refused QUERY", "retryable": false}` |
| `--garbage` | before each answer print a non-JSON line, a JSON line without id and one with an unknown id |
| `--reverse-batch N` | hold answers until N requests arrived, then answer them in reverse order |
| `--exit-at-start CODE` | write `cannot start` to stderr and exit with CODE before reading anything |
| `--spawn-log PATH` | append this process's pid to PATH at start (to count restarts) |
| `--stderr-noise N` | write N numbered lines to stderr at start (`noise 0`, `noise 1`, …) |
| `--report-pid` | add `"pid": <process id>` to every output (it lands in `AgentOutput.outputs`) |

Per request, from the turn's `inputs` (see `answers.py` for the answer itself): `sleep_s` delays the
answer; `protocol_error` answers with an `error` line (`retryable` from `inputs.retryable`).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def target(*flags: str) -> str:
    """The `cmd:` target that runs this fake with `flags` under the current Python interpreter."""
    return "cmd:" + shlex.join([sys.executable, str(HERE / "jsonl_agent.py"), *flags])


def _options(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--crash-on", action="append", default=[])
    parser.add_argument("--hang-on", action="append", default=[])
    parser.add_argument("--error-on", action="append", default=[])
    parser.add_argument("--garbage", action="store_true")
    parser.add_argument("--reverse-batch", type=int, default=0)
    parser.add_argument("--exit-at-start", type=int, default=None)
    parser.add_argument("--spawn-log", default=None)
    parser.add_argument("--stderr-noise", type=int, default=0)
    parser.add_argument("--report-pid", action="store_true")
    return parser.parse_args(argv + shlex.split(os.environ.get("JSONL_AGENT_ARGS", "")))


class Agent:
    def __init__(self, options: argparse.Namespace) -> None:
        self.options = options
        self.write_lock = threading.Lock()
        self.held: list[dict[str, Any]] = []

    def write(self, payload: Any) -> None:
        line = payload if isinstance(payload, str) else json.dumps(payload)
        with self.write_lock:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

    def answer_line(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """The answer for one request line, or None to stay silent."""
        from answers import scripted_answer

        request = message["request"]
        query = request.get("query")
        inputs = request.get("inputs") or {}
        if query in self.options.crash_on:
            sys.stderr.write(f"fatal: crash requested on {query!r}\n")
            sys.stderr.flush()
            os._exit(3)
        if query in self.options.hang_on:
            return None
        time.sleep(float(inputs.get("sleep_s", 0)))
        if query in self.options.error_on:
            return {"id": message["id"], "error": f"refused {query}", "retryable": False}
        if "protocol_error" in inputs:
            return {"id": message["id"], "error": inputs["protocol_error"], "retryable": bool(inputs.get("retryable"))}
        output = scripted_answer(request)
        if self.options.report_pid:
            output["pid"] = os.getpid()
        return {"id": message["id"], "output": output}

    def respond(self, message: dict[str, Any]) -> None:
        answer = self.answer_line(message)
        if answer is None:
            return
        if self.options.garbage:
            self.write("this line is not JSON")
            self.write({"note": "a JSON line without an id"})
            self.write({"id": "nobody-asked", "output": {"response": "stray"}})
        self.write(answer)

    def serve(self) -> None:
        for raw in sys.stdin:
            if not raw.strip():
                continue
            message = json.loads(raw)
            if self.options.reverse_batch:
                self.held.append(message)
                if len(self.held) >= self.options.reverse_batch:
                    batch, self.held = self.held, []
                    for held in reversed(batch):
                        self.respond(held)
                continue
            threading.Thread(target=self.respond, args=(message,), daemon=True).start()


def main() -> None:
    options = _options(sys.argv[1:])
    sys.path.insert(0, str(HERE))
    if options.spawn_log:
        with open(options.spawn_log, "a", encoding="utf-8") as log:
            log.write(f"{os.getpid()}\n")
    for n in range(options.stderr_noise):
        sys.stderr.write(f"noise {n}\n")
    sys.stderr.flush()
    if options.exit_at_start is not None:
        sys.stderr.write("cannot start\n")
        sys.stderr.flush()
        sys.exit(options.exit_at_start)
    Agent(options).serve()


if __name__ == "__main__":
    main()
