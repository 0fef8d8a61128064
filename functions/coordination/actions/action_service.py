"""Actions' operations: create, update, link, list, get; the frontier and the next pick."""

from __future__ import annotations

from engine import Tool, operation
from functions.coordination.actions import core, frontier
from functions.coordination.actions.wire import (
    ActionCreateIn,
    ActionCreateOut,
    ActionGetIn,
    ActionGetOut,
    ActionListIn,
    ActionOut,
    ActionsOut,
    ActionUpdateIn,
    EdgeCreateIn,
    EdgeOut,
    FrontierIn,
    FrontierOut,
    NextIn,
    NextOut,
)
from functions.coordination.store import ConceptService, CoordOwner, rest


class ActionService(ConceptService[CoordOwner]):
    @operation(
        "mem::action-create",
        description="Create an actionable work item with typed dependencies. Actions track "
        "what agents need to do and how work items relate to each other.",
        http=rest("POST", "actions", status=201),
        tool=Tool("memory_action_create"),
    )
    async def action_create(self, req: ActionCreateIn) -> ActionCreateOut:
        return await core.create(self.cs, req)

    @operation(
        "mem::action-update",
        description="Update an action's status, priority, or details. Set status to 'done' "
        "to complete it and unblock dependent actions.",
        http=rest("POST", "actions/update"),
        tool=Tool("memory_action_update"),
    )
    async def action_update(self, req: ActionUpdateIn) -> ActionOut:
        return await core.update(self.cs, req)

    @operation(
        "mem::action-list",
        description="List actions (?status=&project=&parentId=&limit=)",
        http=rest("GET", "actions"),
    )
    async def action_list(self, req: ActionListIn) -> ActionsOut:
        return await core.listing(self.cs, req)

    @operation(
        "mem::action-get",
        description="One action with its edges and children (?actionId=)",
        http=rest("GET", "actions/get"),
    )
    async def action_get(self, req: ActionGetIn) -> ActionGetOut:
        return await core.get(self.cs, req.action_id)

    @operation(
        "mem::action-edge-create",
        description="Add an edge between actions: requires, blocks, unlocks, spawned_by, "
        "gated_by, conflicts_with",
        http=rest("POST", "actions/edges", status=201),
    )
    async def action_edge(self, req: EdgeCreateIn) -> EdgeOut:
        return await core.add_edge(self.cs, req)

    @operation(
        "mem::frontier",
        description="Get all unblocked actions ranked by priority and urgency. Returns the "
        "frontier of actionable work with no unsatisfied dependencies.",
        http=rest("GET", "frontier"),
        tool=Tool("memory_frontier"),
    )
    async def frontier(self, req: FrontierIn) -> FrontierOut:
        return await frontier.frontier(self.cs, req)

    @operation(
        "mem::next",
        description="Get the single most important next action to work on. Combines "
        "dependency resolution, priority, and recency into a score.",
        http=rest("GET", "next"),
        tool=Tool("memory_next"),
    )
    async def next(self, req: NextIn) -> NextOut:
        return await frontier.next_for(self.cs, req)
