"""The listening socket `evalward serve` opens before the app starts.

The socket is created with an explicit `IPPROTO_TCP` protocol. asyncio switches Nagle's algorithm off
(`TCP_NODELAY`) only on connections whose socket says it is TCP, and an accepted socket inherits the
listener's protocol number: a listener made with protocol 0 (what `socket.socket()` and uvicorn's
`bind_socket` give) leaves Nagle on, and every small webhook answer then waits ~40 ms for the client's
delayed ACK (benchmarks/webhook_load.py showed p50 46 ms instead of 6 ms).
"""

from __future__ import annotations

import socket


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
