"""The listening socket `evalward serve` opens before the app starts.

The socket is created with an explicit `IPPROTO_TCP` protocol. asyncio switches Nagle's algorithm off
(`TCP_NODELAY`) only on connections whose socket says it is TCP, and an accepted socket inherits the
listener's protocol number: a listener made with protocol 0 (what `socket.socket()` and uvicorn's
`bind_socket` give) leaves Nagle on, and every small webhook answer then waits ~40 ms for the client's
delayed ACK (benchmarks/webhook_load.py showed p50 46 ms instead of 6 ms).

`uvicorn_config` is the server configuration `evalward serve` runs with; its protocol (`HeaderGuard`) adds
what uvicorn lacks: a deadline and a size for request headers, and a cap on open connections.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from evalward._server.settings import ServerSettings

log = logging.getLogger("evalward._server")


def listening_socket(host: str, port: int, *, backlog: int = 2048) -> socket.socket:
    """A TCP socket bound to (host, port) and listening; IPv6 when `host` contains a colon."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(backlog)
        sock.set_inheritable(True)
    except BaseException:
        sock.close()
        raise
    return sock


# -- the HTTP protocol ------------------------------------------------------------------------------------

KEEP_ALIVE_S = 5
"""An idle keep-alive connection is closed after this long (uvicorn's `timeout_keep_alive`)."""


def _canned(status: int, reason: str, message: str) -> bytes:
    """A complete `Connection: close` answer in the API's error shape, written without the HTTP parser."""
    body = json.dumps({"error": {"status": status, "message": message}}).encode("utf-8")
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\nconnection: close\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    )
    return head.encode("ascii") + body


LINGER_S = 2.0
LINGER_BYTES = 256 * 1024
"""A connection closed while its client is still sending (an early 403/413, a 408) first shuts down its
sending side and discards what still arrives, for at most this long and this much: closing a socket with
unread data makes the kernel send a reset, which can destroy the answer before the client reads it."""


class _LingeringTransport:
    """The transport uvicorn's protocol is given: `close()` while the client is still sending becomes a
    lingering close (answer flushed, FIN sent, what still arrives discarded, then closed); everything else
    is the real transport's."""

    def __init__(self, transport: asyncio.Transport, guard: HeaderGuard) -> None:
        self._transport = transport
        self._guard = guard
        self.lingering = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)

    def is_closing(self) -> bool:
        return self.lingering or self._transport.is_closing()

    def close(self, *, linger: bool | None = None) -> None:
        if self.is_closing():
            return
        if linger is None:
            linger = self._guard.client_still_sending()
        if not linger or not self._transport.can_write_eof():
            self._transport.close()
            return
        self.lingering = True
        self._transport.write_eof()  # after the answer is flushed
        self._transport.resume_reading()
        self._guard.linger_started()

    def end(self) -> None:
        self._transport.close()


class HeaderGuard(asyncio.Protocol):
    """Mixed in before uvicorn's HTTP protocol (`guarded_protocol`): what uvicorn does not bound itself.

    - **A deadline for headers.** uvicorn times out idle keep-alive connections, but not a request whose
      headers trickle in: one byte every 2 s held a connection for as long as the sender liked. Here the
      request line and headers must be complete `header_timeout_s` after the connection opened (first
      request) or after the request's first byte (later requests); otherwise 408 and the connection is closed.
    - **A size for headers**, `max_header_bytes` (h11 bounds headers still arriving with
      `h11_max_incomplete_event_size`; httptools has no limit): 431 and closed. Headers that arrive whole in
      one read are measured by the app (`boundary.RequestLineGuard`).
    - **A connection cap.** `limit_concurrency` only answers requests, so connections that never finish
      their headers were never counted against it; at `max_connections` open connections, a new one is
      answered 503 and closed at once.
    - **A lingering close** (`LINGER_S`, `LINGER_BYTES`) when the server closes a connection whose client is
      still sending, so the early answer (a refused upload's 403 or 413) reaches the client.

    The attributes below are uvicorn's (`H11Protocol`, `HttpToolsProtocol`): `cycle` is the current request's
    `RequestResponseCycle` (`more_body` until its body has arrived), replaced when the next request's headers
    are complete.
    """

    header_timeout_s: float = 10.0
    max_header_bytes: int = 32 * 1024
    max_connections: int = 512

    cycle: Any
    connections: set[Any]
    transport: Any
    loop: asyncio.AbstractEventLoop

    _guard_timer: asyncio.TimerHandle | None = None
    _guard_cycle: Any = None
    _guard_bytes: int = 0
    _lingering: _LingeringTransport | None = None
    _linger_timer: asyncio.TimerHandle | None = None
    _linger_bytes: int = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        crowded = len(self.connections) >= self.max_connections
        assert isinstance(transport, asyncio.Transport)
        super().connection_made(cast(asyncio.Transport, _LingeringTransport(transport, self)))
        if crowded:
            self._guard_refuse(
                503,
                "Service Unavailable",
                f"the server has {self.max_connections} connections open; try again shortly",
            )
            return
        self._guard_arm()

    def data_received(self, data: bytes) -> None:
        if self._lingering is not None:  # closing: what still arrives is discarded
            self._linger_bytes += len(data)
            if self._linger_bytes > LINGER_BYTES:
                self._lingering.end()
            return
        if self._guard_timer is None and self._between_requests():
            self._guard_arm()
        super().data_received(data)
        if self._guard_timer is None:
            return
        if self.cycle is not self._guard_cycle:  # the request's headers are complete
            self._guard_disarm()
            return
        self._guard_bytes += len(data)
        if self._guard_bytes > self.max_header_bytes:
            self._guard_refuse(
                431,
                "Request Header Fields Too Large",
                f"the request line and headers are larger than {self.max_header_bytes:,} bytes",
            )

    def connection_lost(self, exc: Exception | None) -> None:
        self._guard_disarm()
        if self._linger_timer is not None:
            self._linger_timer.cancel()
            self._linger_timer = None
        super().connection_lost(exc)

    def client_still_sending(self) -> bool:
        """Whether the current request's body has not arrived in full (so closing now would reset)."""
        cycle = self.cycle
        return cycle is not None and bool(cycle.more_body)

    def linger_started(self) -> None:
        self._guard_disarm()
        self._lingering = self.transport
        self._linger_timer = self.loop.call_later(LINGER_S, self.transport.end)

    def _between_requests(self) -> bool:
        cycle = self.cycle
        return cycle is None or bool(cycle.response_complete)

    def _guard_arm(self) -> None:
        self._guard_disarm()
        self._guard_cycle = self.cycle
        self._guard_bytes = 0
        self._guard_timer = self.loop.call_later(self.header_timeout_s, self._guard_expired)

    def _guard_disarm(self) -> None:
        if self._guard_timer is not None:
            self._guard_timer.cancel()
            self._guard_timer = None

    def _guard_expired(self) -> None:
        self._guard_timer = None
        if self.cycle is not self._guard_cycle:  # headers completed meanwhile (a pipelined request)
            return
        self._guard_refuse(
            408, "Request Timeout", f"the request headers did not arrive within {self.header_timeout_s:g} s"
        )

    def _guard_refuse(self, status: int, reason: str, message: str) -> None:
        self._guard_disarm()
        if self.transport.is_closing():
            return
        log.info("closing a connection: %s", message, extra={"status": status})
        self.transport.write(_canned(status, reason, message))
        self.transport.close(linger=True)  # the client may be sending still


def guarded_protocol(settings: ServerSettings) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol (httptools when installed, else h11, as uvicorn's `auto`) with `HeaderGuard`'s
    limits from `settings`."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    limits = {
        "header_timeout_s": settings.header_timeout_s,
        "max_header_bytes": settings.max_header_bytes,
        "max_connections": settings.max_connections,
    }
    guarded: type[asyncio.Protocol] = type(
        f"Guarded{AutoHTTPProtocol.__name__}", (HeaderGuard, AutoHTTPProtocol), limits
    )
    return guarded


def uvicorn_config(app: Any, settings: ServerSettings) -> Any:
    """The `uvicorn.Config` `evalward serve` runs `app` with: the guarded protocol (header deadline and size,
    connection cap), the keep-alive timeout, `limit_concurrency` (requests still running, including those whose
    client went away) and h11's header size limit."""
    import uvicorn

    return uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_config=None,
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=int(settings.shutdown_grace_s) + 5,
        http=guarded_protocol(settings),
        ws="none",
        timeout_keep_alive=KEEP_ALIVE_S,
        limit_concurrency=settings.max_connections + 1,
        h11_max_incomplete_event_size=settings.max_header_bytes,
    )
