"""Which trigger plug-ins a process hosts: the trigger worker, or any worker that hosts
some of them itself (ENGINE_TRIGGERS)."""

from __future__ import annotations

import importlib

from engine import Client, Worker
from triggers.plugin import Plugin

# kind -> (module, class): imported only when a process hosts that kind.
_PLUGINS = {
    "http": ("triggers.http.server", "HttpTrigger"),
    "cron": ("triggers.cron", "CronTrigger"),
    "queue": ("triggers.queue", "QueueTrigger"),
    "subscribe": ("triggers.pubsub", "SubscribeTrigger"),
    "stream": ("triggers.stream", "StreamTrigger"),
    "state": ("triggers.state", "StateTrigger"),
    "ws": ("triggers.gateway", "StreamGateway"),
}
ALL = tuple(_PLUGINS)


def make_plugin(kind: str) -> Plugin:
    if kind not in _PLUGINS:
        raise SystemExit(f"unknown trigger kind {kind!r}; expected some of {', '.join(ALL)}")
    module, name = _PLUGINS[kind]
    plugin: Plugin = getattr(importlib.import_module(module), name)()
    return plugin


def host(worker: Worker, kinds: list[str]) -> None:
    """Run trigger plug-ins inside `worker`'s process. Their calls to the worker's own
    functions then run in-process (see Client.serve_locally); other calls use the bus.
    Started after the worker's earlier start hooks (its functions are ready by then). While
    the worker drains, the plug-ins still run and their calls go to the other replicas.
    An unknown kind stops the process with a message naming it."""
    if not kinds:
        return
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
    return [k.strip() for k in (value or "").split(",") if k.strip()]
