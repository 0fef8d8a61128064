"""Sketches: an ephemeral graph of actions for exploratory work. Its actions carry the
sketch's id and stay off the frontier; promoting makes them ordinary actions, discarding
(or the sketch's expiry, a timer the state trigger fires; `gc` is the backstop) deletes
them. The sketch record's status moves first, by compare-and-set, so an add racing a
discard or a promotion loses cleanly."""

from __future__ import annotations

import msgspec

from engine import CasConflict, FunctionError
from functions.coordination.actions import core as actions
from functions.coordination.actions.gates import refresh_status
from functions.coordination.records import Action, Edge, Sketch, SketchListing
from functions.coordination.sketches.wire import (
    SketchAddIn,
    SketchAddOut,
    SketchCreateIn,
    SketchDiscardOut,
    SketchesOut,
    SketchGcOut,
    SketchIdIn,
    SketchListed,
    SketchListIn,
    SketchOut,
    SketchPromoteOut,
    SketchView,
)
from functions.coordination.store import CoordStore
from functions.kernel.clock import iso_ms, ms_of, now_iso, now_ms
from functions.kernel.ids import kv_key, new_id
from functions.kernel.scrub import scrub
from functions.kernel.views import as_view


def view(s: Sketch) -> SketchView:
    v: SketchView = as_view(s, SketchView)
    return v


async def create(cs: CoordStore, req: SketchCreateIn) -> SketchOut:
    now = now_ms()
    sk = Sketch(
        id=new_id("sk"),
        title=scrub(req.title.strip()),
        description=scrub(req.description.strip()),
        project=req.project,
        created_at=iso_ms(now),
        expires_at=iso_ms(now + int(req.expires_in_ms)),
    )
    await cs.sketches.create(kv_key(sk.id), sk)
    await cs.timer("sketch-expiry", sk.id, ms_of(sk.expires_at))
    await cs.audit("sketch-create", [sk.id], actor=req.agent_id, project=sk.project, title=sk.title)
    return SketchOut(True, view(sk))


async def _active(cs: CoordStore, sketch_id: str) -> Sketch:
    sk = await cs.need(cs.sketches, sketch_id, Sketch, "sketchId", "sketch")
    if sk.status != "active":
        raise FunctionError("CONFLICT", f"sketch is {sk.status}", field="sketchId")
    return sk


async def add(cs: CoordStore, req: SketchAddIn) -> SketchAddOut:
    sk = await _active(cs, req.sketch_id)
    for i, dep in enumerate(req.depends_on):
        if dep not in sk.action_ids:
            raise FunctionError(
                "UNPROCESSABLE",
                f"dependency {dep} is not an action of this sketch",
                field=f"dependsOn[{i}]",
            )
    now = now_iso()
    aid = new_id("act")
    edges = [
        Edge(
            id=new_id("ae"),
            type="requires",
            source_action_id=aid,
            target_action_id=dep,
            created_at=now,
        )
        for dep in req.depends_on
    ]
    action = Action(
        id=aid,
        title=scrub(req.title.strip()),
        description=scrub(req.description.strip()),
        status="blocked" if edges else "pending",
        priority=req.priority,
        created_at=now,
        updated_at=now,
        created_by=req.agent_id or "sketch",
        project=sk.project,
        sketch_id=sk.id,
        edges=edges,
    )

    def append(cur: Sketch | None) -> Sketch | None:
        if cur is None or cur.status != "active":
            raise FunctionError("CONFLICT", "sketch is no longer active", field="sketchId")
        cur.action_ids.append(aid)
        return cur

    # The sketch names the action first: a discard or gc that wins the race then deletes it.
    await cs.update(cs.sketches, kv_key(sk.id), append, Sketch)
    await cs.actions.create(kv_key(aid), action)
    for e in edges:
        await _dependent(cs, e.target_action_id, aid)
    if edges:
        await refresh_status(cs, aid)
    if (await cs.get(cs.sketches, kv_key(sk.id), Sketch) or sk).status == "discarded":
        await cs.actions.delete(kv_key(aid))
        raise FunctionError("CONFLICT", "sketch was discarded", field="sketchId")
    await cs.audit("sketch-add", [sk.id, aid], actor=req.agent_id, project=sk.project)
    return SketchAddOut(True, actions.view(action), [actions.edge_view(e) for e in edges])


async def _dependent(cs: CoordStore, target: str, dependent: str) -> None:
    def put(cur: Action | None) -> Action | None:
        if cur is None or dependent in cur.dependents:
            return None
        cur.dependents.append(dependent)
        return cur

    await cs.update(cs.actions, kv_key(target), put, Action)


async def _finish(cs: CoordStore, sketch_id: str, status: str, *, due: bool = False) -> Sketch:
    """CAS the sketch from active to `status` (with `due`, only once it expired)."""
    key = kv_key(sketch_id)
    for _ in range(16):
        cur = await cs.entry(cs.sketches, key, Sketch)
        if cur is None:
            raise FunctionError("NOT_FOUND", f"no sketch {sketch_id!r}", field="sketchId")
        if cur.value.status != "active":
            raise FunctionError("CONFLICT", f"sketch is {cur.value.status}", field="sketchId")
        if due and ms_of(cur.value.expires_at) > now_ms():
            raise FunctionError("CONFLICT", "sketch has not expired", field="sketchId")
        now = now_iso()
        new = msgspec.structs.replace(
            cur.value,
            status=status,
            promoted_at=now if status == "promoted" else "",
            discarded_at=now if status == "discarded" else "",
        )
        try:
            await cs.sketches.compare_and_set(key, new, cur.revision)
        except CasConflict:
            continue
        return new
    raise FunctionError("UNAVAILABLE", "the sketch kept changing; retry", retryable=True)


async def promote(cs: CoordStore, req: SketchIdIn) -> SketchPromoteOut:
    sk = await _finish(cs, req.sketch_id, "promoted")
    promoted: list[str] = []
    for aid in sk.action_ids:

        def official(cur: Action | None) -> Action | None:
            if cur is None:
                return None
            cur.sketch_id, cur.updated_at = "", now_iso()
            if req.project:
                cur.project = req.project
            return cur

        if await cs.update(cs.actions, kv_key(aid), official, Action) is not None:
            promoted.append(aid)
    await cs.audit(
        "sketch-promote", [sk.id, *promoted], actor=req.agent_id, project=req.project or sk.project
    )
    return SketchPromoteOut(success=True, promoted_ids=promoted)


async def discard(cs: CoordStore, sketch_id: str, actor: str, *, due: bool = False) -> int:
    sk = await _finish(cs, sketch_id, "discarded", due=due)
    for aid in sk.action_ids:
        await cs.actions.delete(kv_key(aid))
    await cs.audit(
        "sketch-gc" if due else "sketch-discard",
        [sk.id, *sk.action_ids],
        actor=actor,
        project=sk.project,
    )
    return len(sk.action_ids)


async def discard_op(cs: CoordStore, req: SketchIdIn) -> SketchDiscardOut:
    return SketchDiscardOut(
        success=True, discarded_count=await discard(cs, req.sketch_id, req.agent_id)
    )


async def gc(cs: CoordStore) -> SketchGcOut:
    now = now_ms()
    n = 0
    for sk in await cs.all(cs.sketches, Sketch):
        if sk.status == "active" and ms_of(sk.expires_at) <= now:
            try:
                await discard(cs, sk.id, "", due=True)
                n += 1
            except FunctionError:
                continue  # promoted or discarded meanwhile
    return SketchGcOut(True, n)


async def on_timer(cs: CoordStore, sketch_id: str) -> bool:
    try:
        await discard(cs, sketch_id, "", due=True)
    except FunctionError:
        return False
    return True


async def listing(cs: CoordStore, req: SketchListIn) -> SketchesOut:
    found = [
        s
        for s in await cs.all(cs.sketches, Sketch)
        if (req.status is None or s.status == req.status)
        and (not req.project or s.project == req.project)
    ]
    found.sort(key=lambda s: s.created_at, reverse=True)
    listed = [
        SketchListing(**msgspec.structs.asdict(s), action_count=len(s.action_ids)) for s in found
    ]
    return SketchesOut(True, as_view(listed, list[SketchListed]))
