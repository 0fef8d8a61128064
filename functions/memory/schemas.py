"""Response shapes of the REST routes, for the OpenAPI document (and the schema test).
Field names are snake_case here and camelCase on the wire (`wire.wire_schema`)."""

from __future__ import annotations

from typing import Any

import msgspec

from functions.memory.inbox import PendingView
from functions.memory.wire import ObserveOut, wire_schema
from functions.records import AuditEntry, Memory, Observation, Session, SessionSummary


class Success(msgspec.Struct):
    success: bool


class Livez(msgspec.Struct, kw_only=True):
    status: str
    service: str
    version: str
    boot_id: str
    streams_port: int
    viewer_port: int = 0
    viewer_skipped: bool = False


class Health(msgspec.Struct, kw_only=True):
    status: str
    service: str
    version: str
    boot_id: str
    uptime_seconds: float


class CheckOut(msgspec.Struct, kw_only=True):
    name: str
    ok: bool
    detail: str
    fix: str = ""


class StatusOut(Health, kw_only=True):
    agent_scope: str
    checks: list[CheckOut]


class SessionStartOut(msgspec.Struct):
    session: Session
    context: str


class Similar(msgspec.Struct):
    id: str
    score: float
    title: str


class RememberOut(msgspec.Struct, kw_only=True):
    success: bool
    memory: Memory
    superseded_id: str = ""
    similar_to: list[Similar] = []


class ForgetOut(msgspec.Struct):
    success: bool
    deleted: int
    ids: list[str]


class SessionsOut(msgspec.Struct):
    sessions: list[Session]


class ObservationsOut(msgspec.Struct):
    observations: list[Observation]


class ObservationOut(msgspec.Struct):
    observation: Observation


class MemoriesOut(msgspec.Struct):
    memories: list[Memory]


class MemoryOut(msgspec.Struct):
    memory: Memory
    versions: list[Memory]


class AuditOut(msgspec.Struct):
    entries: list[AuditEntry]


class ExportOut(msgspec.Struct, kw_only=True):
    version: str
    exported_at: str
    sessions: list[Session]
    observations: dict[str, list[Observation]]
    memories: list[Memory]
    summaries: list[SessionSummary]
    total_sessions: int
    offset: int
    next_offset: int | None


class ImportCounts(msgspec.Struct):
    sessions: int
    observations: int
    memories: int
    summaries: int


class ImportOut(msgspec.Struct):
    success: bool
    strategy: str
    imported: ImportCounts
    skipped: int


class CaptureOut(msgspec.Struct, kw_only=True):
    inbox: list[PendingView]
    dead_letters: list[PendingView]
    inbox_size: int
    dead_letter_count: int


class CaptureRetryOut(msgspec.Struct):
    success: bool
    redriven: int
    stored: int
    failed: int


RESPONSES: dict[str, Any] = {
    "livez": Livez,
    "health": Health,
    "status": StatusOut,
    "session-start": SessionStartOut,
    "session-end": Success,
    "remember": RememberOut,
    "forget": ForgetOut,
    "governance-delete": ForgetOut,
    "sessions": SessionsOut,
    "observations": ObservationsOut,
    "observation": ObservationOut,
    "memories": MemoriesOut,
    "memory": MemoryOut,
    "audit": AuditOut,
    "export": ExportOut,
    "import": ImportOut,
    "capture": CaptureOut,
    "capture-retry": CaptureRetryOut,
}


def response_schema(op_name: str) -> dict[str, Any] | None:
    if op_name == "observe":
        return msgspec.json.schema(ObserveOut)  # already camelCase by rename
    tp = RESPONSES.get(op_name)
    return None if tp is None else wire_schema(tp)
