"""Routines' operations: create, list, run, a run's status."""

from __future__ import annotations

from engine import Tool, operation
from functions.coordination.routines import core
from functions.coordination.routines.wire import (
    RoutineCreateIn,
    RoutineListIn,
    RoutineOut,
    RoutineRunIn,
    RoutineRunOut,
    RoutinesOut,
    RoutineStatusIn,
    RoutineStatusOut,
)
from functions.coordination.store import ConceptService, CoordOwner, rest


class RoutineService(ConceptService[CoordOwner]):
    @operation(
        "mem::routine-create",
        description="Create a workflow routine: ordered steps with dependencies",
        http=rest("POST", "routines", status=201),
    )
    async def routine_create(self, req: RoutineCreateIn) -> RoutineOut:
        return await core.create(self.cs, req)

    @operation(
        "mem::routine-list",
        description="List routines (?frozen=)",
        http=rest("GET", "routines"),
    )
    async def routine_list(self, req: RoutineListIn) -> RoutinesOut:
        return await core.listing(self.cs, req)

    @operation(
        "mem::routine-run",
        description="Instantiate a frozen workflow routine, creating actions for each step "
        "with proper dependencies.",
        http=rest("POST", "routines/run", status=201),
        tool=Tool("memory_routine_run"),
    )
    async def routine_run(self, req: RoutineRunIn) -> RoutineRunOut:
        return await core.run(self.cs, req)

    @operation(
        "mem::routine-status",
        description="A routine run's progress (?runId=)",
        http=rest("GET", "routines/status"),
    )
    async def routine_status(self, req: RoutineStatusIn) -> RoutineStatusOut:
        return await core.status(self.cs, req.run_id)
