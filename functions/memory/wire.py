"""What crosses the REST and bus boundaries: request and response Structs, camelCase on the
wire as the upstream clients send and read them; stored records appear as their views."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

import msgspec

from functions.kernel.names import NONBLANK, SOME_NAMES, Names, at_least_one_of, names
from functions.kernel.records import (
    HookType,
)
from functions.kernel.views import (
    MemoryView,
    ObservationView,
    SessionView,
    SummaryView,
)

NonEmpty = Annotated[str, msgspec.Meta(min_length=1, max_length=512)]
Strategy = Literal["merge", "replace", "skip"]

_SNAKE = re.compile(r"(?<=[a-z0-9])([A-Z])")


def snake(name: str) -> str:
    return _SNAKE.sub(lambda m: "_" + m.group(1).lower(), name)


def from_wire(value: Any, type_: Any) -> Any:
    """Accept camelCase or snake_case keys (imports of our own or upstream exports)."""
    if isinstance(value, dict):
        value = {snake(k): x for k, x in value.items()}
    return msgspec.convert(value, type_)


# ---- requests ------------------------------------------------------------------------
DateTime = Annotated[
    str, msgspec.Meta(min_length=1, max_length=64, extra_json_schema={"format": "date-time"})
]
"""An ISO-8601 / RFC 3339 date-time, kept as the client wrote it (the dedup key hashes it)."""


class ObserveIn(msgspec.Struct, rename="camel", kw_only=True):
    hook_type: HookType
    session_id: NonEmpty
    timestamp: DateTime
    data: dict[str, Any]
    project: str = ""
    cwd: str = ""
    event_id: str | None = None
    agent_id: str = ""


class ObserveOut(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    status: Literal["accepted", "duplicate", "retrying"]
    observation_id: str
    boot_id: str
    accepted_at: str
    durable_after_ms: int
    held: bool = False
    """Present (true) when the observation's words were held as suspect: it is stored, and
    kept out of what feeds an agent until released (GET /agentmemory/quarantine)."""
    reasons: list[str] = msgspec.field(default_factory=list)
    """Why it was held (rule codes: ignore-previous, role-marker, hidden-characters ...)."""


class SessionStartIn(msgspec.Struct, rename="camel", kw_only=True):
    session_id: NonEmpty
    project: str = ""
    cwd: str = ""
    agent_id: str = ""


class SessionEndIn(msgspec.Struct, rename="camel", kw_only=True):
    session_id: NonEmpty
    final: bool = True
    """False: a turn ended (a Stop hook), the session stays open until its idle period
    passes in silence (AGENTMEMORY_FINALIZE_IDLE_MS)."""


class RememberIn(msgspec.Struct, rename="camel", kw_only=True):
    content: Annotated[str, msgspec.Meta(min_length=1, max_length=100_000, pattern=NONBLANK)]
    """Not blank."""
    type: str = "fact"
    title: str = ""
    concepts: Names = msgspec.field(default_factory=list)
    files: Names = msgspec.field(default_factory=list)
    project: str = ""
    agent_id: str = ""
    ttl_days: Annotated[float, msgspec.Meta(gt=0, le=36_500)] | None = None
    session_id: str = ""
    supersedes: str = ""
    """An edit: the id of the current memory this is the next version of (its project and
    agent are kept); without it, a near duplicate in the project is superseded."""
    source_observation_ids: Names = msgspec.field(default_factory=list)
    """Observations the memory was drawn from: its provenance, checked by `verify`."""
    distinct: bool = False
    """A record of its own: it never supersedes a near duplicate (a file of the Claude
    memory tool is its path's, however much its text looks like another's)."""

    def __post_init__(self) -> None:
        self.concepts, self.files = names(self.concepts), names(self.files)
        self.source_observation_ids = names(self.source_observation_ids)


class ForgetIn(msgspec.Struct, rename="camel", kw_only=True):
    memory_id: str | None = None
    memory_ids: Names = msgspec.field(default_factory=list)
    observation_ids: Names = msgspec.field(default_factory=list)
    session_id: str | None = None
    reason: str = ""
    agent_id: str = ""

    def __post_init__(self) -> None:
        self.memory_ids, self.observation_ids = names(self.memory_ids), names(self.observation_ids)


ForgetRequest = Annotated[
    ForgetIn,
    msgspec.Meta(
        extra_json_schema=at_least_one_of(
            memoryId={"type": "string", "minLength": 1},
            memoryIds=SOME_NAMES,
            observationIds=SOME_NAMES,
            sessionId={"type": "string", "minLength": 1},
        )
    ),
]
"""What to forget: one of its selectors, at least."""


class ListIn(msgspec.Struct, rename="camel", kw_only=True):
    """Query of the list routes (`?limit=&sessionId=&project=&agentId=`)."""

    limit: Annotated[int, msgspec.Meta(ge=1, le=10_000)] = 100
    offset: Annotated[int, msgspec.Meta(ge=0)] = 0
    session_id: str = ""
    project: str = ""
    agent_id: str = ""


class MemoriesIn(ListIn, kw_only=True):
    type: str = ""
    """Only memories of this type (fact, decision, semantic, procedural…)."""
    cursor: Annotated[str, msgspec.Meta(max_length=2048)] = ""
    """The `nextCursor` of the page before (then `offset` is not used)."""
    latest: bool = True
    """Current versions only; false lists superseded versions too."""
    q: Annotated[str, msgspec.Meta(max_length=1000)] = ""
    """Only memories whose title, content or concepts hold every word of it."""
    facets: bool = False
    """Also count the listed memories by project, agent and type."""
    count: bool = False
    """Only `{total, latestCount}`."""


class AuditIn(ListIn, kw_only=True):
    operation: str = ""
    """Only entries of this action (forget, supersede, governance-delete, slot_create...)."""
    date_from: DateTime | None = None
    date_to: DateTime | None = None
    q: Annotated[str, msgspec.Meta(max_length=1000)] = ""
    """Only entries whose action, reason, targets or details hold it."""


class ExportIn(msgspec.Struct, rename="camel", kw_only=True):
    max_sessions: Annotated[int, msgspec.Meta(ge=1, le=100_000)] = 1000
    offset: Annotated[int, msgspec.Meta(ge=0)] = 0
    project: str = ""
    agent_id: str = ""


class ImportIn(msgspec.Struct, rename="camel", kw_only=True):
    strategy: Strategy = "merge"
    data: dict[str, Any] | None = None
    export_data: dict[str, Any] | None = None
    """Upstream clients send the export document under `exportData`."""
    agent_id: str = ""


ImportRequest = Annotated[
    ImportIn,
    msgspec.Meta(
        extra_json_schema=at_least_one_of(data={"type": "object"}, exportData={"type": "object"})
    ),
]
"""The export document under `data` (or upstream's `exportData`)."""


class GetIn(msgspec.Struct, rename="camel", kw_only=True):
    id: NonEmpty
    agent_id: str = ""


# ---- responses (camelCase on the wire; records as their views) -------------------------


class SessionEndOut(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    """Upstream's shape (0.9.30): `ended` says whether this call ended the session; when it
    did not, `reason` says why (`not_found` and `already_completed` write nothing;
    `deferred`: a turn's end, the session ends at `finalizeAt` unless a turn comes first)."""

    success: bool
    ended: bool
    reason: str = ""
    finalize_at: str = ""


class Livez(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    status: str
    service: str
    version: str
    boot_id: str
    streams_port: int
    viewer_port: int | None = None
    """Present when the viewer runs; else `viewerSkipped` is true (upstream's shape)."""
    viewer_skipped: bool = False


class Health(msgspec.Struct, rename="camel", kw_only=True):
    status: str
    service: str
    version: str
    boot_id: str
    uptime_seconds: float


class Check(msgspec.Struct, kw_only=True):
    name: str
    ok: bool
    detail: str
    fix: str = ""


class SessionStartOut(msgspec.Struct, omit_defaults=True):
    session: SessionView
    context: str
    left_out: list[str] = msgspec.field(default_factory=list, name="leftOut")
    """What of the context was not ready within AGENTMEMORY_SESSION_START_WAIT (the
    context's last line says it too); absent when nothing was left out."""


class Similar(msgspec.Struct):
    id: str
    score: float
    title: str


class RememberOut(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    success: bool
    memory: MemoryView
    superseded_id: str | None = None
    similar_to: list[Similar] | None = None
    held: bool = False
    """Present (true) when the memory's words were held as suspect (see ObserveOut)."""
    reasons: list[str] = msgspec.field(default_factory=list)


class DeleteFailure(msgspec.Struct):
    id: str
    error: str = "delete_failed"


class ForgetOut(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    """Upstream's delete result (0.9.30): `success` is false when a delete failed."""

    success: bool
    deleted: int
    ids: list[str]
    """What was deleted."""
    not_found: list[str]
    """Ids asked for that are not stored (or not visible to the caller's agent)."""
    failed: int
    total: int
    """Ids asked for (memories, observations named, the session)."""
    failures: list[DeleteFailure] | None = None
    """Each delete that failed (present only when one did)."""


class SessionsOut(msgspec.Struct):
    sessions: list[SessionView]


class ObservationsOut(msgspec.Struct):
    observations: list[ObservationView]


class ObservationOut(msgspec.Struct):
    observation: ObservationView


class FacetCount(msgspec.Struct):
    value: str
    count: int


class MemoryFacets(msgspec.Struct):
    projects: list[FacetCount]
    agents: list[FacetCount]
    types: list[FacetCount]


class MemorySearch(msgspec.Struct):
    query: str
    mode: Literal["keyword"] = "keyword"


class MemoriesOut(msgspec.Struct, rename="camel", kw_only=True):
    """Upstream's list (0.9.30): newest first by `updatedAt`, then id; `count=true` answers
    `{total, latestCount}` only."""

    memories: list[MemoryView] | msgspec.UnsetType = msgspec.UNSET
    total: int
    """Memories that pass the filters (all pages)."""
    latest_count: int | msgspec.UnsetType = msgspec.UNSET
    offset: int | msgspec.UnsetType = msgspec.UNSET
    limit: int | msgspec.UnsetType = msgspec.UNSET
    next_cursor: str | msgspec.UnsetType | None = msgspec.UNSET
    """The cursor of the next page; null on the last one."""
    search: MemorySearch | msgspec.UnsetType = msgspec.UNSET
    facets: MemoryFacets | msgspec.UnsetType = msgspec.UNSET


class MemoryOut(msgspec.Struct):
    memory: MemoryView
    versions: list[MemoryView]


class AuditEntryOut(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    """An audit entry: ours (`at`, `action`, `actor` ...) and upstream's names for them
    (`timestamp`, `operation`, `userId`, `functionId`)."""

    id: str
    at: str
    action: str
    target_ids: list[str]
    reason: str = ""
    actor: str = ""
    project: str = ""
    details: dict[str, Any]
    timestamp: str
    operation: str
    function_id: str
    """`mem::<action>`: an entry records its action, not the function that wrote it."""
    user_id: str = ""


class AuditOut(msgspec.Struct, rename="camel", kw_only=True):
    """Upstream's shape (0.9.30). `legacyFrozen` is upstream's unfinished migration of its
    old audit scope; this store never had one, so it is always false."""

    entries: list[AuditEntryOut]
    legacy_frozen: bool = False
    success: bool = True


class Pagination(msgspec.Struct, rename="camel", kw_only=True):
    offset: int
    limit: int
    total: int
    has_more: bool


EXPORT_LIMIT_BYTES = 15 * 1024 * 1024
"""Upstream's safe payload (0.9.30): a larger export answers 413, naming where it stopped."""


class ExportOut(msgspec.Struct, rename="camel", kw_only=True):
    """The export document; or, over EXPORT_LIMIT_BYTES, upstream's 413 body
    `{success: false, error, oversized: true, bytes, limitBytes, stoppedAt}`."""

    version: str | msgspec.UnsetType = msgspec.UNSET
    exported_at: str | msgspec.UnsetType = msgspec.UNSET
    sessions: list[SessionView] | msgspec.UnsetType = msgspec.UNSET
    observations: dict[str, list[ObservationView]] | msgspec.UnsetType = msgspec.UNSET
    """By session id."""
    memories: list[MemoryView] | msgspec.UnsetType = msgspec.UNSET
    summaries: list[SummaryView] | msgspec.UnsetType = msgspec.UNSET
    total_sessions: int | msgspec.UnsetType = msgspec.UNSET
    offset: int | msgspec.UnsetType = msgspec.UNSET
    next_offset: int | msgspec.UnsetType | None = msgspec.UNSET
    pagination: Pagination | msgspec.UnsetType = msgspec.UNSET
    """Upstream's name for the page: `hasMore` when `nextOffset` is not null."""
    success: bool | msgspec.UnsetType = msgspec.UNSET
    error: str | msgspec.UnsetType = msgspec.UNSET
    oversized: bool | msgspec.UnsetType = msgspec.UNSET
    bytes: int | msgspec.UnsetType = msgspec.UNSET
    limit_bytes: int | msgspec.UnsetType = msgspec.UNSET
    stopped_at: str | msgspec.UnsetType = msgspec.UNSET
    """The collection whose size crossed the limit."""


class ImportCounts(msgspec.Struct):
    sessions: int = 0
    observations: int = 0
    memories: int = 0
    summaries: int = 0


class ImportOut(msgspec.Struct):
    success: bool
    strategy: str
    imported: ImportCounts
    skipped: int
