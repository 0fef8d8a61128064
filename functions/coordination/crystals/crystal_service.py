"""Crystals' operations: crystallize (saved as a memory through mem::remember), list, and
the automatic pass (also daily on cron)."""

from __future__ import annotations

from typing import Any

from engine import Context, Tool, operation
from functions.coordination.crystals import core
from functions.coordination.crystals.wire import (
    CrystalAutoIn,
    CrystalAutoOut,
    CrystalListIn,
    CrystallizeRequest,
    CrystalOut,
    CrystalsOut,
)
from functions.coordination.store import ConceptService, CoordOwner, rest


class CrystalService(ConceptService[CoordOwner]):
    async def _remember(self, ctx: Context, payload: dict[str, Any]) -> str:
        reply = await ctx.call("mem::remember", payload, timeout=30)
        return core.remember_result_id(reply)

    @operation(
        "mem::crystallize",
        description="Compress completed action chains into compact crystal digests (narrative,"
        " key outcomes, files affected, lessons), saved as a memory.",
        http=rest("POST", "crystals/create", status=201),
        tool=Tool("memory_crystallize"),
        timeout=120,
    )
    async def crystallize(self, req: CrystallizeRequest, ctx: Context) -> CrystalOut:
        return await core.crystallize(self.cs, req, lambda p: self._remember(ctx, p))

    @operation(
        "mem::crystal-list",
        description="List crystals (?project=&sessionId=&limit=)",
        http=rest("GET", "crystals"),
    )
    async def crystal_list(self, req: CrystalListIn) -> CrystalsOut:
        return await core.listing(self.cs, req)

    @operation(
        "mem::crystal-auto",
        description="Crystallize done actions older than olderThanDays, grouped by parent or "
        "project (also daily on cron)",
        http=rest("POST", "crystals/auto"),
        timeout=600,
    )
    async def crystal_auto(self, req: CrystalAutoIn, ctx: Context) -> CrystalAutoOut:
        return await core.auto(self.cs, req, lambda p: self._remember(ctx, p))
