"""The listening socket of `evalward serve`: accepted connections get TCP_NODELAY from asyncio."""

from __future__ import annotations

import asyncio
import socket

from evalward._server.listen import listening_socket


async def test_connections_accepted_on_the_listening_socket_have_nagle_switched_off() -> None:
    nodelay: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    class Probe(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            accepted = transport.get_extra_info("socket")
            nodelay.set_result(accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            transport.close()

    listener = listening_socket("127.0.0.1", 0)
    assert listener.proto == socket.IPPROTO_TCP
    server = await asyncio.get_running_loop().create_server(Probe, sock=listener)
    try:
        port = listener.getsockname()[1]
        _reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            assert await asyncio.wait_for(nodelay, timeout=30) != 0
        finally:
            writer.close()
            await writer.wait_closed()
    finally:
        server.close()
        await server.wait_closed()


def test_a_plain_socket_would_not_get_it() -> None:
    # Why listening_socket sets the protocol: a listener made with protocol 0 hands asyncio accepted sockets
    # that do not say they are TCP, and asyncio then leaves Nagle's algorithm on.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as plain:
        assert plain.proto == 0
