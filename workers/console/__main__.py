"""The console worker: `python -m workers.console` serves the console on 127.0.0.1:3114
(or AGENTMEMORY_CONSOLE_PORT), protected by the REST secret."""

from __future__ import annotations

from engine import Client, Worker
from workers.console.server import ConsoleServer


def build() -> Worker:
    worker = Worker("console", description="the engine console (web)")
    server = ConsoleServer()

    @worker.on_start
    async def _start(client: Client) -> None:
        await server.start(client)

    @worker.on_stop
    async def _stop(client: Client) -> None:
        await server.stop()

    return worker


if __name__ == "__main__":
    build().run()
