"""Leases: one holder of an action at a time, across every process and machine.

The lease is a key of `mem_leases` (the action's id) created with a JetStream TTL:
creating it is the claim (KV create is atomic in JetStream, whichever replica asks), and
JetStream itself removes it when its TTL runs out, so a holder that died lets go without
anyone sweeping. The action record is where a claim is committed: an acquisition writes
`leaseId` and `assignedTo` with compare-and-set, a release clears them the same way, so
acquisitions, releases and expiries of one action are totally ordered by that record's
revisions, which every audit entry carries. An expired lease hands the action back when
the state trigger delivers the expiry marker (or when the next acquisition finds it, or
the sweep cron does); whichever of them commits first writes the `lease-expire` entry.

TTLs are whole seconds (JetStream's granularity), rounded up; `expiresAt` is when the key
expires, so a holder never believes in a lease JetStream has already dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import math

import msgspec

from engine import CasConflict, FunctionError
from functions.coordination.actions.core import view
from functions.coordination.actions.gates import Gates, unblock_dependents
from functions.coordination.inputs import StateChange
from functions.coordination.leases.wire import LeaseIn, LeaseOut, LeaseView
from functions.coordination.records import Action, Lease
from functions.coordination.store import CoordStore
from functions.kernel.clock import iso_ms, ms_of, now_iso
from functions.kernel.ids import kv_key, new_id
from functions.kernel.scrub import scrub
from functions.kernel.views import as_view

DEFAULT_TTL_MS = 600_000
MAX_TTL_MS = 3_600_000
_CREATE_ATTEMPTS = 8


def ttl_seconds(ttl_ms: float | None) -> int:
    ms = DEFAULT_TTL_MS if ttl_ms is None else min(ttl_ms, MAX_TTL_MS)
    return max(1, math.ceil(ms / 1000))


def _view(lease: Lease) -> LeaseView:
    v: LeaseView = as_view(lease, LeaseView)
    return v


def _closed(a: Action) -> LeaseOut | None:
    if a.status == "done":
        return LeaseOut(success=False, error="action already completed")
    if a.status == "cancelled":
        return LeaseOut(success=False, error="action is cancelled")
    return None


def _live(lease: Lease, agent_id: str) -> bool:
    # Not "expiresAt > my clock": the key exists until JetStream's TTL removes it, by the
    # server's clock; a host whose clock ran ahead refused a holder's release in time.
    return lease.agent_id == agent_id


async def bus_ms(cs: CoordStore) -> int:
    """Now by the bus's clock, which runs the lease TTLs (the host's may be off)."""
    return int(await cs.client.bus_time() * 1000)


def _new_lease(req: LeaseIn, agent: str, ttl: int, start: int) -> Lease:
    return Lease(
        id=new_id("lse"),
        action_id=req.action_id,
        agent_id=agent,
        acquired_at=iso_ms(start),
        expires_at=iso_ms(start + ttl * 1000),
    )


async def _drop(cs: CoordStore, key: str, revision: int | None) -> None:
    if revision is not None:
        with contextlib.suppress(CasConflict):
            await cs.leases.delete(key, revision=revision)


async def acquire(cs: CoordStore, req: LeaseIn) -> LeaseOut:
    key = kv_key(req.action_id)
    ttl = ttl_seconds(req.ttl_ms)
    agent = scrub(req.agent_id)
    lease = _new_lease(req, agent, ttl, await bus_ms(cs))
    # The claim is tried while the action is read (one round trip less); a claim on an
    # action that turns out closed or blocked is dropped before anyone could commit it.
    cur, lease_rev = await asyncio.gather(
        cs.entry(cs.actions, key, Action), cs.leases.create(key, lease, ttl=ttl)
    )
    if cur is None:
        await _drop(cs, key, lease_rev)
        raise FunctionError("NOT_FOUND", f"no action {req.action_id!r}", field="actionId")
    closed = _closed(cur.value)
    if closed is not None:
        await _drop(cs, key, lease_rev)
        return closed
    if cur.value.edges:
        blockers = (await Gates.around(cs, cur.value)).blockers(cur.value)
        if blockers:
            await _drop(cs, key, lease_rev)
            return LeaseOut(success=False, error="action is blocked", blockers=blockers)
    for _ in range(_CREATE_ATTEMPTS):
        if lease_rev is not None:
            break
        held = await cs.entry(cs.leases, key, Lease)
        if held is None:  # it ran out between the create and the read: try again
            lease = _new_lease(req, agent, ttl, await bus_ms(cs))
            lease_rev = await cs.leases.create(key, lease, ttl=ttl)
            continue
        if held.value.agent_id == agent:
            return LeaseOut(
                success=True,
                lease=_view(held.value),
                renewed=False,
                message="Already holding this lease",
            )
        return LeaseOut(
            success=False,
            error="action already leased",
            held_by=held.value.agent_id,
            expires_at=held.value.expires_at,
        )
    if lease_rev is None:
        raise FunctionError("UNAVAILABLE", "the lease kept changing; retry", retryable=True)

    # Commit the claim on the action record. A concurrent update (a cascade, an expiry
    # handing the previous holder's claim back) makes us read it again.
    while True:
        a = cur.value
        closed = _closed(a)
        if closed is not None:
            await _drop(cs, key, lease_rev)
            return closed
        previous = a.lease_id if a.lease_id and a.lease_id != lease.id else ""
        new = msgspec.structs.replace(
            a, status="active", assigned_to=agent, lease_id=lease.id, updated_at=now_iso()
        )
        try:
            action_rev = await cs.actions.compare_and_set(key, new, cur.revision)
            break
        except CasConflict:
            got = await cs.entry(cs.actions, key, Action)
            if got is None:
                await _drop(cs, key, lease_rev)
                raise FunctionError(
                    "NOT_FOUND", f"no action {req.action_id!r}", field="actionId"
                ) from None
            cur = got
    committed = now_iso()
    writes = [
        cs.audit(
            "lease-acquire",
            [a.id, lease.id],
            actor=agent,
            project=a.project,
            leaseId=lease.id,
            agentId=agent,
            expiresAt=lease.expires_at,
            committedAt=committed,
            actionRevision=action_rev,
            leaseRevision=lease_rev,
        )
    ]
    if previous:
        # The previous holder's lease ran out and nobody handed the action back yet.
        writes.append(
            cs.audit(
                "lease-expire",
                [a.id, previous],
                actor=a.assigned_to,
                project=a.project,
                leaseId=previous,
                agentId=a.assigned_to,
                actionRevision=action_rev,
                by="acquire",
            )
        )
    await asyncio.gather(*writes)
    return LeaseOut(success=True, lease=_view(lease), renewed=False)


async def release(cs: CoordStore, req: LeaseIn) -> LeaseOut:
    key = kv_key(req.action_id)
    agent = scrub(req.agent_id)
    held, cur = await asyncio.gather(
        cs.entry(cs.leases, key, Lease), cs.entry(cs.actions, key, Action)
    )
    if held is None or not _live(held.value, agent):
        return LeaseOut(success=False, error="no active lease found for this agent")
    lease = held.value
    done = bool(req.result)
    while True:
        if cur is None:
            with contextlib.suppress(CasConflict):
                await cs.leases.delete(key, revision=held.revision)
            raise FunctionError("NOT_FOUND", f"no action {req.action_id!r}", field="actionId")
        a = cur.value
        if a.lease_id != lease.id:
            return LeaseOut(success=False, error="the lease is no longer this agent's")
        now = now_iso()
        new = msgspec.structs.replace(
            a,
            status="done" if done else "pending",
            result=scrub(req.result or "") if done else a.result,
            completed_at=now if done else a.completed_at,
            assigned_to="",
            lease_id="",
            updated_at=now,
        )
        try:
            action_rev = await cs.actions.compare_and_set(key, new, cur.revision)
            break
        except CasConflict:
            cur = await cs.entry(cs.actions, key, Action)
    await asyncio.gather(
        _drop(cs, key, held.revision),  # it may have run out since: nothing to delete
        cs.audit(
            "lease-release",
            [a.id, lease.id],
            actor=agent,
            project=a.project,
            leaseId=lease.id,
            agentId=agent,
            actionRevision=action_rev,
            status=new.status,
        ),
    )
    if done:
        await unblock_dependents(cs, new, agent)
    return LeaseOut(success=True, released=True, action=view(new))


async def renew(cs: CoordStore, req: LeaseIn) -> LeaseOut:
    key = kv_key(req.action_id)
    agent = scrub(req.agent_id)
    held = await cs.entry(cs.leases, key, Lease)
    if held is None or not _live(held.value, agent):
        return LeaseOut(success=False, error="no active (non-expired) lease to renew")
    now = await bus_ms(cs)
    # upstream's rule: the new TTL counts from the old expiry, capped at the longest lease
    want = min(
        max(now, ms_of(held.value.expires_at)) + ttl_seconds(req.ttl_ms) * 1000, now + MAX_TTL_MS
    )
    ttl = max(1, math.ceil((want - now) / 1000))
    lease = msgspec.structs.replace(
        held.value, expires_at=iso_ms(now + ttl * 1000), renewed_at=iso_ms(now)
    )
    try:
        await cs.leases.compare_and_set(key, lease, held.revision, ttl=ttl)
    except CasConflict:
        return LeaseOut(success=False, error="the lease changed concurrently; read it again")
    await cs.audit(
        "lease-renew",
        [req.action_id, lease.id],
        actor=agent,
        leaseId=lease.id,
        agentId=agent,
        expiresAt=lease.expires_at,
    )
    return LeaseOut(success=True, lease=_view(lease))


async def hand_back(cs: CoordStore, action_id: str, lease_id: str, by: str) -> bool:
    """The action of a lease that is gone (expired) returns to pending, once: False when
    it was released or taken over already, or the lease still holds."""
    key = kv_key(action_id)
    for _ in range(16):
        cur = await cs.entry(cs.actions, key, Action)
        if cur is None or cur.value.lease_id != lease_id or cur.value.status != "active":
            return False
        still = await cs.get(cs.leases, key, Lease)
        if still is not None and still.id == lease_id:
            return False
        a = cur.value
        new = msgspec.structs.replace(
            a, status="pending", assigned_to="", lease_id="", updated_at=now_iso()
        )
        try:
            action_rev = await cs.actions.compare_and_set(key, new, cur.revision)
        except CasConflict:
            continue
        await cs.audit(
            "lease-expire",
            [a.id, lease_id],
            actor=a.assigned_to,
            project=a.project,
            leaseId=lease_id,
            agentId=a.assigned_to,
            actionRevision=action_rev,
            by=by,
        )
        return True
    return False


async def on_lease_change(cs: CoordStore, ev: StateChange) -> None:
    """The state trigger on `mem_leases`: a deleted lease (expired: JetStream's marker, or
    released) hands its action back if nothing else did."""
    if ev.op != "deleted" or not isinstance(ev.old, dict):
        return
    try:
        old = msgspec.convert(ev.old, Lease)
    except msgspec.ValidationError:
        return
    await hand_back(cs, old.action_id, old.id, by="expiry")


async def sweep(cs: CoordStore) -> int:
    """Backstop for the trigger: active actions whose lease key is gone."""
    n = 0
    for a in await cs.all(cs.actions, Action):
        if a.status == "active" and a.lease_id:
            n += await hand_back(cs, a.id, a.lease_id, by="sweep")
    return n
