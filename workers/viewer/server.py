"""The viewer's lifetime inside its worker process: the shared live hub, the REST
forwarder and uvicorn on the viewer port."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from engine import Client
from functions.viewer.activity import Activity
from triggers.serving import QuietServer, serve_app
from workers.viewer.app import build_app
from workers.viewer.auth import Spent
from workers.viewer.live import Hub
from workers.viewer.proxy import RestProxy
from workers.viewer.settings import ViewerSettings
from workers.viewer.tokens import START_TTL, login_url

log = logging.getLogger("viewer")


class ViewerServer:
    def __init__(self, settings: ViewerSettings, activity: Activity) -> None:
        self.settings = settings
        self.activity = activity
        self.hub: Hub | None = None
        self.proxy: RestProxy | None = None
        self._server: QuietServer | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self, client: Client) -> None:
        logging.getLogger("httpx").setLevel(logging.WARNING)
        s = self.settings
        self.hub = Hub(client, s.health_every, self.activity)
        await self.hub.start()
        self.proxy = RestProxy(s.rest_port, s.secret)
        spent = await Spent.open(client) if s.auth == "token" else None
        self._server, self._task = await serve_app(
            build_app(s, self.hub, self.proxy, spent),
            s.host,
            s.port,
            ws="websockets-sansio",
            what="the viewer",
        )
        if spent is None:
            log.warning("viewer on http://%s:%d, open to every local user (VIEWER_AUTH=none)",
                        s.host, s.port)  # fmt: skip
        else:
            # As Jupyter prints its URL: this link signs one browser in, once.
            url = login_url(s.port, s.secret, START_TTL)
            log.info("open %s (one-time link, valid 24 h; `agentmemory viewer` "
                     "opens a new one)", url)  # fmt: skip

    async def stop(self) -> None:
        if self._server is not None and self._task is not None:
            self._server.request_exit()
            with contextlib.suppress(Exception):
                await self._task
        if self.hub is not None:
            await self.hub.stop()
        if self.proxy is not None:
            await self.proxy.close()
