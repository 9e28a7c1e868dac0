"""A Starlette app served by a real uvicorn on 127.0.0.1 (a free port), in a thread, lifespan included."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import uvicorn


class LiveServer:
    def __init__(self, app: Any) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(128)  # as `evalward serve` does: connections made during start-up wait, not fail
        self.port = self.sock.getsockname()[1]
        config = uvicorn.Config(app, log_config=None, access_log=False, lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=lambda: asyncio.run(self.server.serve(sockets=[self.sock])), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=60)
        self.sock.close()


@contextlib.asynccontextmanager
async def dashboard_client(db_url: str) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client of a public-read server app over the history at `db_url`, in process (no socket)."""
    from tests.server.conftest import make_settings

    from evalward._server.app import create_app
    from evalward.store import open_store

    with open_store(db_url) as store:
        app = create_app(make_settings(db_url, public_read=True), store)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as http:
            yield http
