"""The http trigger plug-in: the route table kept live from KV, served by uvicorn."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Iterator

import uvicorn

from engine import Client, TriggerSpec, Worker
from triggers.http.app import HttpApp
from triggers.http.routes import RouteTable, route_from_spec
from triggers.http.settings import HttpSettings
from triggers.plugin import SpecWatcher

log = logging.getLogger("triggers.http")


class _Server(uvicorn.Server):
    # The worker runtime owns SIGTERM/SIGINT and stops us in order; uvicorn must not grab them.
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


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


class HttpTrigger:
    kind = "http"

    def __init__(self, settings: HttpSettings | None = None) -> None:
        self.settings = settings
        self.table = RouteTable()
        self._server: _Server | None = None
        self._task: asyncio.Task[None] | None = None
        self._watcher: SpecWatcher | None = None
        self.app: HttpApp | None = None

    def install(self, worker: Worker) -> None:
        pass

    async def apply(self, spec: TriggerSpec) -> None:
        self.table.put(route_from_spec(spec))
        log.info(
            "route %s %s -> %s",
            spec.config.get("method", "GET"),
            spec.config.get("path"),
            spec.function_id,
        )

    async def remove(self, key: str) -> None:
        self.table.remove(key)

    async def start(self, client: Client) -> None:
        settings = self.settings = self.settings or HttpSettings.from_env()
        self.app = HttpApp(client, self.table, settings)
        self._watcher = SpecWatcher(client, self)
        await self._watcher.start()
        config = uvicorn.Config(
            self.app,
            host=settings.host,
            port=settings.port,
            loop="none",
            http="httptools",
            ws="none",  # REST only: no WebSocket implementation loaded
            lifespan="off",
            access_log=False,
            log_level="warning",
            server_header=False,
            proxy_headers=False,  # loopback service: no proxy to trust, no per-request parsing
            date_header=False,
            timeout_graceful_shutdown=5,
        )
        self._server = _Server(config)
        self._task = await serve_in_background(
            self._server, listen_socket(settings.host, settings.port)
        )
        log.info("http trigger listening on %s:%d", settings.host, settings.port)

    async def stop(self) -> None:
        if self._server is not None and self._task is not None:
            self._server.should_exit = True
            with contextlib.suppress(Exception):
                await self._task
        if self.app is not None:
            await self.app.drain(10)
        if self._watcher is not None:
            await self._watcher.stop()
