"""What crosses the REST and bus boundaries: request and response Structs, camelCase on the
wire as the upstream clients send and read them; stored records appear as their views."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

import msgspec

from functions.kernel.models.usage import UsageOut
from functions.kernel.names import NONBLANK, SOME_NAMES, Names, at_least_one_of, names
from functions.kernel.records import (
    HookType,
)
from functions.kernel.views import (
    AuditEntryView,
    MemoryView,
    ObservationView,
    SessionView,
    SummaryView,
)
from functions.memory.inbox import PendingView

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


class ObserveOut(msgspec.Struct, rename="camel", kw_only=True):
    status: Literal["accepted", "duplicate", "retrying"]
    observation_id: str
    boot_id: str
    accepted_at: str
    durable_after_ms: int


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


class AuditIn(ListIn, kw_only=True):
    operation: str = ""
    """Only entries of this action (forget, supersede, governance-delete, slot_create...)."""


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


class CaptureRetryIn(msgspec.Struct, rename="camel", kw_only=True):
    ids: list[str] = msgspec.field(default_factory=list)
    """Observation ids to replay; empty replays every dead letter and the inbox."""


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


class StatusOut(Health, rename="camel", kw_only=True):
    agent_scope: str
    checks: list[Check]
    models: UsageOut | None = None
    """Model providers: the chain, calls, tokens, failures and breakers, summed over the
    processes that call them (functions/kernel/models); None when none is configured."""


class SessionStartOut(msgspec.Struct):
    session: SessionView
    context: str


class Similar(msgspec.Struct):
    id: str
    score: float
    title: str


class RememberOut(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    success: bool
    memory: MemoryView
    superseded_id: str | None = None
    similar_to: list[Similar] | None = None


class ForgetOut(msgspec.Struct):
    success: bool
    deleted: int
    ids: list[str]


class SessionsOut(msgspec.Struct):
    sessions: list[SessionView]


class ObservationsOut(msgspec.Struct):
    observations: list[ObservationView]


class ObservationOut(msgspec.Struct):
    observation: ObservationView


class MemoriesOut(msgspec.Struct):
    memories: list[MemoryView]


class MemoryOut(msgspec.Struct):
    memory: MemoryView
    versions: list[MemoryView]


class AuditOut(msgspec.Struct):
    entries: list[AuditEntryView]


class ExportOut(msgspec.Struct, rename="camel", kw_only=True):
    version: str
    exported_at: str
    sessions: list[SessionView]
    observations: dict[str, list[ObservationView]]
    """By session id."""
    memories: list[MemoryView]
    summaries: list[SummaryView]
    total_sessions: int
    offset: int
    next_offset: int | None


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


class CaptureOut(msgspec.Struct, rename="camel", kw_only=True):
    inbox: list[PendingView]
    dead_letters: list[PendingView]
    inbox_size: int
    dead_letter_count: int


class CaptureRetryOut(msgspec.Struct):
    success: bool
    redriven: int
    stored: int
    failed: int
