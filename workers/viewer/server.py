"""The viewer's lifetime inside its worker process: the shared live hub, the REST
forwarder and uvicorn on the viewer port."""

from __future__ import annotations

import asyncio
import contextlib
import logging

import uvicorn

from engine import Client
from triggers.serving import QuietServer
from workers.viewer.app import build_app
from workers.viewer.live import Hub
from workers.viewer.proxy import RestProxy
from workers.viewer.settings import ViewerSettings

log = logging.getLogger("viewer")


class ViewerServer:
    def __init__(self, settings: ViewerSettings) -> None:
        self.settings = settings
        self.hub: Hub | None = None
        self.proxy: RestProxy | None = None
        self._server: QuietServer | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self, client: Client) -> None:
        logging.getLogger("httpx").setLevel(logging.WARNING)
        s = self.settings
        self.hub = Hub(client, s.health_every)
        await self.hub.start()
        self.proxy = RestProxy(s.rest_port, s.secret)
        config = uvicorn.Config(
            build_app(s, self.hub, self.proxy),
            host=s.host,
            port=s.port,
            loop="none",
            http="httptools",
            ws="websockets-sansio",
            lifespan="off",
            access_log=False,
            log_level="warning",
            server_header=False,
            date_header=False,
            timeout_graceful_shutdown=2,
        )
        self._server = QuietServer(config)
        self._task = asyncio.create_task(self._server.serve())
        while not self._server.started:
            if self._task.done():
                self._task.result()
                raise RuntimeError(f"the viewer could not listen on {s.host}:{s.port}")
            await asyncio.sleep(0.01)
        log.info("viewer on http://%s:%d", s.host, s.port)

    async def stop(self) -> None:
        if self._server is not None and self._task is not None:
            self._server.request_exit()
            with contextlib.suppress(Exception):
                await self._task
        if self.hub is not None:
            await self.hub.stop()
        if self.proxy is not None:
            await self.proxy.close()
