"""The owner of one process's coordination store: it opens the buckets when the worker starts
and keeps the watch that arms the pattern sentinels' scan; each concept declares its own
operations over that store (`<concept>/<concept>_service.py`, served beside it by
`workers.memory.serve_coordination`). Here too: what the triggers call across concepts, a
coordination timer firing (dispatched by its kind) and the sweep."""

from __future__ import annotations

from typing import Any

import msgspec

from engine import NoArgs, operation
from functions.coordination.checkpoints import core as checkpoints
from functions.coordination.inputs import StateChange
from functions.coordination.leases import core as leases
from functions.coordination.records import Checkpoint, Timer
from functions.coordination.sentinels import firing as sentinels
from functions.coordination.sketches import core as sketches
from functions.coordination.store import CoordStore
from functions.kernel.owned import started


class SweepOut(msgspec.Struct, rename="camel", kw_only=True):
    leases_handed_back: int
    timers_fired: int
    sketches_collected: int


class CoordinationService:
    """Opens the store when the worker starts (each concept's service reads it through this
    one's `cs`) and keeps the watch of pattern sentinels that arms their scan."""

    def __init__(self) -> None:
        self._cs: CoordStore | None = None
        self.patterns = sentinels.Patterns()

    @property
    def cs(self) -> CoordStore:
        return started(self._cs, "coordination")

    async def start(self, client: Any) -> None:
        self._cs = await CoordStore(client).open()
        self.patterns.start(self._cs)

    async def stop(self, client: Any) -> None:
        await self.patterns.stop()

    # ---- what the triggers call (bus only) -------------------------------------------
    @operation("mem::coord-timer", description="State trigger: a coordination timer fired")
    async def timer_fired(self, ev: StateChange) -> None:
        if ev.op != "deleted" or not isinstance(ev.old, dict):
            return
        try:
            t = msgspec.convert(ev.old, Timer)
        except msgspec.ValidationError:
            return
        if t.kind in ("sentinel", "sentinel-expiry"):
            await sentinels.on_timer(self.cs, t.kind, t.target_id)
        elif t.kind == "checkpoint-expiry":
            await checkpoints.expire(self.cs, t.target_id, "timer")
        elif t.kind == "sketch-expiry":
            await sketches.on_timer(self.cs, t.target_id)

    @operation(
        "mem::coord-sweep",
        description="Cron backstop: hand back actions whose lease is gone, fire due timers "
        "and expiries, collect expired sketches",
        timeout=120,
    )
    async def sweep(self, req: NoArgs) -> SweepOut:
        handed = await leases.sweep(self.cs)
        fired = len((await sentinels.check(self.cs)).triggered)
        for cp in await self.cs.all(self.cs.checkpoints, Checkpoint):
            if cp.status == "pending" and cp.expires_at:
                fired += await checkpoints.expire(self.cs, cp.id, "sweep")
        collected = (await sketches.gc(self.cs)).collected
        return SweepOut(leases_handed_back=handed, timers_fired=fired, sketches_collected=collected)
