"""One process's lifecycle service: the memory store it works on, its settings, and one
method per operation. Bus functions, cron firings and REST routes all call these."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from engine import Client, FunctionError
from functions.graph.compact import compact
from functions.graph.feed import GraphFeed
from functions.graph.query import GraphQuery
from functions.graph.wire import GraphQueryIn, GraphStatsIn
from functions.lifecycle import clock, lessons
from functions.lifecycle.config import LifecycleConfig
from functions.lifecycle.consolidate import Consolidator
from functions.lifecycle.decay import tier
from functions.lifecycle.digest import Sink, digest
from functions.lifecycle.episodes import summarize_sessions, sweep
from functions.lifecycle.lease import held
from functions.lifecycle.llm import Rewriter
from functions.lifecycle.maintenance import auto_forget, purge_audit, reinforce, run_decay
from functions.lifecycle.profile import ProfileFeed, profile_wire
from functions.lifecycle.wire import (
    AutoForgetIn,
    Clocked,
    ConsolidateIn,
    DecayIn,
    DigestIn,
    LessonRecallIn,
    LessonReinforceIn,
    LessonSaveIn,
    ProjectProfileIn,
    ReinforceIn,
    SummarizeIn,
    SweepIn,
)
from functions.memory.store import MemoryStore
from functions.memory.wire import to_wire
from functions.records import (
    GRAPH_BUCKET,
    LIFECYCLE_BUCKET,
    PROFILES_BUCKET,
    ProjectProfile,
    SessionSummary,
    profile_key,
)


def when(req: Clocked) -> datetime:
    if not req.now:
        return clock.now()
    try:
        datetime.fromisoformat(req.now.replace("Z", "+00:00"))
    except ValueError:
        raise FunctionError(
            "BAD_REQUEST", f"now must be an ISO-8601 date-time, got {req.now[:40]!r}", field="now"
        ) from None
    return clock.parse(req.now)


class LifecycleService:
    def __init__(self, config: LifecycleConfig | None = None) -> None:
        self.config = config or LifecycleConfig.from_env()
        self._store: MemoryStore | None = None
        self._local = asyncio.Lock()

    @property
    def store(self) -> MemoryStore:
        if self._store is None:
            raise FunctionError("UNAVAILABLE", "the lifecycle service is starting", retryable=True)
        return self._store

    async def start(self, client: Client) -> None:
        self._store = await MemoryStore(client).open()
        await client.state(LIFECYCLE_BUCKET)
        await client.state(GRAPH_BUCKET)
        await client.state(PROFILES_BUCKET)

    async def stop(self, client: Client) -> None:
        return None

    async def _exclusive(self, name: str) -> Any:
        life = await self.store.client.state(LIFECYCLE_BUCKET)
        return held(life, name)

    # ---- operations ----------------------------------------------------------------
    async def summarize(self, req: SummarizeIn) -> dict[str, Any]:
        written = await summarize_sessions(
            self.store, {req.session_id}, when(req), cap=self.config.provenance_cap
        )
        summary = written[0] if written else None
        if summary is None:
            summary = await self.store.get(self.store.summaries, req.session_id, SessionSummary)
        if summary is None:
            raise FunctionError(
                "NOT_FOUND", f"no session or observations for {req.session_id}", field="sessionId"
            )
        return {"success": True, "written": bool(written), "summary": to_wire(summary)}

    async def sweep(self, req: SweepIn) -> dict[str, Any]:
        hours = req.stale_hours or self.config.stale_hours
        async with await self._exclusive("sweep"):
            out = await sweep(self.store, when(req), hours, cap=self.config.provenance_cap)
        return {"abandoned": out.abandoned, "summarized": out.summarized}

    async def consolidate(self, req: ConsolidateIn) -> dict[str, Any]:
        rewriter = None
        if self.config.consolidation_llm and self.config.llm.provider:
            life = await self.store.client.state(LIFECYCLE_BUCKET)
            rewriter = Rewriter(self.config.llm, life)
        c = Consolidator(
            self.store,
            min_sessions=self.config.min_sessions,
            cap=self.config.provenance_cap,
            rewriter=rewriter,
        )
        async with self._local, await self._exclusive("consolidate"):
            out = await c.run(when(req))
        return to_wire(out)  # type: ignore[no-any-return]

    async def decay(self, req: DecayIn) -> dict[str, Any]:
        async with await self._exclusive("decay"):
            out = await run_decay(self.store, self.config, when(req))
        return to_wire(out)  # type: ignore[no-any-return]

    async def reinforce(self, req: ReinforceIn) -> dict[str, Any]:
        got = await reinforce(self.store, self.config, req.ids, when(req))
        return {
            "memories": [
                {"id": m.id, "strength": round(m.strength, 4), "tier": tier(m.strength)}
                for m in got
            ]
        }

    async def auto_forget(self, req: AutoForgetIn) -> dict[str, Any]:
        async with await self._exclusive("auto-forget"):
            out = await auto_forget(self.store, self.config, when(req), dry_run=req.dry_run)
        return to_wire(out)  # type: ignore[no-any-return]

    async def audit_retention(self, req: DecayIn) -> dict[str, Any]:
        n = await purge_audit(self.store, self.config.audit_retention_months, when(req))
        return {"purged": n, "keepMonths": self.config.audit_retention_months}

    async def lesson_save(self, req: LessonSaveIn) -> dict[str, Any]:
        lesson = await lessons.save(self.store, req, self.config.decay, when(req))
        return {"success": True, "lesson": to_wire(lesson)}

    async def lesson_recall(self, req: LessonRecallIn) -> dict[str, Any]:
        found = await lessons.recall(self.store, req, self.config.decay, when(req))
        return {"lessons": [{**to_wire(lesson), "score": s} for s, lesson in found]}

    async def lesson_reinforce(self, req: LessonReinforceIn) -> dict[str, Any]:
        lesson = await lessons.reinforce(self.store, req.id, self.config.decay, when(req))
        return {"success": True, "lesson": to_wire(lesson)}

    # ---- knowledge graph and project profiles (fed from MEM_EVENTS) -------------------
    async def _sinks(self) -> list[Sink]:
        c = self.store.client
        graph = GraphFeed(await c.state(GRAPH_BUCKET), cap=self.config.provenance_cap)
        profile = ProfileFeed(await c.state(PROFILES_BUCKET), self.config.profile)
        return [graph, profile]

    async def _digest(self) -> dict[str, int]:
        life = await self.store.client.state(LIFECYCLE_BUCKET)
        return await digest(self.store, life, await self._sinks(), batch=self.config.graph.batch)

    async def digest_events(self, req: DigestIn) -> dict[str, Any]:
        # One lease for the feed and compaction: both rewrite graph records.
        async with await self._exclusive("graph"):
            folded = await self._digest()
        return {"folded": folded}

    async def graph_compact(self, req: DecayIn) -> dict[str, Any]:
        async with await self._exclusive("graph"):
            folded = await self._digest()  # compact what the events say, all of it
            out = await compact(
                await self.store.client.state(GRAPH_BUCKET),
                self.store.js,
                when(req),
                retention_days=self.config.graph.retention_days,
                cap=self.config.provenance_cap,
            )
        return {**to_wire(out), "folded": folded}

    async def _graph(self) -> GraphQuery:
        return GraphQuery(await self.store.client.state(GRAPH_BUCKET), self.store.js)

    async def graph_query(self, req: GraphQueryIn) -> dict[str, Any]:
        return await (await self._graph()).query(req)

    async def graph_stats(self, req: GraphStatsIn) -> dict[str, Any]:
        return await (await self._graph()).stats()

    async def project_profile(self, req: ProjectProfileIn) -> dict[str, Any]:
        if req.refresh:
            try:
                async with await self._exclusive("graph"):
                    await self._digest()
            except FunctionError as err:
                if err.code != "CONFLICT":
                    raise  # a feed already running: serve what is stored
        state = await self.store.client.state(PROFILES_BUCKET)
        p: ProjectProfile | None = await state.get(profile_key(req.project), ProjectProfile)
        if p is None:
            return {"project": req.project, "profile": None, "reason": "no_observations"}
        return {
            "project": req.project,
            "profile": profile_wire(p, self.config.profile),
        }
