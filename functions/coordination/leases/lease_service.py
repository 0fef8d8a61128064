"""Leases' operations: acquire, release, renew (and upstream's one-tool form), and the state
trigger's call when a lease key goes (expired or released)."""

from __future__ import annotations

from engine import Tool, operation
from functions.coordination.inputs import StateChange
from functions.coordination.leases import core
from functions.coordination.leases.wire import LeaseIn, LeaseOpIn, LeaseOut
from functions.coordination.store import ConceptService, CoordOwner, rest

REFUSED = {"False": 409}
"""A lease refused (held by another agent, completed, blocked) is upstream's `{success:
false, error, ...}` reply, with status 409."""


class LeaseService(ConceptService[CoordOwner]):
    @operation(
        "mem::lease-acquire",
        description="Acquire an exclusive lease on an action (ttlMs: default 10 min, max 1 h)",
        http=rest("POST", "leases/acquire", status_field="success", status_by=REFUSED),
    )
    async def lease_acquire(self, req: LeaseIn) -> LeaseOut:
        return await core.acquire(self.cs, req)

    @operation(
        "mem::lease-release",
        description="Release a lease; with a result the action is done",
        http=rest("POST", "leases/release", status_field="success", status_by=REFUSED),
    )
    async def lease_release(self, req: LeaseIn) -> LeaseOut:
        return await core.release(self.cs, req)

    @operation(
        "mem::lease-renew",
        description="Renew a lease held by this agent",
        http=rest("POST", "leases/renew", status_field="success", status_by=REFUSED),
    )
    async def lease_renew(self, req: LeaseIn) -> LeaseOut:
        return await core.renew(self.cs, req)

    @operation(
        "mem::lease",
        description="Acquire, release, or renew an exclusive lease on an action. Prevents "
        "multiple agents from working on the same thing.",
        tool=Tool("memory_lease"),
    )
    async def lease(self, req: LeaseOpIn) -> LeaseOut:
        op = {"acquire": core.acquire, "release": core.release, "renew": core.renew}
        return await op[req.operation](self.cs, req)

    @operation("mem::lease-changed", description="State trigger: a lease expired or went")
    async def lease_changed(self, ev: StateChange) -> None:
        await core.on_lease_change(self.cs, ev)
