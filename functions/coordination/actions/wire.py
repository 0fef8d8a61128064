"""Actions' wire: what creating, updating, linking, listing and ranking actions take and
return (coordination's shared field types: `functions.coordination.inputs`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import msgspec

from functions.coordination.inputs import AgentId, Id, Limit, Priority, Text, Title
from functions.coordination.records import Action, ActionStatus, Edge, EdgeType
from functions.kernel.names import Names, names
from functions.kernel.views import view

EdgeKind = EdgeType | Literal["blocks"]
"""`blocks` is stored the other way round: A blocks B is B requires A."""

# To the type checker a view is its record (the same attributes); at run time it is the
# camelCase type `view` makes (functions.kernel.views).
if TYPE_CHECKING:
    ActionView = Action
    EdgeView = Edge
else:
    ActionView = view(Action)
    EdgeView = view(Edge)


class EdgeSpec(msgspec.Struct, rename="camel", kw_only=True):
    type: EdgeKind
    target_action_id: Id


class ActionCreateIn(msgspec.Struct, rename="camel", kw_only=True):
    title: Title
    description: Text = ""
    priority: Priority = 5
    project: str = ""
    tags: Names = msgspec.field(default_factory=list)
    parent_id: str = ""
    requires: Names = msgspec.field(default_factory=list)
    """Ids of actions that must be done first (upstream's tool: comma-separated)."""
    edges: list[EdgeSpec] = msgspec.field(default_factory=list)
    created_by: AgentId = ""
    agent_id: AgentId = ""
    source_observation_ids: Names = msgspec.field(default_factory=list)
    source_memory_ids: Names = msgspec.field(default_factory=list)
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)

    def __post_init__(self) -> None:
        self.tags, self.requires = names(self.tags), names(self.requires)
        self.source_observation_ids = names(self.source_observation_ids)
        self.source_memory_ids = names(self.source_memory_ids)


class ActionCreateOut(msgspec.Struct):
    success: bool
    action: ActionView
    edges: list[EdgeView]


class ActionUpdateIn(msgspec.Struct, rename="camel", kw_only=True):
    action_id: Id
    status: ActionStatus | None = None
    title: Title | None = None
    description: Text | None = None
    priority: Priority | None = None
    assigned_to: AgentId | None = None
    result: Text | None = None
    tags: Names | None = None
    agent_id: AgentId = ""

    def __post_init__(self) -> None:
        if self.tags is not None:
            self.tags = names(self.tags)


class ActionOut(msgspec.Struct):
    success: bool
    action: ActionView


class EdgeCreateIn(msgspec.Struct, rename="camel", kw_only=True):
    source_action_id: Id
    target_action_id: Id
    type: EdgeKind
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    agent_id: AgentId = ""


class EdgeOut(msgspec.Struct):
    success: bool
    edge: EdgeView


class ActionListIn(msgspec.Struct, rename="camel", kw_only=True):
    status: ActionStatus | None = None
    project: str = ""
    parent_id: str = ""
    assigned_to: str = ""
    tags: Names = msgspec.field(default_factory=list)
    limit: Limit = 50

    def __post_init__(self) -> None:
        self.tags = names(self.tags)


class ActionsOut(msgspec.Struct):
    success: bool
    actions: list[ActionView]


class ActionGetIn(msgspec.Struct, rename="camel", kw_only=True):
    action_id: Id


class ActionGetOut(msgspec.Struct):
    success: bool
    action: ActionView
    edges: list[EdgeView]
    """Edges from and to the action."""
    children: list[ActionView]


class FrontierIn(msgspec.Struct, rename="camel", kw_only=True):
    project: str = ""
    agent_id: AgentId = ""
    limit: Limit = 20
    include_leased_by_others: bool = False


class FrontierItem(msgspec.Struct, rename="camel", kw_only=True):
    action: ActionView
    score: float
    blockers: list[str]
    leased: bool
    leased_by: str = ""


class FrontierOut(msgspec.Struct, rename="camel", kw_only=True):
    success: bool
    frontier: list[FrontierItem]
    total_actions: int
    total_unblocked: int


class NextIn(msgspec.Struct, rename="camel", kw_only=True):
    project: str = ""
    agent_id: AgentId = ""


class Suggestion(msgspec.Struct, rename="camel", kw_only=True):
    action_id: str
    title: str
    description: str
    priority: int
    score: float
    tags: list[str]


class NextOut(msgspec.Struct, rename="camel", kw_only=True):
    success: bool
    suggestion: Suggestion | None
    message: str
    total_actions: int
    total_unblocked: int = 0
