"""A real HTTP agent server on 127.0.0.1 (random port) with scripted answers, for the HTTP runner.

    with FakeHttpAgent() as server:
        agent = make_agent(server.url)
        ...
        assert server.requests[0]["query"] == "hi"

Every POST body (the AgentRequest JSON) is recorded in `requests`. What is answered, in order of precedence:

1. replies queued with `server.queue(Reply(...), ...)`, first in first out;
2. the `handler` given to the constructor (request dict → `Reply` or an output dict);
3. the default, driven by the turn's `inputs`:
   - `http_status` (int): answer that status with body `inputs.http_body` (default `"scripted failure"`)
     and, if given, header `Retry-After: inputs.retry_after`;
   - `fail_times` (int): the first N attempts of each session+turn get `503` with `Retry-After: 0`;
   - `garbage` (true): `200` with an HTML body (not JSON);
   - otherwise `200` with `answers.scripted_answer(request)`.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.fakes.answers import scripted_answer


@dataclass
class Reply:
    """One HTTP answer: a dict/list body is sent as JSON, str/bytes as is."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)

    def encode(self) -> tuple[bytes, str]:
        if isinstance(self.body, bytes):
            return self.body, "application/octet-stream"
        if isinstance(self.body, str):
            return self.body.encode("utf-8"), "text/plain; charset=utf-8"
        if self.body is None:
            return b"", "text/plain"
        return json.dumps(self.body).encode("utf-8"), "application/json"


Handler = Callable[[dict[str, Any]], "Reply | dict[str, Any]"]


class FakeHttpAgent:
    """A threaded HTTP server answering agent requests (rules in the module docstring)."""

    def __init__(self, handler: Handler | None = None) -> None:
        self.handler = handler
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []
        self._queued: deque[Reply] = deque()
        self._attempts: dict[tuple[str, int], int] = {}
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "start() the server first"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/agent"

    def queue(self, *replies: Reply) -> None:
        with self._lock:
            self._queued.extend(replies)

    def start(self) -> FakeHttpAgent:
        fake = self

        class RequestHandler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"null")
                reply = fake._reply(self.path, dict(self.headers), body)
                payload, content_type = reply.encode()
                self.send_response(reply.status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(payload)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), RequestHandler)
        self._server.daemon_threads = True
        # A short poll interval keeps `stop()` (which waits for the serve loop to notice) quick.
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeHttpAgent:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _reply(self, path: str, headers: dict[str, str], body: Any) -> Reply:
        with self._lock:
            self.requests.append(body)
            self.paths.append(path)
            self.headers.append(headers)
            if self._queued:
                return self._queued.popleft()
        if self.handler is not None:
            answer = self.handler(body)
            return answer if isinstance(answer, Reply) else Reply(body=answer)
        return self._default(body)

    def _default(self, request: dict[str, Any]) -> Reply:
        inputs = request.get("inputs") or {}
        if "http_status" in inputs:
            headers = {"Retry-After": str(inputs["retry_after"])} if "retry_after" in inputs else {}
            return Reply(int(inputs["http_status"]), inputs.get("http_body", "scripted failure"), headers)
        if "fail_times" in inputs:
            key = (request["session_id"], request["turn"])
            with self._lock:
                self._attempts[key] = attempt = self._attempts.get(key, 0) + 1
            if attempt <= int(inputs["fail_times"]):
                return Reply(503, "busy, try again", {"Retry-After": "0"})
        if inputs.get("garbage"):
            return Reply(200, "<html>definitely not json</html>")
        return Reply(body=scripted_answer(request))
