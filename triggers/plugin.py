"""The shape every trigger plug-in shares: functions it adds, and live spec application."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

import msgspec

from engine import TRIGGERS_BUCKET, Bucket, Client, TriggerSpec, Worker

log = logging.getLogger("triggers")


class Plugin(Protocol):
    kind: str

    def install(self, worker: Worker) -> None:
        """Register the plug-in's own functions (fire-now, dead letters...) on the worker."""

    async def start(self, client: Client) -> None: ...

    async def apply(self, spec: TriggerSpec) -> None:
        """A declaration was created or changed; make it effective."""

    async def remove(self, key: str) -> None:
        """The declaration stored under `key` was deleted."""

    async def stop(self) -> None: ...


class SpecWatcher:
    """Follows `engine_triggers` for one kind and hands each change to a plug-in, in order.

    Existing declarations come first (so a restarted trigger worker rebuilds its table),
    then live changes. A declaration that fails to apply is logged and skipped: one bad
    spec must not stop the others.
    """

    def __init__(self, client: Client, plugin: Plugin) -> None:
        self.client = client
        self.plugin = plugin
        self.ready = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._applied: dict[str, bytes] = {}

    async def start(self) -> None:
        store = await self.client.bucket(TRIGGERS_BUCKET, history=5)
        # Snapshot first, synchronously, so the worker only reports ready with its table built.
        for key in await store.keys(f"{self.plugin.kind}."):
            raw: Any = await store.get(key, Any)
            if raw is not None:
                await self._apply(msgspec.convert(raw, TriggerSpec))
        self.ready.set()
        self._task = asyncio.create_task(self._follow(store))

    async def _follow(self, store: Bucket) -> None:
        async for change in store.watch(f"{self.plugin.kind}.>", include_existing=True):
            if change.op == "delete" or change.value is None:
                self._applied.pop(change.key, None)
                await self.plugin.remove(change.key)
                continue
            try:
                spec = msgspec.json.decode(change.value, type=TriggerSpec)
            except (msgspec.DecodeError, msgspec.ValidationError, ValueError) as exc:
                log.warning("ignoring unreadable trigger %s: %s", change.key, exc)
                continue
            await self._apply(spec)

    async def _apply(self, spec: TriggerSpec) -> None:
        # The snapshot and the watch both deliver existing specs: apply each version once,
        # so a running consumer is not torn down and rebuilt for nothing.
        seen = msgspec.json.encode(spec)
        if self._applied.get(spec.key) == seen:
            return
        self._applied[spec.key] = seen
        try:
            await self.plugin.apply(spec)
        except Exception as exc:
            log.warning("trigger %s (%s) not applied: %s", spec.key, spec.function_id, exc)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
