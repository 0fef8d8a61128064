"""Sentinels' operations: create, trigger, cancel, check, list; and what their triggers call:
a checkpoint changed (state trigger), the pattern scan (cron, armed while a pattern
sentinel watches: `firing.Patterns`, kept by the owner)."""

from __future__ import annotations

from typing import Protocol

from engine import NoArgs, Tool, operation
from functions.coordination.inputs import StateChange
from functions.coordination.sentinels import core, firing
from functions.coordination.sentinels.firing import Patterns
from functions.coordination.sentinels.wire import (
    SentinelCheckOut,
    SentinelCreateIn,
    SentinelIdIn,
    SentinelListIn,
    SentinelOut,
    SentinelsOut,
    SentinelTriggerIn,
)
from functions.coordination.store import ConceptService, CoordOwner, rest


class PatternOwner(CoordOwner, Protocol):
    """The owner of the store also keeps the watch of pattern sentinels (one per process,
    started with the store): the scan returns at once while none watches."""

    @property
    def patterns(self) -> Patterns: ...


class SentinelService(ConceptService[PatternOwner]):
    @operation(
        "mem::sentinel-create",
        description="Create an event-driven sentinel that watches for conditions (timer, "
        "pattern, checkpoint, webhook, threshold, approval) and auto-unblocks gated actions "
        "when triggered.",
        http=rest("POST", "sentinels", status=201),
        tool=Tool("memory_sentinel_create"),
    )
    async def sentinel_create(self, req: SentinelCreateIn) -> SentinelOut:
        return await core.create(self.cs, req)

    @operation(
        "mem::sentinel-trigger",
        description="Externally fire a sentinel, providing an optional result payload. "
        "Unblocks any gated actions.",
        http=rest("POST", "sentinels/trigger"),
        tool=Tool("memory_sentinel_trigger"),
    )
    async def sentinel_trigger(self, req: SentinelTriggerIn) -> SentinelOut:
        return await core.trigger(self.cs, req)

    @operation(
        "mem::sentinel-cancel",
        description="Cancel a watching sentinel",
        http=rest("POST", "sentinels/cancel"),
    )
    async def sentinel_cancel(self, req: SentinelIdIn) -> SentinelOut:
        return await core.cancel(self.cs, req.sentinel_id, req.agent_id)

    @operation(
        "mem::sentinel-check",
        description="Fire the sentinels that are due: timers, expiries, and observation "
        "patterns against what was stored since the last scan",
        http=rest("POST", "sentinels/check", source="none"),
        timeout=120,
    )
    async def sentinel_check(self) -> SentinelCheckOut:
        return await firing.check(self.cs)

    @operation(
        "mem::sentinel-list",
        description="List sentinels (?status=&type=)",
        http=rest("GET", "sentinels"),
    )
    async def sentinel_list(self, req: SentinelListIn) -> SentinelsOut:
        return await core.listing(self.cs, req)

    @operation(
        "mem::sentinel-checkpoint",
        description="State trigger: a checkpoint changed; fire the sentinels watching it",
    )
    async def sentinel_checkpoint(self, ev: StateChange) -> None:
        await firing.on_checkpoint(self.cs, ev)

    @operation(
        "mem::sentinel-scan",
        description="Cron: match the observations stored since the last scan against the "
        "watching pattern sentinels (returns at once while none watches)",
        timeout=60,
    )
    async def sentinel_scan(self, req: NoArgs) -> None:
        if self.owner.patterns.watching:
            await firing.scan_patterns(self.cs)
