"""Diagnostics and heal: find broken state and fix what can be fixed.

Checks by category: sessions (active long after their last activity), memories (version
links to records that are gone, expired TTLs, a memory still current though another
supersedes it, upstream's project coverage of the latest memories), summaries of sessions that were forgotten,
facets and relations pointing at missing records, slots over their size limit, the search
index against KV (orphan entries, unindexed records) and project profiles behind the
event stream. Heal repairs each fixable finding the way the store itself would: through
the event stream for indexes, compare-and-set for records, audited.

Also, as upstream's diagnostics: lessons, semantic memories and insights with a confidence
outside 0..1, procedural memories without steps, summaries without a title, mesh peers not
heard from for an hour or in error (asked of the team's `mem::mesh-list`). The coordination
layer's categories (actions, leases, sentinels, sketches, signals, crystals) are checked,
and healed, by the service that owns them (`mem::coordination-diagnose`, over the bus); a
category whose service does not answer is reported in `skipped`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args

import msgspec

from engine import FunctionError, Tool, operation
from functions.kernel import clock, followup
from functions.kernel.clock import Clocked, when
from functions.kernel.ids import kv_key
from functions.kernel.names import choices_pattern, chosen
from functions.kernel.owned import OwnedService, routes
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
    MemoryAdded,
    Observation,
    ObservationAdded,
    ProjectProfile,
    RecordsRemoved,
    Relation,
    Session,
    SessionSummary,
    Slot,
    SummaryAdded,
)
from functions.lifecycle.wire import AutoForgetIn, DigestIn, SweepIn

if TYPE_CHECKING:
    from functions.lifecycle.lifecycle_service import LifecycleService  # the owner, imported by it


Category = Literal[
    "sessions", "memories", "summaries", "facets", "relations", "slots", "index", "profile",
    "lessons", "actions", "leases", "sentinels", "sketches", "signals", "crystals", "mesh",
    "semantic", "procedural", "insights",
]  # fmt: skip
CATEGORIES: tuple[Category, ...] = get_args(Category)
COORDINATION = ("actions", "leases", "sentinels", "sketches", "signals", "crystals")
"""Checked by the coordination service (`mem::coordination-diagnose`)."""
OURS = tuple(c for c in CATEGORIES if c not in COORDINATION)
MESH_SILENT = 3600.0
"""Seconds a mesh peer may go unheard before it is reported (upstream: not synced for 1 h)."""
Categories = list[Category] | Annotated[str, msgspec.Meta(pattern=choices_pattern(CATEGORIES))]
STALE_SESSION = timedelta(hours=24)
PROFILE_LAG = 1000
"""MEM_EVENTS a profile may trail before it counts as stale (the feed runs every minute)."""
Status = Literal["pass", "warn", "fail"]


class DiagnoseIn(Clocked, kw_only=True):
    categories: Categories = msgspec.field(default_factory=list)
    """Default all."""

    def __post_init__(self) -> None:
        self.categories = chosen(self.categories, CATEGORIES)


class HealIn(DiagnoseIn, kw_only=True):
    dry_run: bool | Literal["true", "false"] = False


class Check(msgspec.Struct, kw_only=True):
    name: str
    category: str
    status: Status
    message: str
    fixable: bool = False


class Summary(msgspec.Struct, kw_only=True):
    pass_: int = msgspec.field(name="pass", default=0)
    warn: int = 0
    fail: int = 0
    fixable: int = 0


class DiagnoseOut(msgspec.Struct, kw_only=True):
    success: bool
    checks: list[Check]
    summary: Summary
    skipped: list[str]
    """Categories whose service did not answer (the coordination layer's, the mesh)."""


class CoordReply(msgspec.Struct, rename="camel", kw_only=True):
    """What `mem::coordination-diagnose` answers (read over the bus, not imported)."""

    checks: list[Check]
    fixed: int = 0
    skipped: int = 0
    details: list[str] = msgspec.field(default_factory=list)


class HealOut(msgspec.Struct, rename="camel", kw_only=True):
    success: bool
    dry_run: bool
    fixed: int
    skipped: int
    details: list[str]


class FollowupOut(msgspec.Struct, rename="camel", kw_only=True):
    success: bool
    window_seconds: int
    agent_initiated_searches: int
    followup_within_window: int
    rate: float
    caveat: str


class Inferred(msgspec.Struct, kw_only=True):
    """What governance's `mem::migrate` step infer-memory-projects answers (the part read)."""

    updated: int = 0
    ambiguous: int = 0


@dataclass
class Finding:
    check: Check
    fix: Any = None
    """An async callable that repairs it (None: report only)."""


def found(*, name: str, category: str, status: Status, message: str, fix: Any = None) -> Finding:
    """A finding is fixable exactly when it comes with its repair."""
    return Finding(
        Check(
            name=name, category=category, status=status, message=message, fixable=fix is not None
        ),
        fix,
    )


rest = routes("diagnostics")


class DiagnosticsService(OwnedService["LifecycleService"]):
    """Served beside the worker's main service, over its store."""

    owner: LifecycleService

    async def _findings(self, cats: list[str], now: datetime) -> list[Finding]:
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
            live = set(await st.keys(st.sessions))
            for sm in await st.load_all(st.summaries, SessionSummary):
                if kv_key(sm.session_id) not in live:
                    out.append(
                        found(
                            name=f"orphan-summary:{sm.session_id}",
                            category="summaries",
                            status="warn",
                            message=f"summary of session {sm.session_id}, which is gone",
                            fix=self._drop_summary(sm.session_id),
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
        if "facets" in want or "relations" in want:
            out += await self._links(want, mem_ids)
        if "slots" in want:
            async for key, s in (await st.client.bucket(SLOTS_BUCKET)).scan(">", Slot):
                if len(s.content) > s.size_limit:
                    out.append(
                        found(
                            name=f"slot-over-limit:{s.label}",
                            category="slots",
                            status="fail",
                            message=f"slot {s.label} holds {len(s.content)} chars over its "
                            f"limit {s.size_limit}",
                            fix=self._trim_slot(key),
                        )
                    )
        if "index" in want:
            out += await self._index()
        if "profile" in want:
            out += await self._profiles()
        out += await self._tiers(want, memories)
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

    async def _mesh(self) -> list[Finding]:
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

    async def _elsewhere(
        self, cats: list[str], *, heal: bool = False, dry_run: bool = False
    ) -> tuple[list[Check], list[str], HealOut]:
        """The coordination service's checks (and fixes) and the mesh's; the categories
        whose service did not answer."""
        checks: list[Check] = []
        skipped: list[str] = []
        healed = HealOut(success=True, dry_run=dry_run, fixed=0, skipped=0, details=[])
        coord = [c for c in cats if c in COORDINATION]
        if coord:
            try:
                got = await self.store.client.call(
                    "mem::coordination-diagnose",
                    {"categories": coord, "heal": heal, "dryRun": dry_run},
                    timeout=300,
                )
                reply = msgspec.convert(got, CoordReply)
                checks += reply.checks
                healed.fixed, healed.skipped = reply.fixed, reply.skipped
                healed.details += reply.details
            except FunctionError:
                skipped += coord
        if "mesh" in cats:
            try:
                checks += [f.check for f in await self._mesh()]
            except FunctionError:
                skipped.append("mesh")
        return checks, skipped, healed

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
                        fix=self._sweep,
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
                        fix=self._supersede(m.id, newer[m.id]),
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
                        fix=self._unsupersede(m.id),
                    )
                )
            if m.ttl_days and not m.pinned and clock.days_between(m.created_at, now) > m.ttl_days:
                out.append(
                    found(
                        name=f"expired-memory:{m.id}",
                        category="memories",
                        status="warn",
                        message=f"memory {m.id} is past its {m.ttl_days}-day TTL",
                        fix=self._auto_forget,
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
            fix=self._infer_projects,
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
                            fix=self._delete(FACETS_BUCKET, key),
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
                            fix=self._delete(RELATIONS_BUCKET, key),
                        )
                    )
        return out

    async def _exists(self, kind: str, rid: str, mem_ids: set[str]) -> bool:
        st = self.store
        if kind == "memory":
            return rid in mem_ids
        if kind == "observation":
            return await st.get(st.observations, rid, Observation) is not None
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
                    fix=self._drop_from_index(audit["orphans"]),
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
                    fix=self._reindex(audit["unindexed"]),
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
                        fix=self._refold,
                    )
                )
        return out

    # ---- fixes -------------------------------------------------------------------------
    async def _sweep(self) -> str:
        out = await self.owner.sweep(SweepIn(stale_hours=24))
        return f"swept sessions: abandoned {len(out.abandoned)}"

    async def _auto_forget(self) -> str:
        out = await self.owner.auto_forget(AutoForgetIn())
        return f"auto-forget removed {sum(out.removed.values())}"

    async def _refold(self) -> str:
        out = await self.owner.digest_events(DigestIn())
        return f"profiles refolded: {out.folded}"

    def _unsupersede(self, mid: str) -> Any:
        return self._superseded(mid, None, "dangling supersededBy cleared", "is current again")

    def _supersede(self, mid: str, by: str) -> Any:
        return self._superseded(
            mid, by, f"superseded by {by}: no longer latest", f"is superseded by {by}"
        )

    def _superseded(self, mid: str, by: str | None, reason: str, result: str) -> Any:
        """The fix setting a memory's `supersededBy` to `by` (None: clearing it)."""

        async def fix() -> str:
            def put(cur: Memory | None) -> Memory | None:
                if cur is None or bool(cur.superseded_by) == bool(by):
                    return None
                cur.superseded_by = by
                return cur

            m = await self.store.memories.update(kv_key(mid), put, type=Memory)
            if m is not None:
                await self.store.publish(MemoryAdded(memory=m))
            await self.store.audit("heal", [mid], reason=reason)
            return f"memory {mid} {result}"

        return fix

    async def _infer_projects(self) -> str:
        got = await self.store.client.call(
            "mem::migrate", {"step": "infer-memory-projects"}, response=Inferred, timeout=300
        )
        await self.store.audit("heal", [], reason="infer-memory-projects run")
        return f"infer-memory-projects: {got.updated} scoped, {got.ambiguous} ambiguous"

    def _drop_summary(self, sid: str) -> Any:
        async def fix() -> str:
            await self.store.summaries.delete(kv_key(sid))
            await self.store.publish(RecordsRemoved(ids=[f"summary:{sid}"], reason="heal"))
            await self.store.audit("heal", [sid], reason="orphan summary removed")
            return f"summary of {sid} removed"

        return fix

    def _delete(self, bucket: str, key: str) -> Any:
        async def fix() -> str:
            await (await self.store.client.bucket(bucket)).delete(key)
            await self.store.audit("heal", [key], reason=f"orphan {bucket} entry removed")
            return f"{bucket} {key} removed"

        return fix

    def _trim_slot(self, key: str) -> Any:
        async def fix() -> str:
            def trim(cur: Slot | None) -> Slot | None:
                if cur is None or len(cur.content) <= cur.size_limit:
                    return None
                cur.content = cur.content[-cur.size_limit :]
                return cur

            await (await self.store.client.bucket(SLOTS_BUCKET)).update(key, trim, type=Slot)
            return f"slot {key} trimmed to its limit"

        return fix

    def _drop_from_index(self, ids: list[str]) -> Any:
        async def fix() -> str:
            await self.store.publish(RecordsRemoved(ids=ids, reason="heal: orphan index entries"))
            await self.store.audit("heal", ids[:50], reason="orphan index entries dropped")
            return f"{len(ids)} orphan index entries dropped"

        return fix

    def _reindex(self, ids: list[str]) -> Any:
        async def fix() -> str:
            st = self.store
            n = 0
            for rid in ids:
                event: Any = None
                if rid.startswith("summary:"):
                    sm = await st.get(st.summaries, rid.removeprefix("summary:"), SessionSummary)
                    event = SummaryAdded(summary=sm) if sm else None
                elif (m := await st.get(st.memories, rid, Memory)) is not None:
                    event = MemoryAdded(memory=m)
                elif (o := await st.get(st.observations, rid, Observation)) is not None:
                    event = ObservationAdded(observation=o)
                if event is not None:
                    await st.publish(event)
                    n += 1
            await st.audit("heal", ids[:50], reason="unindexed records re-published")
            return f"{n} records re-published to the indexes"

        return fix

    # ---- operations --------------------------------------------------------------------
    @operation(
        "mem::diagnose",
        description="Health checks of sessions, memories, summaries, facets, relations, "
        "slots, the search index and project profiles: stuck, orphaned and inconsistent state.",
        timeout=300,
        http=rest("POST", "diagnostics"),
        tool=Tool("memory_diagnose", tier="core"),
    )
    async def diagnose(self, req: DiagnoseIn) -> DiagnoseOut:
        now = when(req)
        cats = list(req.categories) or list(CATEGORIES)
        found = await self._findings([c for c in cats if c in OURS and c != "mesh"], now)
        checks = [f.check for f in found]
        more, skipped, _ = await self._elsewhere(cats)
        checks += more
        for cat in cats:
            if cat not in skipped and not any(
                c.category == cat and (c.status != "pass" or c.name == f"{cat}-ok") for c in checks
            ):
                checks.append(
                    Check(
                        name=f"{cat}-ok",
                        category=cat,
                        status="pass",
                        message=f"no problem found in {cat}",
                    )
                )
        summary = Summary(
            pass_=sum(c.status == "pass" for c in checks),
            warn=sum(c.status == "warn" for c in checks),
            fail=sum(c.status == "fail" for c in checks),
            fixable=sum(c.fixable for c in checks),
        )
        return DiagnoseOut(success=True, checks=checks, summary=summary, skipped=skipped)

    @operation(
        "mem::heal",
        description="Fix what diagnostics found fixable: orphan index entries, unindexed "
        "records, dangling version links, orphan facets and relations, stale sessions and "
        "profiles (dryRun lists the fixes).",
        timeout=600,
        http=rest("POST", "diagnostics/heal"),
        tool=Tool("memory_heal"),
    )
    async def heal(self, req: HealIn) -> HealOut:
        dry = req.dry_run is True or str(req.dry_run).lower() == "true"
        now = when(req)
        cats = list(req.categories) or list(CATEGORIES)
        found = await self._findings([c for c in cats if c in OURS and c != "mesh"], now)
        details: list[str] = []
        fixed = skipped = 0
        done: set[Any] = set()
        for f in found:
            if f.fix is None:
                continue
            if dry:
                details.append(f"[dry-run] would fix {f.check.name}: {f.check.message}")
                fixed += 1
                continue
            if f.fix in done:  # one sweep or refold fixes every finding of its kind
                fixed += 1
                continue
            try:
                details.append(await f.fix())
                done.add(f.fix)
                fixed += 1
            except FunctionError as err:
                details.append(f"could not fix {f.check.name}: {err.message}")
                skipped += 1
        _, _, elsewhere = await self._elsewhere(cats, heal=True, dry_run=dry)
        fixed += elsewhere.fixed
        skipped += elsewhere.skipped
        details += elsewhere.details
        return HealOut(
            success=skipped == 0, dry_run=dry, fixed=fixed, skipped=skipped, details=details
        )

    @operation(
        "mem::diagnostic::followup-stats",
        description="How often an agent's search is followed by another within the window "
        "(a sign the first missed)",
        http=rest("GET", "diagnostics/followup", source="none"),
    )
    async def followup(self) -> FollowupOut:
        counts = await followup.read(self.store.client)
        total = counts.agent_initiated
        return FollowupOut(
            success=True,
            window_seconds=followup.window_seconds(),
            agent_initiated_searches=total,
            followup_within_window=counts.followups,
            rate=counts.followups / total if total else 0.0,
            caveat="Directional signal: a search followed within the window by another "
            "search of the same session with a different query and no result in common "
            "suggests the first missed. Counts smart-searches that carry a sessionId and "
            "returned results, viewer searches excluded; kept in KV across restarts.",
        )
