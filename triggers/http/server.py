"""The http trigger plug-in: the route table kept live from KV, served by uvicorn."""

from __future__ import annotations

import asyncio
import contextlib
import logging

import uvicorn

from engine import Client, TriggerSpec, Worker
from triggers.http.app import HttpApp
from triggers.http.routes import RouteTable, route_from_spec
from triggers.http.settings import HttpSettings
from triggers.plugin import SpecWatcher
from triggers.serving import QuietServer, listen_socket, serve_in_background

log = logging.getLogger("triggers.http")


class HttpTrigger:
    kind = "http"

    def __init__(self, settings: HttpSettings | None = None) -> None:
        self.settings = settings
        self.table = RouteTable()
        self._server: QuietServer | None = None
        self._task: asyncio.Task[None] | None = None
        self._watcher: SpecWatcher | None = None
        self.app: HttpApp | None = None

    def install(self, worker: Worker) -> None:
        pass

    async def apply(self, spec: TriggerSpec) -> None:
        self.table.put(route_from_spec(spec))
        log.debug(
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
        self._server = QuietServer(config)
        self._task = await serve_in_background(
            self._server, listen_socket(settings.host, settings.port)
        )
        # One line for what is served; each route is a debug line (ENGINE_LOG_LEVEL=DEBUG).
        log.info(
            "http trigger listening on %s:%d, %d routes",
            settings.host,
            settings.port,
            len(self.table.routes()),
        )

    async def stop(self) -> None:
        if self._server is not None and self._task is not None:
            self._server.request_exit()
            with contextlib.suppress(Exception):
                await self._task
        if self.app is not None:
            await self.app.drain(10)
        if self._watcher is not None:
            await self._watcher.stop()
