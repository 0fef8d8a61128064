"""What crosses coordination's REST, bus and MCP boundaries: requests as upstream's clients
send them (camelCase; its MCP tools send lists as comma-separated strings and flags as
"true"), replies in upstream's shapes (`{success, action}`, `{success: false, error,
heldBy, expiresAt}`), records as their camelCase views."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

import msgspec

from engine import FunctionError
from functions.coordination.records import (
    Action,
    ActionStatus,
    Checkpoint,
    CheckpointType,
    Crystal,
    Edge,
    EdgeType,
    Lease,
    Routine,
    RoutineRun,
    Sentinel,
    SentinelType,
    Signal,
    SignalType,
    Sketch,
    SketchListing,
)
from functions.kernel.names import NONBLANK, SOME_NAMES, Names, at_least_one_of, names
from functions.kernel.views import view

Id = Annotated[str, msgspec.Meta(min_length=1, max_length=256)]
Title = Annotated[str, msgspec.Meta(min_length=1, max_length=500, pattern=NONBLANK)]
Text = Annotated[str, msgspec.Meta(max_length=20_000)]
Priority = Annotated[int, msgspec.Meta(ge=1, le=10)]
Limit = Annotated[int, msgspec.Meta(ge=1, le=1000)]
Millis = Annotated[float, msgspec.Meta(gt=0, le=365 * 86_400_000)]
"""Milliseconds, up to a year (a TTL or deadline past it is a mistake, not a plan)."""
AgentId = Annotated[str, msgspec.Meta(max_length=256)]
EdgeKind = EdgeType | Literal["blocks"]
"""`blocks` is stored the other way round: A blocks B is B requires A."""

ActionView = view(Action)
EdgeView = view(Edge)
LeaseView = view(Lease)
SignalView = view(Signal)
CheckpointView = view(Checkpoint)
SentinelView = view(Sentinel)
RoutineView = view(Routine)
RunView = view(RoutineRun)
SketchView = view(Sketch)
CrystalView = view(Crystal)


def flag(value: bool | str) -> bool:
    """A boolean as JSON sends it, or as upstream's tools do ("true")."""
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return value


def json_value(value: Any, field: str) -> Any:
    """An object sent as itself, or as a JSON string (upstream's tools send `config` and
    `result` as JSON text)."""
    if isinstance(value, str) and value.strip()[:1] in ("{", "["):
        try:
            return json.loads(value)
        except ValueError:
            raise FunctionError(
                "UNPROCESSABLE", f"{field} is not valid JSON", field=field
            ) from None
    return value


# ---- actions -------------------------------------------------------------------------
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
    action: ActionView  # type: ignore[valid-type]
    edges: list[EdgeView]  # type: ignore[valid-type]


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
    action: ActionView  # type: ignore[valid-type]


class EdgeCreateIn(msgspec.Struct, rename="camel", kw_only=True):
    source_action_id: Id
    target_action_id: Id
    type: EdgeKind
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    agent_id: AgentId = ""


class EdgeOut(msgspec.Struct):
    success: bool
    edge: EdgeView  # type: ignore[valid-type]


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
    actions: list[ActionView]  # type: ignore[valid-type]


class ActionGetIn(msgspec.Struct, rename="camel", kw_only=True):
    action_id: Id


class ActionGetOut(msgspec.Struct):
    success: bool
    action: ActionView  # type: ignore[valid-type]
    edges: list[EdgeView]  # type: ignore[valid-type]
    """Edges from and to the action."""
    children: list[ActionView]  # type: ignore[valid-type]


class FrontierIn(msgspec.Struct, rename="camel", kw_only=True):
    project: str = ""
    agent_id: AgentId = ""
    limit: Limit = 20
    include_leased_by_others: bool = False


class FrontierItem(msgspec.Struct, rename="camel", kw_only=True):
    action: ActionView  # type: ignore[valid-type]
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


# ---- leases --------------------------------------------------------------------------
class LeaseIn(msgspec.Struct, rename="camel", kw_only=True):
    action_id: Id
    agent_id: Annotated[str, msgspec.Meta(min_length=1, max_length=256)]
    ttl_ms: Millis | None = None
    """Acquire and renew: default 10 minutes, at most 1 hour; whole seconds, rounded up."""
    result: Text | None = None
    """Release: the outcome; a release with a result marks the action done."""


class LeaseOpIn(LeaseIn, rename="camel", kw_only=True):
    operation: Literal["acquire", "release", "renew"]


class LeaseOut(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    """Upstream's reply shapes: `{success: true, lease, renewed}` (acquire), `{success:
    true, lease}` (renew), `{success: true, released: true}`, and a refusal `{success:
    false, error, heldBy?, expiresAt?}` (HTTP 409)."""

    success: bool
    lease: LeaseView | None = None  # type: ignore[valid-type]
    renewed: bool | None = None
    released: bool | None = None
    message: str = ""
    error: str = ""
    held_by: str = ""
    expires_at: str = ""
    blockers: list[str] | None = None
    action: ActionView | None = None  # type: ignore[valid-type]


# ---- signals -------------------------------------------------------------------------
class SignalSendIn(msgspec.Struct, rename="camel", kw_only=True):
    from_: Annotated[str, msgspec.Meta(min_length=1, max_length=256, pattern=NONBLANK)]
    content: Annotated[str, msgspec.Meta(min_length=1, max_length=20_000, pattern=NONBLANK)]
    to: AgentId = ""
    type: SignalType = "info"
    reply_to: str = ""
    thread_id: str = ""
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    expires_in_ms: Millis | None = None


class SignalOut(msgspec.Struct):
    success: bool
    signal: SignalView  # type: ignore[valid-type]


class SignalReadIn(msgspec.Struct, rename="camel", kw_only=True):
    agent_id: Annotated[str, msgspec.Meta(min_length=1, max_length=256)]
    unread_only: bool | str = False
    thread_id: str = ""
    type: SignalType | None = None
    limit: Limit = 50


class SignalsOut(msgspec.Struct):
    success: bool
    signals: list[SignalView]  # type: ignore[valid-type]


# ---- checkpoints ---------------------------------------------------------------------
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
    checkpoint: CheckpointView | None = None  # type: ignore[valid-type]
    checkpoints: list[CheckpointView] | None = None  # type: ignore[valid-type]
    unblocked_count: int | None = None


# ---- sentinels -----------------------------------------------------------------------
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
    sentinel: SentinelView  # type: ignore[valid-type]
    unblocked_count: int | None = None


class SentinelsOut(msgspec.Struct):
    success: bool
    sentinels: list[SentinelView]  # type: ignore[valid-type]


class SentinelCheckOut(msgspec.Struct, rename="camel", kw_only=True):
    success: bool
    triggered: list[str]
    checked_count: int


# ---- routines ------------------------------------------------------------------------
class StepIn(msgspec.Struct, rename="camel", kw_only=True):
    title: Title
    order: int | None = None
    description: Text = ""
    action_template: dict[str, Any] = msgspec.field(default_factory=dict)
    depends_on: list[int] = msgspec.field(default_factory=list)


class RoutineCreateIn(msgspec.Struct, rename="camel", kw_only=True):
    name: Title
    steps: Annotated[list[StepIn], msgspec.Meta(min_length=1, max_length=200)]
    description: Text = ""
    frozen: bool = True
    tags: Names = msgspec.field(default_factory=list)
    agent_id: AgentId = ""

    def __post_init__(self) -> None:
        self.tags = names(self.tags)


class RoutineOut(msgspec.Struct):
    success: bool
    routine: RoutineView  # type: ignore[valid-type]


class RoutineListIn(msgspec.Struct, rename="camel", kw_only=True):
    frozen: bool | None = None


class RoutinesOut(msgspec.Struct):
    success: bool
    routines: list[RoutineView]  # type: ignore[valid-type]


class RoutineRunIn(msgspec.Struct, rename="camel", kw_only=True):
    routine_id: Id
    project: str = ""
    initiated_by: AgentId = ""
    overrides: dict[str, dict[str, Any]] = msgspec.field(default_factory=dict)
    """Per step order: title, description, priority, tags for that run."""


class RoutineRunOut(msgspec.Struct, rename="camel", kw_only=True):
    success: bool
    run: RunView  # type: ignore[valid-type]
    actions_created: int


class RoutineStatusIn(msgspec.Struct, rename="camel", kw_only=True):
    run_id: Id


class StepState(msgspec.Struct, rename="camel", kw_only=True):
    action_id: str
    status: str
    title: str


class Progress(msgspec.Struct, kw_only=True):
    total: int
    done: int
    active: int
    pending: int
    blocked: int
    cancelled: int


class RoutineStatusOut(msgspec.Struct):
    success: bool
    run: RunView  # type: ignore[valid-type]
    actions: list[StepState]
    progress: Progress


# ---- sketches ------------------------------------------------------------------------
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
    sketch: SketchView  # type: ignore[valid-type]


class SketchAddOut(msgspec.Struct):
    success: bool
    action: ActionView  # type: ignore[valid-type]
    edges: list[EdgeView]  # type: ignore[valid-type]


class SketchPromoteOut(msgspec.Struct, rename="camel", kw_only=True):
    success: bool
    promoted_ids: list[str]


class SketchDiscardOut(msgspec.Struct, rename="camel", kw_only=True):
    success: bool
    discarded_count: int


SketchListed = view(SketchListing)


class SketchesOut(msgspec.Struct):
    success: bool
    sketches: list[SketchListed]  # type: ignore[valid-type]


class SketchGcOut(msgspec.Struct):
    success: bool
    collected: int


# ---- crystals ------------------------------------------------------------------------
class CrystallizeIn(msgspec.Struct, rename="camel", kw_only=True):
    action_ids: Names
    project: str = ""
    session_id: str = ""
    agent_id: AgentId = ""

    def __post_init__(self) -> None:
        self.action_ids = names(self.action_ids)
        if not self.action_ids:
            raise msgspec.ValidationError("actionIds must name at least one action")


CrystallizeRequest = Annotated[
    CrystallizeIn, msgspec.Meta(extra_json_schema=at_least_one_of(actionIds=SOME_NAMES))
]
"""The actions to crystallize: one at least."""


class CrystalOut(msgspec.Struct):
    success: bool
    crystal: CrystalView  # type: ignore[valid-type]


class CrystalListIn(msgspec.Struct, rename="camel", kw_only=True):
    project: str = ""
    session_id: str = ""
    limit: Limit = 20


class CrystalsOut(msgspec.Struct):
    success: bool
    crystals: list[CrystalView]  # type: ignore[valid-type]


class CrystalAutoIn(msgspec.Struct, rename="camel", kw_only=True):
    older_than_days: Annotated[float, msgspec.Meta(ge=0)] = 7.0
    dry_run: bool = False
    project: str = ""


class CrystalGroup(msgspec.Struct, rename="camel", kw_only=True):
    group_key: str
    action_count: int
    action_ids: list[str]


class CrystalAutoOut(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    success: bool
    group_count: int
    crystal_ids: list[str]
    dry_run: bool = False
    groups: list[CrystalGroup] | None = None


# ---- what triggers deliver -----------------------------------------------------------
class StateChange(msgspec.Struct, kw_only=True):
    """A state trigger's event (triggers/state.py)."""

    bucket: str
    key: str
    op: Literal["created", "updated", "deleted"]
    revision: int
    old: Any = None
    new: Any = None


class SweepOut(msgspec.Struct, rename="camel", kw_only=True):
    leases_handed_back: int
    timers_fired: int
    sketches_collected: int
