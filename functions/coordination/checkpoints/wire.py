"""Checkpoints' wire: create, resolve and list, and upstream's one-tool form of the three."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import msgspec

from functions.coordination.inputs import AgentId, Id, Millis, Text, Title
from functions.coordination.records import Checkpoint, CheckpointType
from functions.kernel.names import Names, names
from functions.kernel.views import view

# To the type checker a view is its record (the same attributes); at run time it is the
# camelCase type `view` makes (functions.kernel.views).
if TYPE_CHECKING:
    CheckpointView = Checkpoint
else:
    CheckpointView = view(Checkpoint)


class CheckpointCreateIn(msgspec.Struct, rename="camel", kw_only=True):
    name: Title
    description: Text = ""
    type: CheckpointType = "external"
    linked_action_ids: Names = msgspec.field(default_factory=list)
    expires_in_ms: Millis | None = None
    project: str = ""
    agent_id: AgentId = ""

    def __post_init__(self) -> None:
        self.linked_action_ids = names(self.linked_action_ids)


class CheckpointResolveIn(msgspec.Struct, rename="camel", kw_only=True):
    checkpoint_id: Id
    status: Literal["passed", "failed"]
    result: Any = None
    resolved_by: AgentId = ""
    agent_id: AgentId = ""


class CheckpointListIn(msgspec.Struct, rename="camel", kw_only=True):
    status: Literal["pending", "passed", "failed", "expired"] | None = None
    type: CheckpointType | None = None


class CheckpointOpIn(msgspec.Struct, rename="camel", kw_only=True):
    """upstream's `memory_checkpoint` tool: one of create, resolve, list."""

    operation: Literal["create", "resolve", "list"]
    name: str = ""
    checkpoint_id: str = ""
    status: str = ""
    type: str = ""
    description: Text = ""
    linked_action_ids: Names = msgspec.field(default_factory=list)
    expires_in_ms: Millis | None = None
    result: Any = None
    project: str = ""
    agent_id: AgentId = ""


class CheckpointOut(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    success: bool
    checkpoint: CheckpointView | None = None
    checkpoints: list[CheckpointView] | None = None
    unblocked_count: int | None = None
