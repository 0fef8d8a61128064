"""The console's lifetime inside its worker process: tails of spans and logs, and uvicorn."""

from __future__ import annotations

import asyncio
import contextlib
import logging

import httpx

from engine import Client
from engine.logs import LOGS_STREAM, LOGS_SUBJECT
from engine.tracing import TRACES_STREAM, TRACES_SUBJECT
from triggers.serving import QuietServer, serve_app
from workers.console.app import build_app
from workers.console.follow import Follower
from workers.console.hub import Hub
from workers.console.inventory import Inventory
from workers.console.logs import LogStore
from workers.console.settings import ConsoleSettings
from workers.console.traces import TraceStore

log = logging.getLogger("console")


class ConsoleServer:
    def __init__(self, settings: ConsoleSettings | None = None) -> None:
        self.settings = settings
        self.hub: Hub | None = None
        self._followers: list[Follower] = []
        self._server: QuietServer | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self, client: Client) -> None:
        # httpx logs every proxied test request at INFO: noise in the logs page.
        logging.getLogger("httpx").setLevel(logging.WARNING)
        settings = self.settings = self.settings or ConsoleSettings.from_env()
        hub = self.hub = Hub(
            client=client,
            settings=settings,
            inventory=Inventory(client),
            traces=TraceStore(settings.max_spans),
            logs=LogStore(settings.max_logs),
            http=httpx.AsyncClient(timeout=30.0),
        )
        js = client.nc.jetstream()
        self._followers = [
            Follower(
                js, TRACES_STREAM, f"{TRACES_SUBJECT}.>", settings.max_spans, hub.traces.add_raw
            ),
            Follower(js, LOGS_STREAM, f"{LOGS_SUBJECT}.>", settings.max_logs, hub.logs.add_raw),
        ]
        for f in self._followers:
            f.start()
        self._server, self._task = await serve_app(
            build_app(hub), settings.host, settings.port, ws="auto", what="console"
        )
        log.info("console on http://%s:%d", settings.host, settings.port)

    async def stop(self) -> None:
        if self._server is not None and self._task is not None:
            self._server.request_exit()
            # Live tails never end by themselves: let uvicorn cut them after its grace.
            with contextlib.suppress(Exception):
                await self._task
        for f in self._followers:
            await f.stop()
        if self.hub is not None:
            await self.hub.http.aclose()
