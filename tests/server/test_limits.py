"""Connection limits of `evalward serve` (issue #31, row 4), on a real socket with the production uvicorn
configuration (`listen.uvicorn_config`): a deadline and a size for request headers, and a connection cap.

Before: 300 connections sending one header byte every 2 s were all still open after 20 s — uvicorn times
out idle keep-alive connections, never a request whose headers trickle in.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.server.conftest import make_settings
from tests.server.production import ProductionServer, connect, head, read_answer, serve

from evalward.store import open_store

HEADER_TIMEOUT_S = 1.0


@contextlib.contextmanager
def start(tmp_path: Path, **overrides: Any) -> Iterator[ProductionServer]:
    db = f"sqlite:///{tmp_path / 'server.db'}"
    with open_store(db) as store, serve(make_settings(db, **overrides), store) as live:
        yield live


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ProductionServer]:
    with start(tmp_path, header_timeout_s=HEADER_TIMEOUT_S) as live:
        yield live


def wait_until(condition: Any, *, within_s: float = 10.0) -> None:
    deadline = time.monotonic() + within_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_connections_trickling_their_headers_are_closed_at_the_header_deadline(server: ProductionServer) -> None:
    """300 connections each send a header byte every 0.2 s — ten times the brief's rate, so no inactivity
    timeout could catch them: every one is answered 408 and closed once its headers are 1 s late."""
    count = 300
    text = head("GET", "/healthz", {"X-Padding": "p" * 200})
    selector = selectors.DefaultSelector()
    opened: dict[socket.socket, float] = {}
    closed_after: dict[socket.socket, float] = {}
    answers: dict[socket.socket, bytes] = {}
    with ExitStack() as stack:
        for _ in range(count):
            sock = stack.enter_context(connect(server.port))
            sock.setblocking(False)
            opened[sock] = time.monotonic()
            selector.register(sock, selectors.EVENT_READ)
        stack.callback(selector.close)
        position = 0
        deadline = time.monotonic() + 8 * HEADER_TIMEOUT_S
        next_byte = time.monotonic()
        with httpx.Client(base_url=server.url, timeout=10) as http:
            while len(closed_after) < count and time.monotonic() < deadline:
                if time.monotonic() >= next_byte and position < len(text) - 4:  # never the final CRLF CRLF
                    for sock in opened.keys() - closed_after.keys():
                        with contextlib.suppress(OSError):  # closed by the server: read below
                            sock.send(text[position : position + 1])
                    position += 1
                    next_byte += 0.2
                    # The server keeps answering everyone else meanwhile.
                    assert http.get("/healthz").status_code == 200
                for key, _ in selector.select(timeout=0.05):
                    sock = key.fileobj  # type: ignore[assignment]
                    try:
                        data = sock.recv(65536)
                    except OSError:
                        data = b""
                    answers[sock] = answers.get(sock, b"") + data
                    if not data:
                        closed_after[sock] = time.monotonic() - opened[sock]
                        selector.unregister(sock)
    assert len(closed_after) == count, f"{count - len(closed_after)} slow connections are still open"
    assert all(answer.startswith(b"HTTP/1.1 408 Request Timeout") for answer in answers.values())
    assert b"the request headers did not arrive within 1 s" in next(iter(answers.values()))
    seconds = sorted(closed_after.values())
    # Not before the deadline; well before the 20 s the brief measured (the slack is for a loaded machine).
    assert seconds[0] >= HEADER_TIMEOUT_S * 0.9 and seconds[-1] < HEADER_TIMEOUT_S + 5, (seconds[0], seconds[-1])


def test_the_next_request_on_a_kept_alive_connection_has_the_same_deadline(server: ProductionServer) -> None:
    with connect(server.port) as sock:
        sock.sendall(head("GET", "/healthz", {}))
        status, headers, _, closed = read_answer(sock, close_wait_s=0.2)  # answered and kept open
        assert not closed
        assert status == 200 and headers.get("connection") != "close"
        started = time.monotonic()
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # ... and the rest never comes
        status, _, body, closed = read_answer(sock)
        assert (status, closed) == (408, True) and b"did not arrive" in body
        assert HEADER_TIMEOUT_S * 0.9 <= time.monotonic() - started < HEADER_TIMEOUT_S + 5


def test_oversized_headers_are_refused(server: ProductionServer) -> None:
    with connect(server.port) as sock:
        sock.sendall(head("GET", "/healthz", {"X-Big": "b" * 40_000}))
        status, _, _, closed = read_answer(sock)
        assert status in (400, 431) and closed  # h11 refuses first (400); the guard for httptools (431)


def test_a_connection_over_the_cap_is_answered_503_and_closed(tmp_path: Path) -> None:
    with start(tmp_path, max_connections=8, header_timeout_s=30) as server:
        with ExitStack() as stack:
            for _ in range(8):
                stack.enter_context(connect(server.port))
            wait_until(lambda: server.open_connections() == 8)
            with connect(server.port) as extra:
                status, _, body, closed = read_answer(extra)
                assert (status, closed) == (503, True) and b"8 connections open" in body
        # Once the idle ones are gone, the server is reachable again.
        wait_until(lambda: server.open_connections() == 0)
        assert httpx.get(f"{server.url}/healthz", timeout=10).status_code == 200


def test_the_serve_configuration_carries_the_limits() -> None:
    from evalward._server.listen import KEEP_ALIVE_S, HeaderGuard, uvicorn_config
    from evalward._server.settings import load_settings
    from evalward._server.tokens import hash_token

    env = {
        "EVALWARD_HEADER_TIMEOUT_S": "3",
        "EVALWARD_MAX_CONNECTIONS": "100",
        "EVALWARD_MAX_HEADER_BYTES": "8192",
        "EVALWARD_METRICS_TOKEN_HASHES": f"{hash_token('a')},{hash_token('b')}",
    }
    settings = load_settings(environ=env)
    assert settings.metrics_token_hashes == [hash_token("a"), hash_token("b")] and not settings.metrics_public
    config = uvicorn_config(object(), settings)
    assert issubclass(config.http, HeaderGuard)
    assert (config.http.header_timeout_s, config.http.max_connections, config.http.max_header_bytes) == (3, 100, 8192)
    assert (config.limit_concurrency, config.h11_max_incomplete_event_size) == (101, 8192)
    assert config.timeout_keep_alive == KEEP_ALIVE_S
