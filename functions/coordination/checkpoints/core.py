"""Checkpoints: an external condition (CI, an approval, a deploy) that gates actions until a
call resolves it. Gated actions carry a `gated_by` edge to the checkpoint; passing it
unblocks those whose every gate passed and every dependency is done. An expiry is a timer
(a TTL key) the state trigger fires."""

from __future__ import annotations

import msgspec

from engine import CasConflict, FunctionError
from functions.coordination.actions import core as actions
from functions.coordination.actions.gates import refresh_status, unblock_gated
from functions.coordination.checkpoints.wire import (
    CheckpointCreateIn,
    CheckpointListIn,
    CheckpointOut,
    CheckpointResolveIn,
    CheckpointView,
)
from functions.coordination.records import Checkpoint, Edge
from functions.coordination.store import CoordStore
from functions.kernel.clock import iso_ms, ms_of, now_iso, now_ms
from functions.kernel.ids import kv_key, new_id
from functions.kernel.names import names
from functions.kernel.scrub import scrub
from functions.kernel.views import as_view


def view(c: Checkpoint) -> CheckpointView:
    v: CheckpointView = as_view(c, CheckpointView)
    return v


async def gate(cs: CoordStore, action_ids: list[str], gate_id: str, actor: str) -> None:
    """Put `action_ids` behind `gate_id` (a checkpoint or a sentinel)."""
    for aid in action_ids:
        e = Edge(
            id=new_id("ae"),
            type="gated_by",
            source_action_id=aid,
            target_action_id=gate_id,
            created_at=now_iso(),
        )
        await actions.attach(cs, e)
        await refresh_status(cs, aid, actor)


async def create(cs: CoordStore, req: CheckpointCreateIn) -> CheckpointOut:
    for i, aid in enumerate(names(req.linked_action_ids)):
        await actions.load(cs, aid, f"linkedActionIds[{i}]")
    now = now_ms()
    cp = Checkpoint(
        id=new_id("ckpt"),
        name=scrub(req.name.strip()),
        description=scrub(req.description.strip()),
        type=req.type,
        created_at=iso_ms(now),
        linked_action_ids=names(req.linked_action_ids),
        expires_at=iso_ms(now + int(req.expires_in_ms)) if req.expires_in_ms else "",
        project=req.project,
    )
    await cs.checkpoints.create(kv_key(cp.id), cp)
    if cp.expires_at:
        await cs.timer("checkpoint-expiry", cp.id, ms_of(cp.expires_at))
    await gate(cs, cp.linked_action_ids, cp.id, req.agent_id)
    await cs.audit(
        "checkpoint-create",
        [cp.id, *cp.linked_action_ids],
        actor=req.agent_id,
        project=cp.project,
        type=cp.type,
        name=cp.name,
    )
    return CheckpointOut(success=True, checkpoint=view(cp))


async def resolve(cs: CoordStore, req: CheckpointResolveIn) -> CheckpointOut:
    key = kv_key(req.checkpoint_id)
    for _ in range(16):
        cur = await cs.entry(cs.checkpoints, key, Checkpoint)
        if cur is None:
            raise FunctionError(
                "NOT_FOUND", f"no checkpoint {req.checkpoint_id!r}", field="checkpointId"
            )
        if cur.value.status != "pending":
            raise FunctionError(
                "CONFLICT", f"checkpoint already {cur.value.status}", field="checkpointId"
            )
        cp = msgspec.structs.replace(
            cur.value,
            status=req.status,
            resolved_at=now_iso(),
            resolved_by=scrub(req.resolved_by or req.agent_id),
            result=req.result,
        )
        try:
            await cs.checkpoints.compare_and_set(key, cp, cur.revision)
            break
        except CasConflict:
            continue
    else:
        raise FunctionError("UNAVAILABLE", "the checkpoint kept changing; retry", retryable=True)
    await cs.audit(
        "checkpoint-resolve",
        [cp.id],
        actor=cp.resolved_by,
        project=cp.project,
        status=cp.status,
    )
    unblocked = 0
    if cp.status == "passed":
        unblocked = await unblock_gated(cs, cp.linked_action_ids, cp.resolved_by)
    return CheckpointOut(success=True, checkpoint=view(cp), unblocked_count=unblocked)


async def listing(cs: CoordStore, req: CheckpointListIn) -> CheckpointOut:
    found = [
        c
        for c in await cs.all(cs.checkpoints, Checkpoint)
        if (req.status is None or c.status == req.status)
        and (req.type is None or c.type == req.type)
    ]
    found.sort(key=lambda c: c.created_at, reverse=True)
    return CheckpointOut(success=True, checkpoints=[view(c) for c in found])


async def expire(cs: CoordStore, checkpoint_id: str, by: str) -> bool:
    """A pending checkpoint past its expiry becomes expired (its actions stay gated)."""
    key = kv_key(checkpoint_id)
    for _ in range(16):
        cur = await cs.entry(cs.checkpoints, key, Checkpoint)
        if cur is None or cur.value.status != "pending" or not cur.value.expires_at:
            return False
        if ms_of(cur.value.expires_at) > now_ms():
            return False
        cp = msgspec.structs.replace(cur.value, status="expired", resolved_at=now_iso())
        try:
            await cs.checkpoints.compare_and_set(key, cp, cur.revision)
        except CasConflict:
            continue
        await cs.audit("checkpoint-expire", [cp.id], project=cp.project, by=by)
        return True
    return False
