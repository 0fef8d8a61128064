"""Sentinels' wire: create, trigger, cancel, list and check."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import msgspec

from functions.coordination.inputs import AgentId, Id, Millis, Title
from functions.coordination.records import Sentinel, SentinelType
from functions.kernel.names import Names, names
from functions.kernel.views import view

# To the type checker a view is its record (the same attributes); at run time it is the
# camelCase type `view` makes (functions.kernel.views).
if TYPE_CHECKING:
    SentinelView = Sentinel
else:
    SentinelView = view(Sentinel)


class SentinelCreateIn(msgspec.Struct, rename="camel", kw_only=True):
    name: Title
    type: SentinelType
    config: dict[str, Any] | str = msgspec.field(default_factory=dict)
    """timer {durationMs}, pattern {pattern}, checkpoint {checkpointId}, threshold
    {metric, operator, value}, webhook {path}; a JSON string is read as JSON."""
    linked_action_ids: Names = msgspec.field(default_factory=list)
    expires_in_ms: Millis | None = None
    project: str = ""
    agent_id: AgentId = ""

    def __post_init__(self) -> None:
        self.linked_action_ids = names(self.linked_action_ids)


class SentinelTriggerIn(msgspec.Struct, rename="camel", kw_only=True):
    sentinel_id: Id
    result: Any = None
    """Any JSON; a JSON string is read as JSON."""
    agent_id: AgentId = ""


class SentinelIdIn(msgspec.Struct, rename="camel", kw_only=True):
    sentinel_id: Id
    agent_id: AgentId = ""


class SentinelListIn(msgspec.Struct, rename="camel", kw_only=True):
    status: Literal["watching", "triggered", "cancelled", "expired"] | None = None
    type: SentinelType | None = None


class SentinelOut(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    success: bool
    sentinel: SentinelView
    unblocked_count: int | None = None


class SentinelsOut(msgspec.Struct):
    success: bool
    sentinels: list[SentinelView]


class SentinelCheckOut(msgspec.Struct, rename="camel", kw_only=True):
    success: bool
    triggered: list[str]
    checked_count: int
