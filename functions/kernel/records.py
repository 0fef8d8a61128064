"""The memory domain's stored records and the events of the MEM_EVENTS stream.

Every record carries `project` and `agent_id` so reads can be scoped before ranking.
Timestamps are ISO-8601 strings in UTC as the upstream clients send them.
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal

import msgspec

# KV buckets (one per scope of state) and the event stream the read models follow.
OBSERVATIONS_BUCKET = "mem_observations"  # before records on MEM_EVENTS: upgraded, then deleted
OBSERVATION_INDEX_BUCKET = "mem_observation_index"  # s.<4 hex>: ids -> MEM_EVENTS seq; w
MEMORIES_BUCKET = "mem_memories"  # key: <memoryId>
SESSIONS_BUCKET = "mem_sessions"  # key: <sessionId>
DEDUP_BUCKET = "mem_dedup"  # before records on MEM_EVENTS (replay markers): deleted by the upgrade
AUDIT_BUCKET = "mem_audit"  # key: <yyyymm>.<ts>-<id>
SUMMARIES_BUCKET = "mem_summaries"  # key: <sessionId>
LESSONS_BUCKET = "mem_lessons"  # key: <lessonId>
LIFECYCLE_BUCKET = "mem_lifecycle"  # key: run.<tier>, stage.<run>.<n>, cursor.<name>
GRAPH_BUCKET = "mem_graph"  # key: n.<nodeId> / e.<edgeId>
PROFILES_BUCKET = "mem_profiles"  # key: <sha of project>
SLOTS_BUCKET = "mem_slots"  # key: g.<label> (global) / p.<project key>.<label>
FACETS_BUCKET = "mem_facets"  # key: <target key>.<facet key>
RELATIONS_BUCKET = "mem_relations"  # key: <relationId>
COMMITS_BUCKET = "mem_commits"  # key: <sha>
INSIGHTS_BUCKET = "mem_insights"  # key: <insightId>
QUARANTINE_BUCKET = "mem_quarantine"  # key: <record id> -> functions.quarantine Decision
# mem_graph also holds: stats (GraphStats), m.<memoryId> (nodes and edges a memory made, for
# supersession), rm.<seq> (ids forgotten, pending compaction). Edge keys are
# e.<srcNodeId>.<dstNodeId>.<kind>, so a node's edges are a subject filter away.
# mem_graph a.<nodeId>: the node's strongest edges, bounded (functions.graph.adjacency).
# mem_profiles: key profile_key(project) -> ProjectProfile.
EVENTS_STREAM = "MEM_EVENTS"
EVENTS_SUBJECT = "mem.events"  # mem.events.<kind>; observations: mem.events.observation.<p...>


def observation_events_subject(project: str) -> str:
    """The subject of a project's observation events: one per project, so the bus keeps
    per-subject state for the projects, not for every observation (a subject costs
    nats-server ~270 B of RAM: 1M observations were 300 MB). Any project name is one
    valid token this way."""
    return f"{EVENTS_SUBJECT}.observation.p{hashlib.sha256(project.encode()).hexdigest()[:16]}"


HookType = Literal[
    "session_start",
    "prompt_submit",
    "pre_tool_use",
    "post_tool_use",
    "post_tool_failure",
    "pre_compact",
    "subagent_start",
    "subagent_stop",
    "notification",
    "task_completed",
    "stop",
    "session_end",
]


class Trust(msgspec.Struct, omit_defaults=True, kw_only=True):
    """What the write path concluded about a record's words (functions/kernel/trust): where
    they came from and whether they try to instruct the agent. A held record is stored (acked
    means stored) but kept out of every read path that feeds an agent until its owner
    releases it."""

    held: bool = False
    reasons: list[str] = msgspec.field(default_factory=list)
    """Stable rule codes (`ignore-previous`, `role-marker`, `hidden-characters` ...)."""
    source: str = ""
    """Who wrote the words: user, tool, web, file, command, assistant, peer, remember,
    import, bridge."""


class Observation(msgspec.Struct, omit_defaults=True, kw_only=True):
    """One compressed, scrubbed observation as stored (and indexed)."""

    id: str
    session_id: str
    project: str
    agent_id: str = ""
    hook_type: str
    timestamp: str
    type: str = "other"
    title: str = ""
    narrative: str = ""
    facts: list[str] = msgspec.field(default_factory=list)
    concepts: list[str] = msgspec.field(default_factory=list)
    files: list[str] = msgspec.field(default_factory=list)
    tool_name: str = ""
    importance: int = 5
    cwd: str = ""
    event_id: str = ""
    raw: str = ""
    """Scrubbed source text (prompt, tool input/output, error), capped."""
    origin: str = ""
    """Where it came from: empty for a hook, `import` for an imported transcript."""
    truncated: list[str] = msgspec.field(default_factory=list)
    """Fields of the hook's data that were cut to size (`data.tool_input.content (3145728
    chars)`): the record is whole, its source was not."""
    team: str = ""
    """The team it is shared with (`team/share`); empty: private to this machine."""
    instance: str = ""
    """The instance (JetStream domain) a shared record came from; empty: written here."""
    revision: int = 0
    """How many times the stored record was rewritten after it was first stored: 0 as the
    write path stored it; the compression model's rewrite (AGENTMEMORY_AUTO_COMPRESS) sets
    1; a team share's mark and an upgrade's move add one. An ObservationAdded with a
    revision replaces the record in the read models that index it, and is not counted again
    by those that count."""
    trust: Trust | None = None
    """The write path's verdict on the record's words; None: written before it existed."""


class Memory(msgspec.Struct, omit_defaults=True, kw_only=True):
    """A memory saved on purpose (`remember`), or produced by consolidation."""

    id: str
    content: str
    type: str = "fact"
    title: str = ""
    project: str = ""
    agent_id: str = ""
    concepts: list[str] = msgspec.field(default_factory=list)
    files: list[str] = msgspec.field(default_factory=list)
    created_at: str = ""
    updated_at: str = ""
    ttl_days: float | None = None
    version: int = 1
    supersedes: str | None = None
    superseded_by: str | None = None
    pinned: bool = False
    strength: float = 1.0
    source_ids: list[str] = msgspec.field(default_factory=list)
    strength_at: str = ""
    """When `strength` was last computed (decay and reinforcement compose from here)."""
    access_count: int = 0
    confidence: float | None = None
    """Consolidated tiers: how sure the evidence makes us (0..1)."""
    steps: list[str] = msgspec.field(default_factory=list)
    """Procedural memories: the workflow's ordered steps."""
    team: str = ""
    """The team it is shared with; empty: private to this machine. A new version of a shared
    memory is shared too."""
    instance: str = ""
    """The instance (JetStream domain) a shared memory came from; empty: written here."""
    conflict: bool = False
    """A shared memory's head while another version made from the same one on another
    instance competes with it (both kept, listed in `alternates`, until resolved)."""
    alternates: list[str] = msgspec.field(default_factory=list)
    """The head of a shared memory: the other branches of its chain (versions made while
    instances were apart), which its versions list besides its own line."""
    trust: Trust | None = None
    """The write path's verdict on the record's words; None: written before it existed."""


class Session(msgspec.Struct, omit_defaults=True, kw_only=True):
    id: str
    project: str
    agent_id: str = ""
    cwd: str = ""
    started_at: str = ""
    ended_at: str | None = None
    status: Literal["active", "ended", "abandoned"] = "active"
    observation_count: int = 0
    last_seen: str = ""
    origin: str = ""
    """Empty for a session the hooks recorded, `import` for an imported transcript."""
    commit_shas: list[str] = msgspec.field(default_factory=list)
    """Commits the post-commit hook linked to this session."""


class SessionSummary(msgspec.Struct, omit_defaults=True, kw_only=True):
    session_id: str
    project: str
    agent_id: str = ""
    title: str = ""
    narrative: str = ""
    decisions: list[str] = msgspec.field(default_factory=list)
    files: list[str] = msgspec.field(default_factory=list)
    concepts: list[str] = msgspec.field(default_factory=list)
    created_at: str = ""
    steps: list[str] = msgspec.field(default_factory=list)
    """The session's ordered workflow steps (edit <file>, run <command>...), for procedures."""
    source_ids: list[str] = msgspec.field(default_factory=list)
    """Observations the summary was made from (capped, most recent)."""
    step_sources: list[str] = msgspec.field(default_factory=list)
    """Per step, the observation it came from (same length as `steps`)."""
    observation_count: int = 0
    status: str = ""
    """The session's status when summarized: ended or abandoned."""
    covered_through: str = ""
    """The time of the latest observation the summary covers (upstream's coveredThrough):
    the next summary of the session folds in only what came after."""
    trust: Trust | None = None
    """The write path's verdict on the record's words; None: written before it existed."""


class Lesson(msgspec.Struct, omit_defaults=True, kw_only=True):
    """A lesson learned (what worked, what to avoid); recalled by relevance x strength."""

    id: str
    content: str
    context: str = ""
    project: str = ""
    agent_id: str = ""
    concepts: list[str] = msgspec.field(default_factory=list)
    created_at: str = ""
    updated_at: str = ""
    strength: float = 1.0
    strength_at: str = ""
    reinforcements: int = 0
    source_ids: list[str] = msgspec.field(default_factory=list)
    tags: list[str] = msgspec.field(default_factory=list)
    source: str = "manual"
    deleted: bool = False
    """Soft-deleted: out of recall and listings; saving the same content again revives it."""
    trust: Trust | None = None
    """The write path's verdict on the record's words; None: written before it existed."""


class GraphNode(msgspec.Struct, omit_defaults=True, kw_only=True):
    id: str
    kind: str
    """file, symbol, package, error, command, concept"""
    name: str
    project: str = ""
    weight: int = 0
    first_seen: str = ""
    last_seen: str = ""
    source_ids: list[str] = msgspec.field(default_factory=list)
    """Most recent records naming the node, capped."""
    degree: int = 0
    """Live edges (validTo unset) touching the node; recounted exactly by compaction."""
    seq: int = 0
    """Last MEM_EVENTS sequence folded in: a replayed batch skips what is already in."""
    stale: bool = False
    """Set by cascade-update: a memory it came from was superseded. Queries skip it."""


class GraphEdge(msgspec.Struct, omit_defaults=True, kw_only=True):
    id: str
    kind: str
    """co_occurs or supersedes"""
    src: str
    dst: str
    project: str = ""
    weight: int = 0
    valid_from: str = ""
    valid_to: str | None = None
    """None while the relation holds; set when superseded or compacted away."""
    source_ids: list[str] = msgspec.field(default_factory=list)
    seq: int = 0
    """Last MEM_EVENTS sequence folded in (see GraphNode.seq)."""
    stale: bool = False
    """Set by cascade-update (see GraphNode.stale); a stale edge is not followed."""


class GraphStats(msgspec.Struct, omit_defaults=True, kw_only=True):
    """`mem_graph/stats`: counts kept up to date by the feed, recounted by compaction."""

    nodes_by_type: dict[str, int] = msgspec.field(default_factory=dict)
    edges_by_type: dict[str, int] = msgspec.field(default_factory=dict)
    expired_edges: int = 0
    stale_nodes: dict[str, int] = msgspec.field(default_factory=dict)
    """Of `nodes_by_type`, those cascade-update marked stale (stats leave them out)."""
    stale_edges: dict[str, int] = msgspec.field(default_factory=dict)
    """Of the live edges in `edges_by_type`, those marked stale."""
    updated_at: str = ""
    seq: int = 0
    compacted_at: str = ""
    adjacency: int = 0
    """Version of the per-node adjacency index (`a.<nodeId>`) the graph holds: a graph
    older than the index (0) gets it built by its next compaction."""


class ProfileTerm(msgspec.Struct, omit_defaults=True, kw_only=True):
    name: str
    score: float
    """Decayed weight as of `last` and `epoch`: halves every `half_life_days` of event time
    and every `session_half_life` later sessions without a mention; within one session
    the k-th mention adds 1/k^2 (see functions/lifecycle/profile.py)."""
    count: int = 0
    """Plain count since first seen."""
    last: str = ""
    epoch: int = 0
    """The profile's session epoch at the last mention."""
    hits: int = 0
    """Mentions in that epoch's session (0: before per-session weighting)."""


class ProjectProfile(msgspec.Struct, omit_defaults=True, kw_only=True):
    """`mem_profiles/<profile_key(project)>`: maintained by the lifecycle from MEM_EVENTS.
    Each list keeps at most its top-N terms by decayed score, so it never grows unbounded."""

    project: str
    updated_at: str = ""
    last_activity: str = ""
    observations: int = 0
    sessions: int = 0
    concepts: list[ProfileTerm] = msgspec.field(default_factory=list)
    files: list[ProfileTerm] = msgspec.field(default_factory=list)
    commands: list[ProfileTerm] = msgspec.field(default_factory=list)
    errors: list[ProfileTerm] = msgspec.field(default_factory=list)
    conventions: list[str] = msgspec.field(default_factory=list)
    recent_sessions: list[str] = msgspec.field(default_factory=list)
    """The last few session ids seen (to count distinct sessions without a set)."""
    epoch: int = 0
    """Sessions begun since session recency was kept (each new session adds one): the
    clock terms decay by, besides event time."""
    seq: int = 0
    """Last MEM_EVENTS sequence folded in."""


def profile_key(project: str) -> str:
    """The `mem_profiles` key of a project (any project name, as a valid KV key)."""
    return "p_" + hashlib.sha256(project.encode()).hexdigest()[:32]


class AuditEntry(msgspec.Struct, omit_defaults=True, kw_only=True):
    id: str
    at: str
    action: str
    """e.g. forget, supersede, import-replace, auto-forget, governance-delete"""
    target_ids: list[str] = msgspec.field(default_factory=list)
    reason: str = ""
    actor: str = ""
    project: str = ""
    details: dict[str, Any] = msgspec.field(default_factory=dict)
    """What the entry needs beyond its targets: a lease's id and expiry, the revision a
    write committed at (coordination), ..."""


class Slot(msgspec.Struct, omit_defaults=True, kw_only=True):
    """A named, size-capped block of core memory; pinned slots open every session's context."""

    label: str
    content: str = ""
    size_limit: int = 2000
    description: str = ""
    pinned: bool = True
    read_only: bool = False
    scope: Literal["project", "global"] = "project"
    project: str = ""
    """The project of a project-scoped slot; empty: every project's default."""
    created_at: str = ""
    updated_at: str = ""
    trust: Trust | None = None
    """The write path's verdict on the slot's words (a held slot stays out of the pinned
    context); None: written before it existed, or never written."""


class Facet(msgspec.Struct, omit_defaults=True, kw_only=True):
    """A `dimension:value` tag on a record (memory, observation, lesson, action...)."""

    id: str
    target_id: str
    target_type: str
    dimension: str
    value: str
    created_at: str = ""


class Relation(msgspec.Struct, omit_defaults=True, kw_only=True):
    id: str
    type: str
    """related, supersedes, contradicts, extends, derived_from..."""
    source_id: str
    target_id: str
    confidence: float = 0.5
    created_at: str = ""


class CommitLink(msgspec.Struct, omit_defaults=True, kw_only=True):
    """A git commit and the agent sessions that produced it (the post-commit hook)."""

    sha: str
    short_sha: str = ""
    branch: str = ""
    repo: str = ""
    message: str = ""
    author: str = ""
    authored_at: str = ""
    files: list[str] = msgspec.field(default_factory=list)
    session_ids: list[str] = msgspec.field(default_factory=list)
    linked_at: str = ""
    trust: Trust | None = None
    """The write path's verdict on the commit's message (anyone with the repository can
    write one); None: linked before it existed."""


class Insight(msgspec.Struct, omit_defaults=True, kw_only=True):
    """What recurred across sessions: a concept cluster backed by memories, lessons and
    summaries of several sessions (`mem::reflect`)."""

    id: str
    title: str
    content: str
    confidence: float = 0.5
    reinforcements: int = 0
    concepts: list[str] = msgspec.field(default_factory=list)
    source_ids: list[str] = msgspec.field(default_factory=list)
    sessions: int = 0
    project: str = ""
    created_at: str = ""
    updated_at: str = ""
    deleted: bool = False


# ---- MEM_EVENTS: what the read models (BM25, vectors, graph) follow -----------------
class ObservationAdded(msgspec.Struct, tag="observation.added", kw_only=True):
    observation: Observation


class MemoryAdded(msgspec.Struct, tag="memory.added", kw_only=True):
    memory: Memory


class SummaryAdded(msgspec.Struct, tag="summary.added", kw_only=True):
    summary: SessionSummary


class RecordsRemoved(msgspec.Struct, tag="records.removed", kw_only=True):
    """Forget / supersede / auto-forget: drop these ids from every index."""

    ids: list[str]
    reason: str = ""
    action: str = ""
    """What removed them: forget, governance-delete, auto-forget (the memory write path's
    `forget`), snapshot-restore, team (a teammate's forget)... Explicit forgets of shared
    records go to the team; the other removals stay on this machine."""


class QuarantineChanged(msgspec.Struct, tag="quarantine.changed", omit_defaults=True, kw_only=True):
    """A decision on records after they were written (functions/quarantine): an owner's hold
    or release, or a hold by chain (derived from a held record). The records are not
    rewritten: every read model keeps `held` out of what feeds an agent from here on, and
    lets `released` back in."""

    held: dict[str, list[str]] = msgspec.field(default_factory=dict)
    """Record id -> why it is held now (`manual`, `chain`, the write verdict's codes)."""
    released: list[str] = msgspec.field(default_factory=list)
    observations: list[Observation] = msgspec.field(default_factory=list)
    """Released records the feeds (graph, profile) skipped when they were written, held:
    they fold them now. The index has them already."""
    memories: list[Memory] = msgspec.field(default_factory=list)


MemEvent = ObservationAdded | MemoryAdded | SummaryAdded | RecordsRemoved | QuarantineChanged
