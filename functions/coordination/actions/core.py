"""Actions: work items with typed edges, statuses, priority and assignee; creating,
updating and linking them (an edge stored on both ends where both need it), listing one or
many. What blocks one and what completion unblocks: `gates`; the frontier of unblocked work
and the best next one for an agent: `frontier`."""

from __future__ import annotations

from typing import Any

import msgspec

from engine import FunctionError
from functions.coordination.actions.gates import (
    Gates,
    find_gate,
    refresh_status,
    unblock_dependents,
)
from functions.coordination.actions.wire import (
    ActionCreateIn,
    ActionCreateOut,
    ActionGetOut,
    ActionListIn,
    ActionOut,
    ActionsOut,
    ActionUpdateIn,
    ActionView,
    EdgeCreateIn,
    EdgeKind,
    EdgeOut,
    EdgeView,
)
from functions.coordination.records import Action, Checkpoint, Edge, EdgeType, Sentinel
from functions.coordination.store import CoordStore
from functions.kernel.clock import now_iso
from functions.kernel.ids import kv_key, new_id
from functions.kernel.names import names
from functions.kernel.scrub import scrub
from functions.kernel.views import as_view


def view(a: Action) -> ActionView:
    v: ActionView = as_view(a, ActionView)
    return v


def edge_view(e: Edge) -> EdgeView:
    v: EdgeView = as_view(e, EdgeView)
    return v


def _edge(kind: EdgeKind, source: str, target: str, now: str, meta: dict[str, Any]) -> Edge:
    stored: EdgeType
    if kind == "blocks":  # source blocks target: target requires source
        stored, source, target = "requires", target, source
    else:
        stored = kind
    return Edge(
        id=new_id("ae"),
        type=stored,
        source_action_id=source,
        target_action_id=target,
        created_at=now,
        metadata=meta,
    )


async def load(cs: CoordStore, action_id: str, field: str = "actionId") -> Action:
    return await cs.need(cs.actions, action_id, Action, field, "action")


async def _add_dependent(cs: CoordStore, target_id: str, dependent_id: str) -> None:
    def add(cur: Action | None) -> Action | None:
        if cur is None or dependent_id in cur.dependents:
            return None
        cur.dependents.append(dependent_id)
        return cur

    await cs.update(cs.actions, kv_key(target_id), add, Action)


async def create(cs: CoordStore, req: ActionCreateIn) -> ActionCreateOut:
    now = now_iso()
    actor = scrub(req.created_by or req.agent_id) or "unknown"
    action = Action(
        id=new_id("act"),
        title=scrub(req.title.strip()),
        description=scrub(req.description.strip()),
        priority=req.priority,
        created_at=now,
        updated_at=now,
        created_by=actor,
        project=req.project,
        tags=[scrub(t) for t in names(req.tags)],
        source_observation_ids=names(req.source_observation_ids),
        source_memory_ids=names(req.source_memory_ids),
        parent_id=req.parent_id,
        metadata=req.metadata,
    )
    if req.parent_id:
        await load(cs, req.parent_id, "parentId")
    specs: list[tuple[EdgeKind, str]] = [("requires", t) for t in names(req.requires)] + [
        (e.type, e.target_action_id) for e in req.edges
    ]
    edges: list[Edge] = []
    for kind, target in specs:
        if kind == "gated_by":
            cps: dict[str, Checkpoint] = {}
            snls: dict[str, Sentinel] = {}
            await find_gate(cs, target, cps, snls)
            if not cps and not snls:
                raise FunctionError(
                    "NOT_FOUND", f"no checkpoint or sentinel {target!r}", field="edges"
                )
        else:
            await load(cs, target, "requires" if kind == "requires" else "edges")
        edges.append(_edge(kind, action.id, target, now, {}))
    action.edges = [
        e for e in edges if e.source_action_id == action.id or e.type == "conflicts_with"
    ]
    if (await Gates.around(cs, action)).blockers(action):
        action.status = "blocked"
    await cs.actions.create(kv_key(action.id), action)
    for e in edges:
        if e.source_action_id == action.id and e.type == "requires":
            await _add_dependent(cs, e.target_action_id, action.id)
        elif e.source_action_id != action.id or e.type == "conflicts_with":
            await attach(cs, e)  # "blocks": the other action now requires this one
            if e.source_action_id != action.id:
                await refresh_status(cs, e.source_action_id, actor)
    await cs.audit(
        "action-create",
        [action.id],
        actor=actor,
        project=action.project,
        title=action.title,
        edges=[f"{e.type}:{e.source_action_id}->{e.target_action_id}" for e in edges],
    )
    return ActionCreateOut(True, view(action), [edge_view(e) for e in edges])


async def attach(cs: CoordStore, e: Edge) -> None:
    """Store an edge on the other end too: the source of a `blocks`-made `requires`, the
    other side of a conflict."""
    holder = e.source_action_id
    other = e.target_action_id

    def add(cur: Action | None) -> Action | None:
        if cur is None or any(x.id == e.id for x in cur.edges):
            return None
        cur.edges.append(e)
        return cur

    if e.type == "conflicts_with":
        for side in (holder, other):
            await cs.update(cs.actions, kv_key(side), add, Action)
        return
    await cs.update(cs.actions, kv_key(holder), add, Action)
    if e.type == "requires":
        await _add_dependent(cs, other, holder)


async def update(cs: CoordStore, req: ActionUpdateIn) -> ActionOut:
    before: Action | None = None
    actor = req.assigned_to or req.agent_id or "unknown"

    def change(cur: Action | None) -> Action | None:
        nonlocal before
        if cur is None:
            return None
        before = msgspec.structs.replace(cur)
        new = msgspec.structs.replace(cur, updated_at=now_iso())
        if req.status is not None:
            new.status = req.status
            if req.status in ("done", "cancelled"):
                new.lease_id = ""
                if req.status == "done":
                    new.completed_at = new.updated_at
        if req.title is not None:
            new.title = scrub(req.title.strip())
        if req.description is not None:
            new.description = scrub(req.description.strip())
        if req.priority is not None:
            new.priority = req.priority
        if req.assigned_to is not None:
            new.assigned_to = req.assigned_to
        if req.result is not None:
            new.result = scrub(req.result)
        if req.tags is not None:
            new.tags = [scrub(t) for t in req.tags]
        return new

    after = await cs.update(cs.actions, kv_key(req.action_id), change, Action)
    if after is None or before is None:
        raise FunctionError("NOT_FOUND", f"no action {req.action_id!r}", field="actionId")
    await cs.audit(
        "action-update",
        [after.id],
        actor=actor,
        project=after.project,
        before=before.status,
        after=after.status,
    )
    if after.status == "done" and before.status != "done":
        await unblock_dependents(cs, after, actor)
    return ActionOut(True, view(after))


def _reaches(actions: dict[str, Action], start: str, goal: str) -> bool:
    """Whether `goal` is reachable from `start` over `requires` edges."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        cur = todo.pop()
        if cur == goal:
            return True
        if cur in seen:
            continue
        seen.add(cur)
        a = actions.get(cur)
        if a is not None:
            todo.extend(
                e.target_action_id
                for e in a.edges
                if e.type == "requires" and e.source_action_id == cur
            )
    return False


async def add_edge(cs: CoordStore, req: EdgeCreateIn) -> EdgeOut:
    now = now_iso()
    e = _edge(req.type, req.source_action_id, req.target_action_id, now, req.metadata)
    if e.source_action_id == e.target_action_id:
        raise FunctionError(
            "UNPROCESSABLE", "an action cannot depend on itself", field="targetActionId"
        )
    await load(cs, e.source_action_id, "sourceActionId")
    if e.type == "gated_by":
        cps: dict[str, Checkpoint] = {}
        snls: dict[str, Sentinel] = {}
        await find_gate(cs, e.target_action_id, cps, snls)
        if not cps and not snls:
            raise FunctionError(
                "NOT_FOUND",
                f"no checkpoint or sentinel {e.target_action_id!r}",
                field="targetActionId",
            )
    else:
        await load(cs, e.target_action_id, "targetActionId")
    if e.type == "requires":
        everything = {a.id: a for a in await cs.all(cs.actions, Action)}
        if _reaches(everything, e.target_action_id, e.source_action_id):
            raise FunctionError(
                "CONFLICT",
                f"{e.target_action_id} already depends on {e.source_action_id}: "
                "the edge would make a cycle",
                field="targetActionId",
            )
    await attach(cs, e)
    if e.type in ("requires", "gated_by"):
        await refresh_status(cs, e.source_action_id)
    await cs.audit(
        "action-edge",
        [e.id, e.source_action_id, e.target_action_id],
        actor=req.agent_id or "unknown",
        edge=f"{e.type}:{e.source_action_id}->{e.target_action_id}",
    )
    return EdgeOut(True, edge_view(e))


async def listing(cs: CoordStore, req: ActionListIn) -> ActionsOut:
    found = [
        a
        for a in await cs.all(cs.actions, Action)
        if (req.status is None or a.status == req.status)
        and (not req.project or a.project == req.project)
        and (not req.parent_id or a.parent_id == req.parent_id)
        and (not req.assigned_to or a.assigned_to == req.assigned_to)
        and (not req.tags or any(t in a.tags for t in req.tags))
    ]
    found.sort(key=lambda a: a.updated_at, reverse=True)
    return ActionsOut(True, [view(a) for a in found[: req.limit]])


async def get(cs: CoordStore, action_id: str) -> ActionGetOut:
    a = await load(cs, action_id)
    everything = await cs.all(cs.actions, Action)
    edges = {e.id: e for e in a.edges}
    for other in everything:
        for e in other.edges:
            if e.target_action_id == a.id or e.source_action_id == a.id:
                edges.setdefault(e.id, e)
    children = sorted((c for c in everything if c.parent_id == a.id), key=lambda c: c.created_at)
    return ActionGetOut(
        True,
        view(a),
        [edge_view(e) for e in sorted(edges.values(), key=lambda e: e.created_at)],
        [view(c) for c in children],
    )
