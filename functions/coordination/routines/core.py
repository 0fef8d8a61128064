"""Routines: frozen workflow templates. A run instantiates one action per step, with a
`requires` edge for each dependency, so the steps flow through the frontier, leases and
releases like any other work; its status is read from those actions."""

from __future__ import annotations

from typing import Any

import msgspec

from engine import CasConflict, FunctionError
from functions.coordination.records import Action, Edge, Routine, RoutineRun, RoutineStep
from functions.coordination.routines.wire import (
    Progress,
    RoutineCreateIn,
    RoutineListIn,
    RoutineOut,
    RoutineRunIn,
    RoutineRunOut,
    RoutinesOut,
    RoutineStatusOut,
    RoutineView,
    RunView,
    StepState,
)
from functions.coordination.store import CoordStore
from functions.kernel.clock import now_iso
from functions.kernel.ids import kv_key, new_id
from functions.kernel.scrub import scrub
from functions.kernel.views import as_view


def _cycle(steps: list[RoutineStep]) -> int | None:
    """A step order on a dependency cycle, or None."""
    deps = {s.order: s.depends_on for s in steps}
    state: dict[int, int] = {}  # 1: on the path, 2: done

    def visit(n: int) -> int | None:
        state[n] = 1
        for d in deps.get(n, []):
            if state.get(d) == 1:
                return d
            if d not in state and (hit := visit(d)) is not None:
                return hit
        state[n] = 2
        return None

    for s in steps:
        if s.order not in state and (hit := visit(s.order)) is not None:
            return hit
    return None


async def create(cs: CoordStore, req: RoutineCreateIn) -> RoutineOut:
    steps = [
        RoutineStep(
            order=s.order if s.order is not None else i,
            title=scrub(s.title.strip()),
            description=scrub(s.description),
            action_template=s.action_template,
            depends_on=s.depends_on,
        )
        for i, s in enumerate(req.steps)
    ]
    orders = [s.order for s in steps]
    if len(set(orders)) != len(orders):
        raise FunctionError("UNPROCESSABLE", "duplicate step orders", field="steps")
    for i, s in enumerate(steps):
        for d in s.depends_on:
            if d not in orders:
                raise FunctionError(
                    "UNPROCESSABLE",
                    f"step {s.order} depends on unknown order {d}",
                    field=f"steps[{i}].dependsOn",
                )
    if (hit := _cycle(steps)) is not None:
        raise FunctionError("UNPROCESSABLE", f"step {hit} is on a dependency cycle", field="steps")
    now = now_iso()
    routine = Routine(
        id=new_id("rtn"),
        name=scrub(req.name.strip()),
        description=scrub(req.description.strip()),
        steps=steps,
        created_at=now,
        updated_at=now,
        frozen=req.frozen,
        tags=[scrub(t) for t in req.tags],
    )
    await cs.routines.create(kv_key(routine.id), routine)
    await cs.audit(
        "routine-create", [routine.id], actor=req.agent_id, steps=len(steps), name=routine.name
    )
    return RoutineOut(True, as_view(routine, RoutineView))


async def listing(cs: CoordStore, req: RoutineListIn) -> RoutinesOut:
    found = [
        r
        for r in await cs.all(cs.routines, Routine)
        if req.frozen is None or r.frozen == req.frozen
    ]
    found.sort(key=lambda r: r.updated_at, reverse=True)
    return RoutinesOut(True, as_view(found, list[RoutineView]))


def _override(req: RoutineRunIn, order: int) -> dict[str, Any]:
    return req.overrides.get(str(order)) or {}


async def run(cs: CoordStore, req: RoutineRunIn) -> RoutineRunOut:
    routine = await cs.need(cs.routines, req.routine_id, Routine, "routineId", "routine")
    now = now_iso()
    run_id = new_id("run")
    ids = {s.order: new_id("act") for s in routine.steps}
    dependents: dict[int, list[str]] = {s.order: [] for s in routine.steps}
    for s in routine.steps:
        for d in s.depends_on:
            dependents[d].append(ids[s.order])
    initiator = scrub(req.initiated_by) or "routine"
    made: list[Action] = []
    for s in routine.steps:
        tpl, over = s.action_template, _override(req, s.order)
        priority = over.get("priority", tpl.get("priority", 5))
        action = Action(
            id=ids[s.order],
            title=scrub(str(over.get("title") or tpl.get("title") or s.title)),
            description=scrub(
                str(over.get("description") or tpl.get("description") or s.description)
            ),
            status="blocked" if s.depends_on else "pending",
            priority=min(10, max(1, int(priority))) if isinstance(priority, int | float) else 5,
            created_at=now,
            updated_at=now,
            created_by=initiator,
            project=req.project or str(tpl.get("project") or ""),
            tags=[
                *map(str, tpl.get("tags") or []),
                *map(str, over.get("tags") or []),
                f"routine:{routine.id}",
            ],
            metadata={"routineId": routine.id, "stepOrder": s.order, "runId": run_id},
            edges=[
                Edge(
                    id=new_id("ae"),
                    type="requires",
                    source_action_id=ids[s.order],
                    target_action_id=ids[d],
                    created_at=now,
                )
                for d in s.depends_on
            ],
            dependents=dependents[s.order],
        )
        made.append(action)
    # Every step's record is complete when written (its edges and dependents included), so
    # no reader sees half a graph; the run record comes last and names them all.
    for a in made:
        await cs.actions.create(kv_key(a.id), a)
    r = RoutineRun(
        id=run_id,
        routine_id=routine.id,
        started_at=now,
        action_ids=[a.id for a in made],
        step_status={str(s.order): "pending" for s in routine.steps},
        initiated_by=initiator,
        project=req.project,
    )
    await cs.runs.create(kv_key(r.id), r)
    await cs.audit(
        "routine-run",
        [r.id, routine.id, *r.action_ids],
        actor=initiator,
        project=req.project,
    )
    return RoutineRunOut(success=True, run=as_view(r, RunView), actions_created=len(made))


async def status(cs: CoordStore, run_id: str) -> RoutineStatusOut:
    key = kv_key(run_id)
    for _ in range(16):
        cur = await cs.entry(cs.runs, key, RoutineRun)
        if cur is None:
            raise FunctionError("NOT_FOUND", f"no run {run_id!r}", field="runId")
        r = cur.value
        states: list[StepState] = []
        steps = dict(r.step_status)
        for aid in r.action_ids:
            a = await cs.get(cs.actions, kv_key(aid), Action)
            if a is None:
                states.append(StepState(action_id=aid, status="cancelled", title="(missing)"))
                continue
            states.append(StepState(action_id=a.id, status=a.status, title=a.title))
            order = a.metadata.get("stepOrder")
            if order is not None and str(order) in steps:
                steps[str(order)] = {"cancelled": "failed", "blocked": "pending"}.get(
                    a.status, a.status
                )
        status = r.status
        if r.status == "running":
            if all(s.status == "done" for s in states):
                status = "completed"
            elif any(s.status == "cancelled" for s in states):
                status = "failed"
        new = msgspec.structs.replace(
            r,
            status=status,
            step_status=steps,
            completed_at=now_iso()
            if status == "completed" and not r.completed_at
            else r.completed_at,
        )
        if new != r:
            try:
                await cs.runs.compare_and_set(key, new, cur.revision)
            except CasConflict:
                continue
            if new.status != r.status:
                await cs.audit("routine-status", [r.id], project=r.project, status=new.status)
        count = {
            k: sum(1 for s in states if s.status == k)
            for k in ("done", "active", "pending", "blocked", "cancelled")
        }
        return RoutineStatusOut(
            True,
            as_view(new, RunView),
            states,
            Progress(total=len(r.action_ids), **count),
        )
    raise FunctionError("UNAVAILABLE", "the run kept changing; retry", retryable=True)
