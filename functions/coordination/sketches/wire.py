"""Sketches' wire: create, add to, promote, discard, list and collect sketches."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

import msgspec

from functions.coordination.actions.wire import ActionView, EdgeView
from functions.coordination.inputs import AgentId, Id, Priority, Text, Title
from functions.coordination.records import Sketch, SketchListing
from functions.kernel.names import Names, names
from functions.kernel.views import view

# To the type checker a view is its record (the same attributes); at run time it is the
# camelCase type `view` makes (functions.kernel.views).
if TYPE_CHECKING:
    SketchView = Sketch
    SketchListed = SketchListing
else:
    SketchView = view(Sketch)
    SketchListed = view(SketchListing)


class SketchCreateIn(msgspec.Struct, rename="camel", kw_only=True):
    title: Title
    description: Text = ""
    expires_in_ms: Annotated[float, msgspec.Meta(gt=0, le=30 * 86_400_000)] = 3_600_000
    project: str = ""
    agent_id: AgentId = ""


class SketchAddIn(msgspec.Struct, rename="camel", kw_only=True):
    sketch_id: Id
    title: Title
    description: Text = ""
    priority: Priority = 5
    depends_on: Names = msgspec.field(default_factory=list)
    agent_id: AgentId = ""

    def __post_init__(self) -> None:
        self.depends_on = names(self.depends_on)


class SketchIdIn(msgspec.Struct, rename="camel", kw_only=True):
    sketch_id: Id
    project: str = ""
    """Promote: the project the promoted actions move to."""
    agent_id: AgentId = ""


class SketchListIn(msgspec.Struct, rename="camel", kw_only=True):
    status: Literal["active", "promoted", "discarded"] | None = None
    project: str = ""


class SketchOut(msgspec.Struct):
    success: bool
    sketch: SketchView


class SketchAddOut(msgspec.Struct):
    success: bool
    action: ActionView
    edges: list[EdgeView]


class SketchPromoteOut(msgspec.Struct, rename="camel", kw_only=True):
    success: bool
    promoted_ids: list[str]


class SketchDiscardOut(msgspec.Struct, rename="camel", kw_only=True):
    success: bool
    discarded_count: int


class SketchesOut(msgspec.Struct):
    success: bool
    sketches: list[SketchListed]


class SketchGcOut(msgspec.Struct):
    success: bool
    collected: int
