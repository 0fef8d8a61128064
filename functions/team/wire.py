"""Requests and replies of the team and mesh operations (camelCase, upstream's shapes)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from functions.kernel.views import wire_of
from functions.team.records import TeamItem

Name = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
"""A peer's name: its JetStream domain."""
Id = Annotated[str, msgspec.Meta(min_length=1, max_length=512)]


class ShareIn(msgspec.Struct, rename="camel", kw_only=True):
    item_id: Id
    item_type: Literal["memory", "pattern", "observation"]
    """memory or pattern (a memory that records a pattern): a memory id; observation: an
    observation id."""
    session_id: str = ""
    project: str = ""
    agent_id: str = ""


class TeamItemView(msgspec.Struct, rename="camel", kw_only=True):
    id: str
    """The share's id (`ts_<record id>`: one per record)."""
    item_id: str
    type: str
    kind: str
    shared_by: str
    shared_at: str
    project: str
    visibility: Literal["shared"] = "shared"
    team: str
    origin: str
    """The instance (JetStream domain) that shared it."""
    root: str = ""
    content: dict[str, Any]
    """The shared record (a memory or an observation)."""


class ShareOut(msgspec.Struct, rename="camel", kw_only=True):
    success: bool
    shared_item: TeamItemView
    already_shared: bool = False


class FeedIn(msgspec.Struct, rename="camel", kw_only=True):
    limit: Annotated[int, msgspec.Meta(ge=1, le=500)] = 20
    origin: str = ""
    """Only what this instance shared (its domain); default every member's."""


class FeedOut(msgspec.Struct, kw_only=True):
    items: list[TeamItemView]
    total: int


class ProfileIn(msgspec.Struct, rename="camel", kw_only=True):
    team_id: str = ""
    """Default: this instance's team."""


class ConceptCount(msgspec.Struct, kw_only=True):
    concept: str
    frequency: int


class FileCount(msgspec.Struct, kw_only=True):
    file: str
    frequency: int


class ProfileOut(msgspec.Struct, rename="camel", kw_only=True):
    team_id: str
    members: list[str]
    instances: list[str]
    top_concepts: list[ConceptCount]
    top_files: list[FileCount]
    shared_patterns: list[str]
    conventions: list[str]
    """What the team's shared memories keep saying: the titles of shared patterns and
    decisions, most recent first."""
    total_shared_items: int
    shared_items: int
    """The same count, under the name upstream's MCP resource uses."""
    updated_at: str


PeerStatus = Literal["connected", "syncing", "disconnected", "error"]


class PeerView(msgspec.Struct, rename="camel", kw_only=True):
    id: str
    name: str
    url: str
    status: PeerStatus
    """connected: copying, nothing behind; syncing: copying, `lag` behind; disconnected: not
    heard from lately (the link is down); error: the server says why in `error`."""
    lag: int
    last_seen_seconds: float | None
    """Seconds since its TEAM stream was last heard from; null: not yet."""
    applied: int
    """Its events applied here since this process started."""
    shared_scopes: list[str]
    error: str = ""
    round_trip_ms: float | None = None
    """Our latest probe's trip to the peer and its echo back, through both TEAM streams;
    null: no echo of a recent probe (see `reason`)."""
    echo_seconds: float | None = None
    """Seconds since the peer's latest echo of one of our probes reached us."""
    heard_seconds: float | None = None
    """Seconds since the peer's latest own probe reached us (it → us works)."""
    reason: str = ""
    """Why there is no round trip, when there is none."""


class PeersOut(msgspec.Struct, kw_only=True):
    success: bool
    self_name: str = msgspec.field(name="self")
    team: str
    peers: list[PeerView]


class RegisterIn(msgspec.Struct, rename="camel", kw_only=True):
    name: Name
    """The peer's JetStream domain (`nats.domain` in its config)."""
    url: Annotated[str, msgspec.Meta(max_length=2048)] = ""
    """Its REST URL, for reference: the mesh itself runs over the leaf link."""


class RegisterOut(msgspec.Struct, kw_only=True):
    success: bool
    peer: PeerView


class SyncIn(msgspec.Struct, rename="camel", kw_only=True):
    peer_id: Annotated[str, msgspec.Meta(max_length=64)] = ""
    """One peer (its name); default every peer."""
    direction: Literal["push", "pull", "both"] = "both"
    """Accepted for upstream's clients: sourcing always runs both ways."""
    wait_seconds: Annotated[float, msgspec.Meta(ge=0, le=60)] = 5.0
    """How long to wait for every peer's events to be copied and applied."""


class SyncResult(msgspec.Struct, rename="camel", kw_only=True):
    peer_id: str
    peer_name: str
    status: str
    pushed: int
    """Events this instance offers the team (its own, in its TEAM stream)."""
    pulled: int
    """The peer's events applied here since this process started."""
    lag: int
    errors: list[str]
    """Why this peer is not converged (with the round-trip probe's finding first)."""
    round_trip_ms: float | None = None
    """This sync's probe to the peer and back; null when its echo did not come."""


class SyncOut(msgspec.Struct, kw_only=True, omit_defaults=True):
    success: bool
    converged: bool
    """Every wanted peer echoed this sync's probe (what this instance writes reaches it, and
    what it writes reaches us) and every copied event was applied."""
    results: list[SyncResult]
    reason: str = ""
    """Why not, when this instance itself is the cause (its TEAM stream refused the probe);
    left out when empty, so a healthy reply is upstream's shape exactly."""


class ExportIn(msgspec.Struct, rename="camel", kw_only=True):
    since: (
        Annotated[str, msgspec.Meta(max_length=64, extra_json_schema={"format": "date-time"})]
        | None
    ) = None
    """ISO-8601: only what was shared or forgotten after it (default: everything)."""
    project: str = ""


class ExportOut(msgspec.Struct, rename="camel", kw_only=True):
    origin: str
    team: str
    memories: list[dict[str, Any]]
    observations: list[dict[str, Any]]
    forgotten: list[str]
    actions: list[dict[str, Any]] = msgspec.field(default_factory=list)
    """Upstream's shape; coordination records are not shared."""


class ReceiveIn(msgspec.Struct, rename="camel", kw_only=True):
    memories: Annotated[list[dict[str, Any]], msgspec.Meta(max_length=10_000)] = msgspec.field(
        default_factory=list
    )
    observations: Annotated[list[dict[str, Any]], msgspec.Meta(max_length=10_000)] = msgspec.field(
        default_factory=list
    )


class ReceiveOut(msgspec.Struct, kw_only=True):
    success: bool
    accepted: int


def item_view(item: TeamItem) -> TeamItemView:
    record = item.memory or item.observation
    content = wire_of(record) if record else {}
    return TeamItemView(
        id="ts_" + item.id,
        item_id=item.id,
        type=item.item_type,
        kind=item.kind,
        shared_by=item.shared_by,
        shared_at=item.shared_at,
        project=item.project,
        team=item.team,
        origin=item.origin,
        root=item.root,
        content=content,
    )


class ChainIn(msgspec.Struct, rename="camel", kw_only=True):
    memory_id: Id
    """Any version of a shared memory."""


class ChainVersion(msgspec.Struct, rename="camel", kw_only=True):
    id: str
    version: int
    created_at: str
    parent: str
    origin: str
    """The instance it was made on."""
    shared_by: str
    head: bool
    live: bool
    """Not forgotten."""
    competing: bool
    """One of the versions of an unresolved conflict."""
    title: str = ""
    content: str = ""


class ChainOut(msgspec.Struct, rename="camel", kw_only=True):
    root: str
    head: str | None
    conflict: bool
    competing: list[str]
    versions: list[ChainVersion]
    """Newest first."""
    resolved_by: str = ""
    resolved_at: str = ""


class ResolveIn(msgspec.Struct, rename="camel", kw_only=True):
    memory_id: Id
    """The version to keep: one of the competing versions of its chain."""


class ResolveOut(msgspec.Struct, rename="camel", kw_only=True):
    success: bool
    head: str
    over: list[str]
    """The versions it was chosen over (kept as listed versions of the head)."""
