"""Serving ASGI apps inside a worker's event loop: uvicorn without its signal handlers and
without its 10-per-second tick, on sockets that replicas can share."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterator
from typing import Any

import uvicorn


class QuietServer(uvicorn.Server):
    """The worker runtime owns SIGTERM/SIGINT and stops us in order, so uvicorn must not
    grab them; and an idle service must not wake ten times a second to ask itself whether
    to stop (uvicorn's main loop does, to refresh a Date header we do not send): it waits
    for `request_exit()` instead. Configure it with `date_header=False`."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self._exit = asyncio.Event()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def main_loop(self) -> None:
        await self.on_tick(0)  # the default headers, once
        await self._exit.wait()

    def request_exit(self) -> None:
        self.should_exit = True
        self._exit.set()


def listen_socket(host: str, port: int) -> socket.socket:
    """A listening socket with SO_REUSEPORT: replicas of a trigger worker can share the port
    and the kernel spreads connections between them (Linux allows it for one user only)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if hasattr(socket, "SO_REUSEPORT"):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


async def serve_in_background(server: uvicorn.Server, sock: socket.socket) -> asyncio.Task[None]:
    """Start uvicorn on `sock` in this loop and return once it accepts connections."""
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            task.result()  # raises why it stopped
            raise RuntimeError("server stopped during startup")
        await asyncio.sleep(0.01)
    return task


async def serve_app(
    app: Any, host: str, port: int, *, ws: str = "none", what: str = "server"
) -> tuple[QuietServer, asyncio.Task[None]]:
    """Serve an ASGI app on `host:port` (uvicorn binds it: one process owns the port) in
    this loop, returning once it accepts connections; stop it with `request_exit()`."""
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        loop="none",
        http="httptools",
        ws=ws,
        lifespan="off",
        access_log=False,
        log_level="warning",
        server_header=False,
        date_header=False,
        timeout_graceful_shutdown=2,
    )
    server = QuietServer(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()  # raises why it stopped
            raise RuntimeError(f"{what} could not listen on {host}:{port}")
        await asyncio.sleep(0.01)
    return server, task
