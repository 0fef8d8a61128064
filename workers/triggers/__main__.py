"""Host trigger plug-ins in one process: `python -m workers.triggers [kind ...]`.

With no kinds, every plug-in runs; `ws` is the WebSocket gateway (port 3112). Replicas are
safe for every kind: cron ticks, queue and stream messages go through shared durable
consumers, and the http/ws listeners share their port with SO_REUSEPORT.
"""

from __future__ import annotations

import sys

from engine import Client, Worker
from triggers.plugin import Plugin

ALL = ("http", "cron", "queue", "subscribe", "stream", "state", "ws")


def make_plugin(kind: str) -> Plugin:
    if kind == "http":
        from triggers.http import HttpTrigger

        return HttpTrigger()
    if kind == "cron":
        from triggers.cron import CronTrigger

        return CronTrigger()
    if kind == "subscribe":
        from triggers.pubsub import SubscribeTrigger

        return SubscribeTrigger()
    if kind == "stream":
        from triggers.stream import StreamTrigger

        return StreamTrigger()
    if kind == "state":
        from triggers.state import StateTrigger

        return StateTrigger()
    if kind == "ws":
        from triggers.gateway import StreamGateway

        return StreamGateway()
    if kind == "queue":
        from triggers.queue import QueueTrigger

        return QueueTrigger()
    raise SystemExit(f"unknown trigger kind {kind!r}; expected some of {', '.join(ALL)}")


def build(kinds: list[str]) -> Worker:
    worker = Worker(
        "triggers-" + "-".join(kinds), description="trigger plug-ins: " + ", ".join(kinds)
    )
    plugins = [make_plugin(k) for k in kinds]
    for p in plugins:
        p.install(worker)

    @worker.on_start
    async def _start(client: Client) -> None:
        for p in plugins:
            await p.start(client)

    @worker.on_stop
    async def _stop(client: Client) -> None:
        for p in reversed(plugins):
            await p.stop()

    return worker


def main(argv: list[str]) -> None:
    build(argv or list(ALL)).run()


if __name__ == "__main__":
    main(sys.argv[1:])
