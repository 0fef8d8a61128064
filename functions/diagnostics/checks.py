"""What diagnose looks for, by category, each finding with its fix when it has one
(fixes.py):

- sessions active long after their last activity;
- memories: version links to records that are gone, expired TTLs, a memory still current
  though another supersedes it, upstream's project coverage of the latest memories;
- summaries of sessions that were forgotten, or without a title;
- facets and relations pointing at missing records; slots over their size limit;
- the search index against KV (orphan entries, unindexed records), asked of
  `mem::index-audit`; project profiles behind the event stream;
- as upstream's diagnostics: lessons, semantic memories and insights with a confidence
  outside 0..1, procedural memories without steps (warnings, nothing to fix); mesh peers
  not heard from for an hour or in error, asked of the team's `mem::mesh-list`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from engine import FunctionError
from functions.diagnostics.fixes import Fix, Fixes
from functions.diagnostics.wire import Check, Status
from functions.kernel import clock
from functions.kernel.ids import kv_key
from functions.kernel.records import (
    FACETS_BUCKET,
    INSIGHTS_BUCKET,
    LESSONS_BUCKET,
    PROFILES_BUCKET,
    RELATIONS_BUCKET,
    SLOTS_BUCKET,
    Facet,
    Insight,
    Lesson,
    Memory,
    ProjectProfile,
    Relation,
    Session,
    SessionSummary,
    Slot,
)
from functions.kernel.store import MemoryStore

MESH_SILENT = 3600.0
"""Seconds a mesh peer may go unheard before it is reported (upstream: not synced for 1 h)."""
STALE_SESSION = timedelta(hours=24)
PROFILE_LAG = 1000
"""MEM_EVENTS a profile may trail before it counts as stale (the feed runs every minute)."""


@dataclass
class Finding:
    check: Check
    fix: Fix | None = None
    """What repairs it (None: report only)."""


def found(
    *, name: str, category: str, status: Status, message: str, fix: Fix | None = None
) -> Finding:
    """A finding is fixable exactly when it comes with its repair."""
    return Finding(
        Check(
            name=name, category=category, status=status, message=message, fixable=fix is not None
        ),
        fix,
    )


class Checks:
    """The checks of this service's categories over the store, their fixes from `fixes`."""

    def __init__(self, store: MemoryStore, fixes: Fixes) -> None:
        self.store = store
        self.fixes = fixes

    async def findings(self, cats: list[str], now: datetime) -> list[Finding]:
        want = set(cats)
        out: list[Finding] = []
        st = self.store
        memories = (
            await st.load_all(st.memories, Memory)
            if want & {"memories", "relations", "facets", "semantic", "procedural"}
            else []
        )
        mem_ids = {m.id for m in memories}
        if "sessions" in want:
            out += await self._sessions(now)
        if "memories" in want:
            out += self._memories(memories, mem_ids, now)
        if "summaries" in want:
            out += await self._summaries()
        if "facets" in want or "relations" in want:
            out += await self._links(want, mem_ids)
        if "slots" in want:
            out += await self._slots()
        if "index" in want:
            out += await self._index()
        if "profile" in want:
            out += await self._profiles()
        out += await self._tiers(want, memories)
        return out

    async def _summaries(self) -> list[Finding]:
        st = self.store
        out: list[Finding] = []
        live = set(await st.keys(st.sessions))
        for sm in await st.load_all(st.summaries, SessionSummary):
            if kv_key(sm.session_id) not in live:
                out.append(
                    found(
                        name=f"orphan-summary:{sm.session_id}",
                        category="summaries",
                        status="warn",
                        message=f"summary of session {sm.session_id}, which is gone",
                        fix=self.fixes.drop_summary(sm.session_id),
                    )
                )
            if not sm.title.strip():
                out.append(
                    found(
                        name=f"summary-untitled:{sm.session_id}",
                        category="summaries",
                        status="warn",
                        message=f"summary of session {sm.session_id} has no title",
                    )
                )
        return out

    async def _slots(self) -> list[Finding]:
        out: list[Finding] = []
        async for key, s in (await self.store.client.bucket(SLOTS_BUCKET)).scan(">", Slot):
            if len(s.content) > s.size_limit:
                out.append(
                    found(
                        name=f"slot-over-limit:{s.label}",
                        category="slots",
                        status="fail",
                        message=f"slot {s.label} holds {len(s.content)} chars over its "
                        f"limit {s.size_limit}",
                        fix=self.fixes.trim_slot(key),
                    )
                )
        return out

    async def _tiers(self, want: set[str], memories: list[Memory]) -> list[Finding]:
        """Lessons, semantic memories, insights (confidence in 0..1) and procedural memories
        (steps), as upstream checks them: warnings, nothing to fix."""
        out: list[Finding] = []

        def bad_confidence(category: str, rid: str, value: float | None) -> None:
            if value is not None and not (math.isfinite(value) and 0 <= value <= 1):
                out.append(found(name=f"{category}-confidence:{rid}", category=category,
                                 status="warn", message=f"{rid} has confidence {value}, "
                                 "outside 0..1"))  # fmt: skip

        for m in memories:
            if m.type == "semantic" and "semantic" in want:
                bad_confidence("semantic", m.id, m.confidence)
            if m.type == "procedural" and "procedural" in want and not m.steps:
                out.append(found(name=f"procedural-no-steps:{m.id}", category="procedural",
                                 status="warn", message=f"procedure {m.id} has no steps"))  # fmt: skip
        st = self.store
        if "lessons" in want:
            async for _, lesson in (await st.client.bucket(LESSONS_BUCKET)).scan(">", Lesson):
                bad_confidence("lessons", lesson.id, lesson.strength)  # upstream: confidence
        if "insights" in want:
            async for _, ins in (await st.client.bucket(INSIGHTS_BUCKET)).scan(">", Insight):
                if not ins.deleted:
                    bad_confidence("insights", ins.id, ins.confidence)
        return out

    async def mesh(self) -> list[Finding]:
        """Peers in error or not heard from for an hour (the team's own listing)."""
        got: dict[str, Any] = await self.store.client.call("mem::mesh-list", {}, timeout=30)
        out: list[Finding] = []
        for p in got.get("peers") or []:
            name, status = str(p.get("name")), str(p.get("status"))
            silent = p.get("lastSeenSeconds")
            if status == "error":
                out.append(found(name=f"mesh-peer-error:{name}", category="mesh", status="warn",
                                 message=f"mesh peer {name}: {p.get('error') or 'error'}"))  # fmt: skip
            elif silent is None or float(silent) > MESH_SILENT:
                out.append(found(name=f"mesh-peer-stale:{name}", category="mesh", status="warn",
                                 message=f"mesh peer {name} not heard from for over an hour "
                                 f"({status})"))  # fmt: skip
        return out

    async def _sessions(self, now: datetime) -> list[Finding]:
        out = []
        for s in await self.store.load_all(self.store.sessions, Session):
            seen = clock.parse(s.last_seen or s.started_at)
            if s.status == "active" and now - seen > STALE_SESSION:
                out.append(
                    found(
                        name=f"stale-session:{s.id}",
                        category="sessions",
                        status="warn",
                        message=f"session {s.id} is active but silent since {s.last_seen}",
                        fix=self.fixes.sweep,
                    )
                )
        return out

    def _memories(self, memories: list[Memory], ids: set[str], now: datetime) -> list[Finding]:
        out = []
        newer = {m.supersedes: m.id for m in memories if m.supersedes}
        for m in memories:
            if m.superseded_by is None and m.id in newer:
                out.append(
                    found(
                        name=f"memory-stale-latest:{m.id}",
                        category="memories",
                        status="fail",
                        message=f"memory {m.id} ({m.title or m.content[:60]!r}) is current "
                        f"but superseded by {newer[m.id]}",
                        fix=self.fixes.supersede(m.id, newer[m.id]),
                    )
                )
            if m.superseded_by and m.superseded_by not in ids:
                out.append(
                    found(
                        name=f"dangling-supersededBy:{m.id}",
                        category="memories",
                        status="fail",
                        message=f"memory {m.id} is superseded by "
                        f"{m.superseded_by}, which is gone: it is hidden from search",
                        fix=self.fixes.unsupersede(m.id),
                    )
                )
            if m.ttl_days and not m.pinned and clock.days_between(m.created_at, now) > m.ttl_days:
                out.append(
                    found(
                        name=f"expired-memory:{m.id}",
                        category="memories",
                        status="warn",
                        message=f"memory {m.id} is past its {m.ttl_days}-day TTL",
                        fix=self.fixes.auto_forget,
                    )
                )
        out.append(self._coverage(memories))
        return out

    def _coverage(self, memories: list[Memory]) -> Finding:
        """Upstream's project coverage: latest memories without a project show in every
        project's context; pass, warn (up to 10) or fail, healed by the migration."""
        latest = [m for m in memories if m.superseded_by is None]
        unscoped = sum(not m.project for m in latest)
        if not unscoped:
            return found(name="memory-project-coverage", category="memories", status="pass",
                         message=f"all {len(latest)} latest memories have a project scope")  # fmt: skip
        return found(
            name="memory-project-coverage",
            category="memories",
            status="warn" if unscoped <= 10 else "fail",
            message=f"{unscoped} of {len(latest)} latest memories have no project scope: run "
            'POST /agentmemory/migrate {"step":"infer-memory-projects"} to backfill',
            fix=self.fixes.infer_projects,
        )

    async def _links(self, want: set[str], mem_ids: set[str]) -> list[Finding]:
        st = self.store
        out: list[Finding] = []
        if "facets" in want:
            fstate = await st.client.bucket(FACETS_BUCKET)
            async for key, f in fstate.scan(">", Facet):
                if not await self._exists(f.target_type, f.target_id, mem_ids):
                    out.append(
                        found(
                            name=f"orphan-facet:{f.id}",
                            category="facets",
                            status="fail",
                            message=f"facet {f.dimension}:{f.value} tags {f.target_type} "
                            f"{f.target_id}, which is gone",
                            fix=self.fixes.delete(FACETS_BUCKET, key),
                        )
                    )
        if "relations" in want:
            rstate = await st.client.bucket(RELATIONS_BUCKET)
            async for key, r in rstate.scan(">", Relation):
                missing = [x for x in (r.source_id, r.target_id) if x not in mem_ids]
                if missing:
                    out.append(
                        found(
                            name=f"orphan-relation:{r.id}",
                            category="relations",
                            status="fail",
                            message=f"relation {r.type} names missing memories {missing}",
                            fix=self.fixes.delete(RELATIONS_BUCKET, key),
                        )
                    )
        return out

    async def _exists(self, kind: str, rid: str, mem_ids: set[str]) -> bool:
        st = self.store
        if kind == "memory":
            return rid in mem_ids
        if kind == "observation":
            return await st.get_observation(rid) is not None
        if kind == "session":
            return await st.get(st.sessions, rid, Session) is not None
        if kind == "lesson":
            lessons = await st.client.bucket(LESSONS_BUCKET)
            return await lessons.presence(kv_key(rid)) == "present"
        return True  # not ours to judge (actions, insights)

    async def _index(self) -> list[Finding]:
        try:
            audit: dict[str, Any] = await self.store.client.call("mem::index-audit", {}, timeout=60)
        except FunctionError as err:
            return [
                found(
                    name="index-unreachable",
                    category="index",
                    status="warn",
                    message=f"the search index did not answer: {err.message}",
                )
            ]
        out = []
        if audit["orphanCount"]:
            out.append(
                found(
                    name="index-orphans",
                    category="index",
                    status="fail",
                    message=f"{audit['orphanCount']} indexed records are gone from KV "
                    f"(e.g. {audit['orphans'][:3]}): search may return them",
                    fix=self.fixes.drop_from_index(audit["orphans"]),
                )
            )
        if audit["unindexedCount"]:
            out.append(
                found(
                    name="index-unindexed",
                    category="index",
                    status="fail",
                    message=f"{audit['unindexedCount']} stored records are not in the index "
                    f"(e.g. {audit['unindexed'][:3]}): search cannot find them",
                    fix=self.fixes.reindex(audit["unindexed"]),
                )
            )
        if not out:
            out.append(
                found(
                    name="index-ok",
                    category="index",
                    status="pass",
                    message=f"{audit['documents']} indexed records match KV",
                )
            )
        return out

    async def _profiles(self) -> list[Finding]:
        last = (await self.store.events.info()).last_seq
        out = []
        async for _, p in (await self.store.client.bucket(PROFILES_BUCKET)).scan(
            ">", ProjectProfile
        ):
            if last - p.seq > PROFILE_LAG:
                out.append(
                    found(
                        name=f"stale-profile:{p.project}",
                        category="profile",
                        status="warn",
                        message=f"profile of {p.project!r} is {last - p.seq} events behind",
                        fix=self.fixes.refold,
                    )
                )
        return out
