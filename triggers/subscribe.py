"""The `subscribe` trigger: publish to a topic, every subscribed function runs (fan-out).

Config keys of a `subscribe` trigger:

- `topic` (required): dot-separated name (`session.ended`); wildcards `*` / `>` allowed.
- `timeout`: seconds a call may take, default 30.

Core NATS, at-most-once: a message published while no trigger worker runs is not kept (use
a `queue` or `stream` trigger for durable work). Each declaration is its own queue group, so
with several trigger-worker replicas every subscribed function still runs once per message.
Publish with `triggers.subscribe.publish(client, topic, payload)` or `engine::publish`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from typing import Any

import msgspec
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from engine import Client, Context, FunctionError, TriggerSpec, Worker
from triggers.plugin import SpecWatcher

log = logging.getLogger("triggers.subscribe")

PREFIX = "topic."
_TOPIC_RE = re.compile(r"^([A-Za-z0-9_-]+|\*)(\.([A-Za-z0-9_-]+|\*))*(\.>)?$|^>$")


class SubscribeConfig(msgspec.Struct, kw_only=True):
    topic: str
    timeout: float = 30.0

    def __post_init__(self) -> None:
        check_topic(self.topic, wildcards=True)


class PublishIn(msgspec.Struct, kw_only=True):
    topic: str
    payload: msgspec.Raw


class Published(msgspec.Struct):
    topic: str


def check_topic(topic: str, *, wildcards: bool = False) -> str:
    ok = bool(_TOPIC_RE.match(topic)) and (wildcards or ("*" not in topic and ">" not in topic))
    if not ok:
        raise FunctionError("BAD_REQUEST", f"topic {topic!r} is not a valid topic", field="topic")
    return topic


async def publish(client: Client, topic: str, payload: Any) -> None:
    check_topic(topic)
    data = payload if isinstance(payload, bytes) else msgspec.json.encode(payload)
    await client.nc.publish(PREFIX + topic, data)


class SubscribeTrigger:
    kind = "subscribe"

    def __init__(self) -> None:
        self._client: Client | None = None
        self._subs: dict[str, Subscription] = {}
        self._calls: set[asyncio.Task[None]] = set()
        self._watcher: SpecWatcher | None = None

    def install(self, worker: Worker) -> None:
        @worker.function("engine::publish", description="Publish to a topic (fan-out)")
        async def _publish(req: PublishIn, ctx: Context) -> Published:
            await publish(ctx.client, req.topic, bytes(req.payload))
            return Published(req.topic)

    async def start(self, client: Client) -> None:
        self._client = client
        self._watcher = SpecWatcher(client, self)
        await self._watcher.start()

    async def apply(self, spec: TriggerSpec) -> None:
        cfg = msgspec.convert(spec.config, SubscribeConfig)
        await self.remove(spec.key)
        assert self._client is not None
        client = self._client

        async def on_msg(msg: Msg) -> None:
            t = asyncio.create_task(self._call(client, spec.function_id, cfg, msg))
            self._calls.add(t)
            t.add_done_callback(self._calls.discard)

        self._subs[spec.key] = await client.nc.subscribe(
            PREFIX + cfg.topic, queue=f"sub-{spec.id}", cb=on_msg
        )
        await client.nc.flush()
        log.debug("topic %s -> %s", cfg.topic, spec.function_id)

    async def _call(self, client: Client, fid: str, cfg: SubscribeConfig, msg: Msg) -> None:
        try:
            await client.call(
                fid, msg.data, timeout=cfg.timeout, headers={"Topic": msg.subject[len(PREFIX) :]}
            )
        except FunctionError as err:
            log.warning("topic %s: %s failed: %r", cfg.topic, fid, err)

    async def remove(self, key: str) -> None:
        sub = self._subs.pop(key, None)
        if sub is not None:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()

    async def stop(self) -> None:
        if self._watcher is not None:
            await self._watcher.stop()
        for key in list(self._subs):
            await self.remove(key)
        if self._calls:
            await asyncio.wait(set(self._calls), timeout=10)
