"""Sketches' operations: create, add, promote, discard, list, collect the expired."""

from __future__ import annotations

from engine import Tool, operation
from functions.coordination.sketches import core
from functions.coordination.sketches.wire import (
    SketchAddIn,
    SketchAddOut,
    SketchCreateIn,
    SketchDiscardOut,
    SketchesOut,
    SketchGcOut,
    SketchIdIn,
    SketchListIn,
    SketchOut,
    SketchPromoteOut,
)
from functions.coordination.store import ConceptService, CoordOwner, rest


class SketchService(ConceptService[CoordOwner]):
    @operation(
        "mem::sketch-create",
        description="Create an ephemeral action graph for exploratory work. Auto-expires "
        "after TTL. Can be promoted to permanent actions or discarded.",
        http=rest("POST", "sketches", status=201),
        tool=Tool("memory_sketch_create"),
    )
    async def sketch_create(self, req: SketchCreateIn) -> SketchOut:
        return await core.create(self.cs, req)

    @operation(
        "mem::sketch-add",
        description="Add an action to a sketch (dependsOn: actions of the same sketch)",
        http=rest("POST", "sketches/add", status=201),
    )
    async def sketch_add(self, req: SketchAddIn) -> SketchAddOut:
        return await core.add(self.cs, req)

    @operation(
        "mem::sketch-promote",
        description="Promote a sketch's ephemeral actions to permanent actions. Makes the "
        "exploratory work official.",
        http=rest("POST", "sketches/promote"),
        tool=Tool("memory_sketch_promote"),
    )
    async def sketch_promote(self, req: SketchIdIn) -> SketchPromoteOut:
        return await core.promote(self.cs, req)

    @operation(
        "mem::sketch-discard",
        description="Discard a sketch and delete its actions",
        http=rest("POST", "sketches/discard"),
    )
    async def sketch_discard(self, req: SketchIdIn) -> SketchDiscardOut:
        return await core.discard_op(self.cs, req)

    @operation(
        "mem::sketch-list",
        description="List sketches (?status=&project=)",
        http=rest("GET", "sketches"),
    )
    async def sketch_list(self, req: SketchListIn) -> SketchesOut:
        return await core.listing(self.cs, req)

    @operation(
        "mem::sketch-gc",
        description="Discard every sketch past its expiry",
        http=rest("POST", "sketches/gc", source="none"),
    )
    async def sketch_gc(self) -> SketchGcOut:
        return await core.gc(self.cs)
