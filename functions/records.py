"""The memory domain's stored records and the events of the MEM_EVENTS stream.

Every record carries `project` and `agent_id` so reads can be scoped before ranking.
Timestamps are ISO-8601 strings in UTC as the upstream clients send them.
"""

from __future__ import annotations

from typing import Literal

import msgspec

# KV buckets (one per scope of state) and the event stream the read models follow.
OBSERVATIONS_BUCKET = "mem_observations"  # key: <obsId>
MEMORIES_BUCKET = "mem_memories"  # key: <memoryId>
SESSIONS_BUCKET = "mem_sessions"  # key: <sessionId>
DEDUP_BUCKET = "mem_dedup"  # key: <sha256 of eventId or content hash> -> obsId
AUDIT_BUCKET = "mem_audit"  # key: <yyyymm>.<ts>-<id>
SUMMARIES_BUCKET = "mem_summaries"  # key: <sessionId>
LESSONS_BUCKET = "mem_lessons"  # key: <lessonId>
EVENTS_STREAM = "MEM_EVENTS"
EVENTS_SUBJECT = "mem.events"  # mem.events.<kind>

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

ObservationType = Literal[
    "file_read",
    "file_write",
    "file_edit",
    "command",
    "search",
    "web",
    "task",
    "prompt",
    "response",
    "error",
    "decision",
    "discovery",
    "subagent",
    "notification",
    "session",
    "conversation",
    "other",
]


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


class AuditEntry(msgspec.Struct, omit_defaults=True, kw_only=True):
    id: str
    at: str
    action: str
    """e.g. forget, supersede, import-replace, auto-forget, governance-delete"""
    target_ids: list[str] = msgspec.field(default_factory=list)
    reason: str = ""
    actor: str = ""
    project: str = ""


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


MemEvent = ObservationAdded | MemoryAdded | SummaryAdded | RecordsRemoved
