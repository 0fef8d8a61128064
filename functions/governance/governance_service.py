"""Governance beyond one id: bulk deletion by filter (audited like `forget`), merging two
projects into one, and `migrate`: infer the project of memories saved without one, or
import a claude-mem SQLite database."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec

from engine import FunctionError, operation
from functions.governance.project_merge import ProjectMergeIn, ProjectMergeOut, merge_projects
from functions.kernel import clock
from functions.kernel.clock import now_iso
from functions.kernel.confine import OutsideRoots, confine
from functions.kernel.ids import kv_key
from functions.kernel.names import SOME_NAMES, Names, at_least_one_of, names
from functions.kernel.owned import OwnedService, routes
from functions.kernel.records import Memory, Session
from functions.kernel.store import StoreOwner
from functions.memory import forget as forget_mod
from functions.memory import transfer
from functions.memory.wire import DateTime, DeleteFailure, ForgetIn, ImportCounts, ImportIn


class BulkDeleteIn(msgspec.Struct, rename="camel", kw_only=True):
    type: Names = msgspec.field(default_factory=list)
    """Memory types to delete (fact, pattern...)."""
    date_from: DateTime | None = None
    date_to: DateTime | None = None
    quality_below: Annotated[float, msgspec.Meta(ge=0, le=1)] | None = None
    """Delete memories whose strength is below this."""
    project: str = ""
    dry_run: bool = False
    reason: str = ""
    agent_id: str = ""

    def __post_init__(self) -> None:
        self.type = names(self.type)


BulkDeleteRequest = Annotated[
    BulkDeleteIn,
    msgspec.Meta(
        extra_json_schema=at_least_one_of(
            type=SOME_NAMES,
            dateFrom={"type": "string"},
            dateTo={"type": "string"},
            qualityBelow={"type": "number", "minimum": 0, "maximum": 1},
            dryRun={"const": True},
        )
    ),
]
"""A filter (type, dateFrom, dateTo, qualityBelow) or dryRun: a bulk delete never means all."""


class BulkDeleteOut(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    success: bool
    dry_run: bool = False
    would_delete: int | None = None
    deleted: int = 0
    ids: list[str] = msgspec.field(default_factory=list)
    not_found: list[str] | None = None
    """A live delete (upstream 0.9.30): ids picked but gone by the time they were deleted."""
    failed: int | None = None
    failures: list[DeleteFailure] | None = None


class MigrateIn(msgspec.Struct, rename="camel", kw_only=True):
    step: Literal["", "infer-memory-projects"] = ""
    """`infer-memory-projects`: give memories saved without a project their sessions' one."""
    db_path: str = ""
    """A claude-mem SQLite database to import, under an allowed root (the data dir,
    ~/.agentmemory, AGENTMEMORY_IMPORT_ROOT)."""
    dry_run: bool = False


MigrateRequest = Annotated[
    MigrateIn,
    msgspec.Meta(
        extra_json_schema=at_least_one_of(
            step={"const": "infer-memory-projects"}, dbPath={"type": "string", "minLength": 1}
        )
    ),
]
"""A step or a dbPath."""


class MigrateOut(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    success: bool
    step: str
    updated: int = 0
    skipped: int = 0
    ambiguous: int = 0
    imported: ImportCounts | None = None
    dry_run: bool = False


rest = routes("governance")


def _when(value: str, field: str) -> str:
    if not value:
        return ""
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise FunctionError(
            "BAD_REQUEST", f"{field} must be an ISO-8601 date", field=field
        ) from None
    return clock.iso(clock.parse(value))


class GovernanceService(OwnedService[StoreOwner]):
    """Served beside the worker's main service, over its store."""

    @operation(
        "mem::project-merge",
        description="Move every record of project `from` into project `into` (two projects "
        "that are one repository, recorded apart before); dryRun counts; audited",
        http=rest("POST", "projects/merge"),
        timeout=900.0,
    )
    async def project_merge(self, req: ProjectMergeIn) -> ProjectMergeOut:
        return await merge_projects(self.store, req)

    @operation(
        "mem::governance-bulk",
        description="Delete memories by type, date range or strength (dryRun previews; "
        "one filter at least), audited",
        http=rest("POST", "governance/bulk-delete"),
    )
    async def bulk_delete(self, req: BulkDeleteRequest) -> BulkDeleteOut:
        date_from = _when(req.date_from or "", "dateFrom")
        date_to = _when(req.date_to or "", "dateTo")
        filtered = bool(req.type or date_from or date_to or req.quality_below is not None)
        if not filtered and not req.dry_run:
            raise FunctionError(
                "BAD_REQUEST",
                "give at least one filter (type, dateFrom, dateTo, qualityBelow) or dryRun",
                field="type",
            )
        picked = []
        for m in await self.store.load_all(self.store.memories, Memory):
            if not self.store.visible(m.agent_id, req.agent_id):
                continue
            if req.project and m.project != req.project:
                continue
            if req.type and m.type not in req.type:
                continue
            created = clock.iso(clock.parse(m.created_at))
            if (date_from and created < date_from) or (date_to and created > date_to):
                continue
            if req.quality_below is not None and m.strength >= req.quality_below:
                continue
            picked.append(m.id)
        if req.dry_run:
            return BulkDeleteOut(success=True, dry_run=True, would_delete=len(picked), ids=picked)
        out = (
            await forget_mod.forget(
                self.store,
                ForgetIn(memory_ids=picked, reason=req.reason or "bulk delete"),
                agent_id=req.agent_id,
                action="governance-bulk",
            )
            if picked
            else None
        )
        if out is None:
            return BulkDeleteOut(success=True, not_found=[], failed=0)
        return BulkDeleteOut(
            success=out.success,
            deleted=out.deleted,
            ids=out.ids,
            not_found=out.not_found,
            failed=out.failed,
            failures=out.failures,
        )

    @operation(
        "mem::migrate",
        description="Migrations: step=infer-memory-projects, or dbPath= a claude-mem SQLite "
        "database under ~/.agentmemory to import",
        timeout=600,
        http=rest("POST", "migrate"),
    )
    async def migrate(self, req: MigrateRequest) -> MigrateOut:
        if req.step == "infer-memory-projects":
            return await self._infer_projects(req.dry_run)
        if req.step:
            raise FunctionError(
                "BAD_REQUEST",
                f"unknown step {req.step!r}; known: infer-memory-projects",
                field="step",
            )
        if not req.db_path:
            raise FunctionError("BAD_REQUEST", "give step or dbPath", field="step")
        doc = await asyncio.to_thread(_read_claude_mem, req.db_path)
        if req.dry_run:
            counts = ImportCounts(**{k: len(v) for k, v in doc.items()})
            return MigrateOut(success=True, step="sqlite", imported=counts, dry_run=True)
        got = await transfer.import_(self.store, ImportIn(strategy="skip", data=doc))
        return MigrateOut(success=True, step="sqlite", imported=got.imported, skipped=got.skipped)

    async def _infer_projects(self, dry_run: bool) -> MigrateOut:
        st = self.store
        updated = skipped = ambiguous = 0
        sessions: dict[str, str] = {}
        for m in await st.load_all(st.memories, Memory):
            if m.project:
                skipped += 1
                continue
            projects: list[str] = []
            for sid in m.source_ids:
                if sid not in sessions:
                    s = await st.get(st.sessions, sid, Session)
                    sessions[sid] = s.project if s else ""
                if sessions[sid]:
                    projects.append(sessions[sid])
            top = max(set(projects), key=projects.count) if projects else ""
            if not top or (len(set(projects)) > 1 and projects.count(top) * 2 <= len(projects)):
                ambiguous += 1
                continue
            if not dry_run:

                def setp(cur: Memory | None, top: str = top) -> Memory | None:
                    if cur is None or cur.project:
                        return None
                    cur.project, cur.updated_at = top, now_iso()
                    return cur

                await st.memories.update(kv_key(m.id), setp, type=Memory)
            updated += 1
        return MigrateOut(
            success=True,
            step="infer-memory-projects",
            updated=updated,
            skipped=skipped,
            ambiguous=ambiguous,
            dry_run=dry_run,
        )


def _rows(db: sqlite3.Connection, *tables: str) -> list[dict[str, Any]]:
    for t in tables:
        try:
            return [dict(r) for r in db.execute(f'SELECT * FROM "{t}"')]
        except sqlite3.Error:
            continue
    return []


def _list(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(v) for v in value]
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            got = json.loads(value)
        except ValueError:
            return []
        return [str(v) for v in got] if isinstance(got, list) else []
    return []


def _read_claude_mem(raw: str) -> dict[str, list[dict[str, Any]]]:
    """claude-mem's tables as our export document (sessions, observations, summaries)."""
    try:
        path = confine(raw)
    except OutsideRoots as refused:
        raise FunctionError("FORBIDDEN", str(refused), field="dbPath") from None
    if not path.is_file():
        raise FunctionError("NOT_FOUND", f"no database at {path}", field="dbPath")
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    db.row_factory = sqlite3.Row
    try:
        now = now_iso()
        sessions = [
            {
                "id": str(r.get("session_id") or r.get("id")),
                "project": str(r.get("project_path") or r.get("project") or "unknown"),
                "cwd": str(r.get("cwd") or r.get("project_path") or ""),
                "startedAt": str(r.get("created_at") or r.get("started_at") or now),
                "status": "ended",
            }
            for r in _rows(db, "sessions")
        ]
        observations = [
            {
                "id": "obs_mig_" + str(r.get("id") or i),
                "sessionId": str(r.get("session_id") or "migrated"),
                "project": "",
                "hookType": "post_tool_use",
                "timestamp": str(r.get("created_at") or now),
                "type": str(r.get("type") or "other"),
                "title": str(r.get("title") or r.get("summary") or "Migrated observation"),
                "narrative": str(r.get("narrative") or r.get("content") or ""),
                "facts": _list(r.get("facts")),
                "concepts": _list(r.get("concepts")),
                "files": _list(r.get("files")),
                "importance": int(r.get("importance") or 5),
            }
            for i, r in enumerate(_rows(db, "observations", "compressed_observations"))
        ]
        summaries = [
            {
                "sessionId": str(r.get("session_id")),
                "project": str(r.get("project") or "unknown"),
                "title": str(r.get("title") or "Migrated session"),
                "narrative": str(r.get("narrative") or r.get("summary") or ""),
                "decisions": _list(r.get("key_decisions")),
                "files": _list(r.get("files_modified")),
                "concepts": _list(r.get("concepts")),
                "createdAt": str(r.get("created_at") or now),
            }
            for r in _rows(db, "session_summaries")
            if r.get("session_id")
        ]
    finally:
        db.close()
    return {"sessions": sessions, "observations": observations, "summaries": summaries}
