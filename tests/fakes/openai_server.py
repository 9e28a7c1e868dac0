"""A fake OpenAI-compatible chat-completions server on a real socket (127.0.0.1, random port).

Speaks what evalward's judges and `openai:` agent runner send through the real `openai` client:
- `POST /v1/chat/completions` with `messages`, `tools` / `tool_choice`, and `response_format`
  `{type: json_schema, json_schema: {name, schema, strict}}` or `{type: json_object}`; it checks the
  shapes the real API checks (roles, tool messages answering a preceding assistant's `tool_calls`, tool
  declarations, json_schema names) and answers 400 with an OpenAI error body otherwise;
- `GET /v1/models` listing `models`.

Scripting (per test): `reply(...)` queues replies answered in order; `responder = fn(request) -> Reply`
answers when the queue is empty. A `Reply` is text, tool calls (`ToolCallReply`), a JSON object (sent as
text content), or an HTTP error. Every reply carries usage tokens (default 10 in / 5 out).
Faults: `fail_next(status, count, retry_after=..., retry_after_ms=..., should_retry=...)` answers the next
`count` completions with that status and those headers (`retry-after`, `retry-after-ms`, `x-should-retry`); `reject_json_schema = True` answers json_schema response
formats with 400 ("response_format json_schema is not supported"), as servers without structured output do.
`requests` records every request (path, JSON body, whether an Authorization header came — never its value —
and when it arrived, on the monotonic clock, so tests can measure the waits between retries).
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class ToolCallReply:
    name: str
    arguments: dict[str, Any]
    id: str | None = None


@dataclass
class Reply:
    """One scripted answer."""

    content: str | None = None
    tool_calls: list[ToolCallReply] = field(default_factory=list)
    status: int = 200
    error_message: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    prompt_tokens: int = 10
    completion_tokens: int = 5

    @classmethod
    def text(cls, content: str, **kwargs: Any) -> Reply:
        return cls(content=content, **kwargs)

    @classmethod
    def json(cls, value: Any, **kwargs: Any) -> Reply:
        return cls(content=json.dumps(value), **kwargs)

    @classmethod
    def calls(cls, *calls: ToolCallReply, content: str | None = None, **kwargs: Any) -> Reply:
        return cls(content=content, tool_calls=list(calls), **kwargs)

    @classmethod
    def error(cls, status: int, message: str = "", headers: dict[str, str] | None = None) -> Reply:
        return cls(status=status, error_message=message or f"fake error {status}", headers=dict(headers or {}))


@dataclass
class RecordedRequest:
    method: str
    path: str
    body: dict[str, Any] | None
    authorized: bool
    status: int = 0
    arrived: float = 0.0
    """`time.monotonic()` when the request arrived."""


class FakeOpenAI:
    """The server; use as a context manager. `base_url` ends in `/v1` as the `openai` client expects."""

    def __init__(self, models: list[str] | None = None, *, keep_alive: bool = True) -> None:
        self.models = list(models or ["judge-model", "agent-model"])
        # False: every response closes its connection, so a client whose pooled connections outlive the event
        # loop that opened them (pydantic-ai caches one httpx client per provider) leaves no socket behind.
        self.keep_alive = keep_alive
        self.queue: deque[Reply] = deque()
        self.responder: Callable[[dict[str, Any]], Reply] | None = None
        self.reject_json_schema = False
        self.requests: list[RecordedRequest] = []
        self._faults: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._counter = 0

    # --- scripting ---------------------------------------------------------------------------------------------

    def reply(self, *replies: Reply) -> None:
        with self._lock:
            self.queue.extend(replies)

    def fail_next(
        self,
        status: int,
        count: int = 1,
        *,
        retry_after: str | None = None,
        retry_after_ms: str | None = None,
        should_retry: bool | None = None,
    ) -> None:
        headers: dict[str, str] = {}
        if retry_after is not None:
            headers["retry-after"] = retry_after
        if retry_after_ms is not None:
            headers["retry-after-ms"] = retry_after_ms
        if should_retry is not None:
            headers["x-should-retry"] = "true" if should_retry else "false"
        with self._lock:
            self._faults.extend(Reply.error(status, headers=headers) for _ in range(count))

    def completions(self) -> list[RecordedRequest]:
        """Chat-completion requests received (failed ones included)."""
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    # --- lifecycle ---------------------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def __enter__(self) -> FakeOpenAI:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_args: Any) -> None:
                pass

            def do_GET(self) -> None:
                fake._handle(self, "GET")

            def do_POST(self) -> None:
                fake._handle(self, "POST")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    # --- protocol ----------------------------------------------------------------------------------------------

    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length) if length else b""
        body: dict[str, Any] | None = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
        record = RecordedRequest(
            method, handler.path, body, bool(handler.headers.get("authorization")), arrived=time.monotonic()
        )
        with self._lock:
            self.requests.append(record)
        if method == "GET" and handler.path.rstrip("/").endswith("/v1/models"):
            data = {"object": "list", "data": [{"id": m, "object": "model", "owned_by": "fake"} for m in self.models]}
            self._send(handler, record, 200, data)
            return
        if method != "POST" or not handler.path.rstrip("/").endswith("/v1/chat/completions"):
            self._send(handler, record, 404, _error("not found", "invalid_request_error"))
            return
        if body is None:
            self._send(handler, record, 400, _error("the body is not JSON", "invalid_request_error"))
            return
        problem = self._check(body)
        if problem is not None:
            self._send(handler, record, 400, _error(problem, "invalid_request_error"))
            return
        with self._lock:
            fault = self._faults.popleft() if self._faults else None
        if fault is not None:
            self._send(handler, record, fault.status, _error(fault.error_message, "server_error"), fault.headers)
            return
        reply = self._next(body)
        if reply.status != 200:
            self._send(handler, record, reply.status, _error(reply.error_message, "server_error"), reply.headers)
            return
        self._send(handler, record, 200, self._completion(body, reply), reply.headers)

    def _next(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if self.queue:
                return self.queue.popleft()
        if self.responder is not None:
            return self.responder(body)
        return Reply.error(500, "the fake has no scripted reply left")

    def _check(self, body: dict[str, Any]) -> str | None:
        if not isinstance(body.get("model"), str) or not body["model"]:
            return "you must provide a model parameter"
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return "'messages' must be a non-empty array"
        open_calls: set[str] = set()
        for index, message in enumerate(messages):
            role = message.get("role") if isinstance(message, dict) else None
            if role not in ("system", "developer", "user", "assistant", "tool"):
                return f"messages[{index}].role: invalid value {role!r}"
            if role == "assistant" and message.get("tool_calls"):
                for call in message["tool_calls"]:
                    function = call.get("function") or {}
                    if call.get("type") != "function" or not isinstance(function.get("arguments"), str):
                        return f"messages[{index}].tool_calls: each needs type 'function' and string arguments"
                    open_calls.add(call.get("id"))
            elif role == "tool":
                if message.get("tool_call_id") not in open_calls:
                    return (
                        f"messages[{index}]: messages with role 'tool' must be a response to a preceding message "
                        "with 'tool_calls'"
                    )
            elif role != "assistant":
                open_calls = set()
        for index, tool in enumerate(body.get("tools") or []):
            function = tool.get("function") if isinstance(tool, dict) else None
            if tool.get("type") != "function" or not isinstance(function, dict) or not function.get("name"):
                return f"tools[{index}]: expected {{type: 'function', function: {{name, parameters}}}}"
        fmt = body.get("response_format")
        if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
            if self.reject_json_schema:
                return "response_format json_schema is not supported by this model"
            schema = fmt.get("json_schema") or {}
            if not schema.get("name") or not isinstance(schema.get("schema"), dict):
                return "response_format.json_schema needs a name and a schema"
        return None

    def _completion(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        with self._lock:
            self._counter += 1
            number = self._counter
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.id or f"call_{number}_{index}",
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                }
                for index, call in enumerate(reply.tool_calls)
            ]
        return {
            "id": f"chatcmpl-{number}",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": body["model"],
            "choices": [
                {"index": 0, "message": message, "finish_reason": "tool_calls" if reply.tool_calls else "stop"}
            ],
            "usage": {
                "prompt_tokens": reply.prompt_tokens,
                "completion_tokens": reply.completion_tokens,
                "total_tokens": reply.prompt_tokens + reply.completion_tokens,
            },
        }

    def _send(
        self,
        handler: BaseHTTPRequestHandler,
        record: RecordedRequest,
        status: int,
        data: dict[str, Any],
        headers: dict[str, str] | None = None,
    ) -> None:
        record.status = status
        payload = json.dumps(data).encode()
        handler.send_response(status)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(payload)))
        for key, value in (headers or {}).items():
            handler.send_header(key, value)
        if not self.keep_alive:
            handler.send_header("connection", "close")
            handler.close_connection = True
        handler.end_headers()
        handler.wfile.write(payload)


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}
