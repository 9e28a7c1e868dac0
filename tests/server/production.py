"""The app served as `evalward serve` serves it — the uvicorn configuration of `listen.uvicorn_config` (header
deadline and size, connection cap, keep-alive) on a real socket — and raw-socket clients that misbehave in
ways httpx will not: a body declared but never sent, headers trickled a byte at a time."""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator
from typing import Any

import uvicorn
from tests.server.live import LiveServer

from evalward._server.app import create_app
from evalward._server.listen import listening_socket, uvicorn_config
from evalward._server.settings import ServerSettings
from evalward.store import Store


class ProductionServer(LiveServer):
    """`LiveServer` with the production uvicorn configuration."""

    def __init__(self, app: Any, settings: ServerSettings) -> None:
        super().__init__(app)
        # The listening socket `evalward serve` makes (Nagle off on accepted connections, listen.py).
        self.sock.close()
        self.sock = listening_socket("127.0.0.1", 0)
        self.port = self.sock.getsockname()[1]
        self.server = uvicorn.Server(uvicorn_config(app, settings))

    def open_connections(self) -> int:
        return len(self.server.server_state.connections)


@contextlib.contextmanager
def serve(settings: ServerSettings, store: Store) -> Iterator[ProductionServer]:
    with ProductionServer(create_app(settings, store), settings) as server:
        yield server


def connect(port: int, *, timeout: float = 10.0) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def head(method: str, path: str, headers: dict[str, str]) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def read_answer(
    sock: socket.socket, *, deadline_s: float = 10.0, close_wait_s: float | None = None
) -> tuple[int, dict[str, str], bytes, bool]:
    """(status, headers, body, closed): one HTTP/1.1 answer read from `sock` within `deadline_s`, and whether
    the server then closed the connection (EOF or reset within `close_wait_s`, by default `deadline_s`)."""
    sock.settimeout(deadline_s)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError(f"the connection closed before an answer: {data!r}")
        data += chunk
    raw_head, _, body = data.partition(b"\r\n\r\n")
    status_line, *header_lines = raw_head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in header_lines)}
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    closed = False
    end = time.monotonic() + (deadline_s if close_wait_s is None else close_wait_s)
    while time.monotonic() < end:
        try:
            sock.settimeout(max(0.01, end - time.monotonic()))
            if not sock.recv(65536):
                closed = True
                break
        except (ConnectionResetError, BrokenPipeError):
            closed = True
            break
        except TimeoutError:
            break
    return int(status_line.split()[1]), headers, body[:length], closed
