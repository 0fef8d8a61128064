"""What coordination stores: its KV buckets and records (snake_case; clients read them as
camelCase views, `functions.kernel.views`).

Every record lives under its own id in its bucket. An action keeps its outgoing edges and
the ids of the actions that depend on it, so a completion, a frontier and a lease read one
bucket. A lease exists only while it is held: its key carries a JetStream TTL."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

ACTIONS_BUCKET = "mem_actions"  # key: <actionId>
LEASES_BUCKET = "mem_leases"  # key: <actionId>, per-key TTL, expiry markers
SIGNALS_BUCKET = "mem_signals"  # key: <signalId>, per-key TTL when the signal has one
RECEIPTS_BUCKET = "mem_signal_receipts"  # key: <signalId>.<agent>
CHECKPOINTS_BUCKET = "mem_checkpoints"  # key: <checkpointId>
SENTINELS_BUCKET = "mem_sentinels"  # key: <sentinelId>
ROUTINES_BUCKET = "mem_routines"  # key: <routineId>
RUNS_BUCKET = "mem_routine_runs"  # key: <runId>
SKETCHES_BUCKET = "mem_sketches"  # key: <sketchId>
CRYSTALS_BUCKET = "mem_crystals"  # key: <crystalId>
TIMERS_BUCKET = "mem_coord_timers"  # key: <kind>.<id>, per-key TTL, expiry markers
CURSORS_BUCKET = "mem_coord_cursors"  # key: <reader> -> the stream sequence it read up to

MARKER_TTL = 300.0
"""Seconds an expiry marker stays (the state trigger reads it long before)."""

ActionStatus = Literal["pending", "active", "done", "blocked", "cancelled"]
EdgeType = Literal["requires", "unlocks", "spawned_by", "gated_by", "conflicts_with"]
SignalType = Literal["info", "request", "response", "alert", "handoff"]
CheckpointType = Literal["ci", "approval", "deploy", "external", "timer"]
CheckpointStatus = Literal["pending", "passed", "failed", "expired"]
SentinelType = Literal[
    "webhook", "timer", "threshold", "pattern", "approval", "custom", "checkpoint"
]
SentinelStatus = Literal["watching", "triggered", "cancelled", "expired"]
TimerKind = Literal["sentinel", "sentinel-expiry", "checkpoint-expiry", "sketch-expiry"]
CrystalMethod = Literal["synthetic", "llm"]
"""How a crystal's digest was written: from the actions' own text, or by an LLM."""


class Edge(msgspec.Struct, omit_defaults=True, kw_only=True):
    """`source` --type--> `target`: source requires target (target must be done first),
    is gated by a checkpoint or sentinel, unlocks, was spawned by, conflicts with."""

    id: str
    type: EdgeType
    source_action_id: str
    target_action_id: str
    created_at: str
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)


class Action(msgspec.Struct, omit_defaults=True, kw_only=True):
    id: str
    title: str
    description: str = ""
    status: ActionStatus = "pending"
    priority: int = 5
    created_at: str
    updated_at: str
    created_by: str = "unknown"
    project: str = ""
    tags: list[str] = msgspec.field(default_factory=list)
    source_observation_ids: list[str] = msgspec.field(default_factory=list)
    source_memory_ids: list[str] = msgspec.field(default_factory=list)
    parent_id: str = ""
    assigned_to: str = ""
    result: str = ""
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    sketch_id: str = ""
    """Set while the action belongs to a sketch (ephemeral, not on the frontier)."""
    crystallized_into: str = ""
    completed_at: str = ""
    lease_id: str = ""
    """The lease whose acquisition this record committed; cleared by its release or expiry."""
    edges: list[Edge] = msgspec.field(default_factory=list)
    """Outgoing edges (this action is their source)."""
    dependents: list[str] = msgspec.field(default_factory=list)
    """Actions with a `requires` edge to this one: unblocked when it is done."""


class Lease(msgspec.Struct, omit_defaults=True, kw_only=True):
    id: str
    action_id: str
    agent_id: str
    acquired_at: str
    expires_at: str
    status: Literal["active", "released", "expired"] = "active"
    renewed_at: str = ""


class Signal(msgspec.Struct, omit_defaults=True, kw_only=True):
    id: str
    from_: str
    to: str = ""
    """Empty: a broadcast to every agent."""
    content: str
    type: SignalType = "info"
    thread_id: str
    reply_to: str = ""
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    created_at: str
    expires_at: str = ""
    read_at: str = ""
    """When the reader of this reply first read it (its receipt); empty while unread."""


class Receipt(msgspec.Struct, kw_only=True):
    signal_id: str
    agent_id: str
    read_at: str


class Checkpoint(msgspec.Struct, omit_defaults=True, kw_only=True):
    id: str
    name: str
    description: str = ""
    status: CheckpointStatus = "pending"
    type: CheckpointType = "external"
    created_at: str
    linked_action_ids: list[str] = msgspec.field(default_factory=list)
    expires_at: str = ""
    resolved_at: str = ""
    resolved_by: str = ""
    result: Any = None
    project: str = ""


class Sentinel(msgspec.Struct, omit_defaults=True, kw_only=True):
    id: str
    name: str
    type: SentinelType
    status: SentinelStatus = "watching"
    config: dict[str, Any] = msgspec.field(default_factory=dict)
    created_at: str
    linked_action_ids: list[str] = msgspec.field(default_factory=list)
    expires_at: str = ""
    due_at: str = ""
    """Timer sentinels: when they fire."""
    after_seq: int = 0
    """Pattern sentinels: the MEM_EVENTS sequence when made (they match what follows)."""
    triggered_at: str = ""
    result: Any = None
    project: str = ""


class RoutineStep(msgspec.Struct, omit_defaults=True, kw_only=True):
    order: int
    title: str
    description: str = ""
    action_template: dict[str, Any] = msgspec.field(default_factory=dict)
    depends_on: list[int] = msgspec.field(default_factory=list)


class Routine(msgspec.Struct, omit_defaults=True, kw_only=True):
    id: str
    name: str
    description: str = ""
    steps: list[RoutineStep]
    created_at: str
    updated_at: str
    frozen: bool = True
    tags: list[str] = msgspec.field(default_factory=list)
    source_procedural_ids: list[str] = msgspec.field(default_factory=list)


class RoutineRun(msgspec.Struct, omit_defaults=True, kw_only=True):
    id: str
    routine_id: str
    status: Literal["running", "completed", "failed"] = "running"
    started_at: str
    completed_at: str = ""
    action_ids: list[str] = msgspec.field(default_factory=list)
    step_status: dict[str, str] = msgspec.field(default_factory=dict)
    initiated_by: str = "unknown"
    project: str = ""


class Sketch(msgspec.Struct, omit_defaults=True, kw_only=True):
    id: str
    title: str
    description: str = ""
    status: Literal["active", "promoted", "discarded"] = "active"
    action_ids: list[str] = msgspec.field(default_factory=list)
    project: str = ""
    created_at: str
    expires_at: str
    promoted_at: str = ""
    discarded_at: str = ""


class SketchListing(Sketch, omit_defaults=True, kw_only=True):
    """A sketch as listed: with how many actions it holds."""

    action_count: int = 0


class Crystal(msgspec.Struct, omit_defaults=True, kw_only=True):
    id: str
    narrative: str
    key_outcomes: list[str] = msgspec.field(default_factory=list)
    files_affected: list[str] = msgspec.field(default_factory=list)
    lessons: list[str] = msgspec.field(default_factory=list)
    source_action_ids: list[str] = msgspec.field(default_factory=list)
    session_id: str = ""
    project: str = ""
    created_at: str
    memory_id: str = ""
    """The memory the digest was saved as (searchable like any other)."""
    method: CrystalMethod = "synthetic"


class Timer(msgspec.Struct, kw_only=True):
    """A key of `mem_coord_timers` that JetStream expires at `due_at`: its expiry marker,
    delivered by the state trigger, is the timer firing."""

    kind: TimerKind
    target_id: str
    due_at: str
