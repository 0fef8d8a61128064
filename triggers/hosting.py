"""Which trigger plug-ins a process hosts: the trigger worker, or any worker that hosts
some of them itself (ENGINE_TRIGGERS)."""

from __future__ import annotations

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


def host(worker: Worker, kinds: list[str]) -> None:
    """Run trigger plug-ins inside `worker`'s process. Their calls to the worker's own
    functions then run in-process (see Client.serve_locally); other calls use the bus.
    Started after the worker's earlier start hooks (its functions are ready by then). While
    the worker drains, the plug-ins still run and their calls go to the other replicas."""
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


def hosted_kinds(value: str | None) -> list[str]:
    """ENGINE_TRIGGERS for a worker: a comma-separated list of plug-in kinds to host."""
    kinds = [k.strip() for k in (value or "").split(",") if k.strip()]
    for k in kinds:
        if k not in ALL:
            raise SystemExit(f"unknown trigger kind {k!r}; expected some of {', '.join(ALL)}")
    return kinds
