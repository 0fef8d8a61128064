"""Model usage across processes: each process writes its own counters (and its breakers'
states) under its own keys of `mem_models`, so no write ever conflicts; `read` sums them for
`/agentmemory/status`. A write follows each call, coalesced (one in flight per process):
model calls are seconds apart, a KV put is a fraction of a millisecond."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from typing import Any

import msgspec

from engine import Bucket, Client
from functions.kernel.models.client import ModelClient, ProviderUsage, TaskUsage

MODELS_BUCKET = "mem_models"
log = logging.getLogger("functions.kernel.models")
PROCESS = f"{socket.gethostname()}-{os.getpid()}".replace(".", "_")


class ProviderTotals(msgspec.Struct, rename="camel", kw_only=True):
    name: str
    model: str
    calls: int = 0
    ok: int = 0
    failed: int = 0
    skipped: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    last_error: str = ""
    last_at: float = 0.0
    breakers: dict[str, str] = msgspec.field(default_factory=dict)
    """Process -> its breaker's state (closed, open, half-open)."""


class UsageOut(msgspec.Struct, rename="camel", kw_only=True):
    provider: str
    """The primary provider, or noop."""
    chain: list[str]
    providers: list[ProviderTotals]
    tasks: dict[str, TaskUsage]


class UsageSink:
    def __init__(self, model: ModelClient, client: Client, suffix: str = "") -> None:
        self.model = model
        self.client = client
        self.process = PROCESS + (f"_{suffix}" if suffix else "")
        self._state: Bucket | None = None
        self._task: asyncio.Task[None] | None = None
        self._again = False

    def changed(self) -> None:
        if self._task is not None and not self._task.done():
            self._again = True
            return
        self._task = asyncio.get_running_loop().create_task(self._flush())

    async def _flush(self) -> None:
        while True:
            self._again = False
            try:
                if self._state is None:
                    self._state = await self.client.bucket(MODELS_BUCKET)
                u = self.model.usage
                for name, p in u.providers.items():
                    await self._state.put(f"p.{name}.{self.process}", p)
                for name, t in u.tasks.items():
                    await self._state.put(f"t.{name}.{self.process}", t)
            except Exception as exc:
                log.warning("model usage not recorded: %s", exc)
            if not self._again:
                return

    async def close(self) -> None:
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


async def read(client: Client, primary: str, chain: list[str]) -> UsageOut:
    state = await client.bucket(MODELS_BUCKET)
    providers: dict[str, ProviderTotals] = {}
    tasks: dict[str, TaskUsage] = {}
    async for key, value in state.scan(">", Any):
        kind, name, proc = [*key.split(".", 2), "", ""][:3]
        if kind == "p":
            p = msgspec.convert(value, ProviderUsage, strict=False)
            tot = providers.setdefault(name, ProviderTotals(name=name, model=p.model))
            tot.calls += p.calls
            tot.ok += p.ok
            tot.failed += p.failed
            tot.skipped += p.skipped
            tot.tokens_in += p.tokens_in
            tot.tokens_out += p.tokens_out
            if p.last_at >= tot.last_at:
                tot.last_at, tot.model = p.last_at, p.model
                tot.last_error = p.last_error or tot.last_error
            tot.breakers[proc] = p.breaker
        elif kind == "t":
            t = msgspec.convert(value, TaskUsage, strict=False)
            cur = tasks.setdefault(name, TaskUsage())
            cur.calls += t.calls
            cur.answered += t.answered
            cur.malformed += t.malformed
            cur.fallback += t.fallback
    order = {n: i for i, n in enumerate(chain)}
    listed = sorted(providers.values(), key=lambda p: (order.get(p.name, 99), p.name))
    return UsageOut(provider=primary, chain=chain, providers=listed, tasks=tasks)
