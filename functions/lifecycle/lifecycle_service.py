"""One process's lifecycle service: the memory store it works on, its settings, and one
method per operation, each declared once on its method (bus function, REST route, MCP
tool); cron firings call the same functions (see register.py)."""

from __future__ import annotations

import asyncio
import contextlib
from contextlib import AbstractAsyncContextManager
from datetime import datetime

import msgspec

from engine import Client, FunctionError, Tool, operation
from functions.graph.compact import GraphCompactIn, GraphCompactOut, compact
from functions.graph.feed import GraphFeed
from functions.graph.query import GraphQuery
from functions.graph.wire import GraphQueryIn, GraphStatsIn
from functions.kernel import clock
from functions.kernel.clock import when
from functions.kernel.digest import Sink, digest
from functions.kernel.models import clients
from functions.kernel.models.client import ModelClient
from functions.kernel.owned import routes, started
from functions.kernel.records import (
    GRAPH_BUCKET,
    LIFECYCLE_BUCKET,
    PROFILES_BUCKET,
    ProjectProfile,
    SessionSummary,
    profile_key,
)
from functions.kernel.store import MemoryStore
from functions.kernel.views import SummaryView, as_view
from functions.lifecycle import evict as eviction
from functions.lifecycle.consolidate import ConsolidateOut, Consolidator
from functions.lifecycle.consolidation_status import (
    ConsolidationStatusOut,
    consolidation_status,
    record_run,
)
from functions.lifecycle.decay import tier
from functions.lifecycle.episodes import summarize_sessions, sweep
from functions.lifecycle.evict import EvictOut
from functions.lifecycle.extraction_model import Extractor
from functions.lifecycle.job_lock import held
from functions.lifecycle.maintenance import (
    AutoForgetOut,
    DecayOut,
    ScheduledOut,
    auto_forget,
    purge_audit,
    reinforce,
    run_decay,
)
from functions.lifecycle.profile import ProfileFeed, profile_wire
from functions.lifecycle.settings import LifecycleConfig
from functions.lifecycle.wire import (
    AutoForgetIn,
    ConsolidateIn,
    DecayIn,
    DigestIn,
    DigestOut,
    GraphQueryOut,
    GraphStatsOut,
    ProfileOut,
    ProjectProfileIn,
    Reinforced,
    ReinforceIn,
    ReinforceOut,
    RetentionOut,
    SummarizeIn,
    SummarizeOut,
    SweepIn,
    SweepOut,
)
from functions.lifecycle.wording import Rewriter
from functions.quarantine.decisions import Decisions

LONG = 900.0
"""Seconds a sweep over a large store may take (consolidation of 100k observations)."""


rest = routes("lifecycle")


class LifecycleService:
    def __init__(self, config: LifecycleConfig | None = None) -> None:
        self.config = config or LifecycleConfig.from_env()
        self._store: MemoryStore | None = None
        self._local = asyncio.Lock()
        self._draining = False

    @property
    def store(self) -> MemoryStore:
        return started(self._store, "the lifecycle service")

    async def start(self, client: Client) -> None:
        self._store = await MemoryStore(client).open()
        await client.bucket(LIFECYCLE_BUCKET)
        await client.bucket(GRAPH_BUCKET)
        await client.bucket(PROFILES_BUCKET)

    async def drain(self, client: Client) -> None:
        """The worker is stopping: a digest run ends after the batch it is folding, a sweep
        in its scan of the observations."""
        self._draining = True

    def draining(self) -> bool:
        return self._draining

    async def stop(self, client: Client) -> None:
        if self._store is not None:
            with contextlib.suppress(Exception):
                await self._store.close()

    async def exclusive(self, name: str) -> AbstractAsyncContextManager[None]:
        life = await self.store.client.bucket(LIFECYCLE_BUCKET)
        return held(life, name)

    def model(self) -> ModelClient:
        """The model client for this service's settings (keyless when none is configured)."""
        return clients.client(self.store.client, self.config.llm.model_settings())

    # ---- operations ----------------------------------------------------------------
    @operation(
        "mem::summarize",
        description="Write a session's summary",
        timeout=LONG,
        http=rest("POST", "summarize"),
    )
    async def summarize(self, req: SummarizeIn) -> SummarizeOut:
        reads: dict[str, int] = {}
        written = await summarize_sessions(
            self.store,
            {req.session_id},
            when(req),
            cap=self.config.provenance_cap,
            model=self.model(),
            stop=self.draining,
            force=req.force,
            reads=reads,
        )
        summary = written[0] if written else None
        if summary is None and self.draining():
            raise FunctionError("UNAVAILABLE", "the lifecycle worker is stopping: call again")
        if summary is None:
            summary = await self.store.get(self.store.summaries, req.session_id, SessionSummary)
        if summary is None:
            raise FunctionError(
                "NOT_FOUND", f"no session or observations for {req.session_id}", field="sessionId"
            )
        return SummarizeOut(
            success=True,
            written=bool(written),
            summary=as_view(summary, SummaryView),
            read=reads.get(req.session_id, 0),
        )

    @operation(
        "mem::sweep",
        description="Abandon stale sessions and summarize them",
        timeout=LONG,
    )
    async def sweep(self, req: SweepIn) -> SweepOut:
        hours = req.stale_hours or self.config.stale_hours
        async with await self.exclusive("sweep"):
            out = await sweep(
                self.store, when(req), hours, cap=self.config.provenance_cap,
                model=self.model(), stop=self.draining,
            )  # fmt: skip
        return SweepOut(abandoned=out.abandoned, summarized=out.summarized)

    @operation(
        "mem::consolidate",
        description="Run the 4-tier memory consolidation pipeline (working -> episodic -> "
        "semantic -> procedural).",
        timeout=LONG,
        http=rest("POST", "consolidate"),
        tool=Tool("memory_consolidate", tier="core"),
    )
    async def consolidate(self, req: ConsolidateIn) -> ConsolidateOut:
        rewriter = extractor = None
        if self.config.consolidation_llm and self.config.llm.enabled:
            life = await self.store.client.bucket(LIFECYCLE_BUCKET)
            calls, cap = self.config.llm.max_calls, self.config.provenance_cap
            rewriter = Rewriter(self.model(), life, calls)
            extractor = Extractor(self.model(), life, calls, cap)
        c = Consolidator(
            self.store,
            min_sessions=self.config.min_sessions,
            cap=self.config.provenance_cap,
            rewriter=rewriter,
            model=self.model(),
            extractor=extractor,
        )
        life = await self.store.client.bucket(LIFECYCLE_BUCKET)
        async with self._local, await self.exclusive("consolidate"):
            try:
                out = await c.run(when(req))
            except Exception as exc:
                await record_run(life, clock.iso(clock.now()), None, f"{type(exc).__name__}: {exc}")
                raise
            await record_run(life, clock.iso(clock.now()), out)
            return out

    @operation(
        "mem::consolidation-status",
        description="Consolidation: its last run, schedule, thresholds and each tier's state",
        http=rest("GET", "consolidation/status", source="none"),
    )
    async def consolidation_status(self) -> ConsolidationStatusOut:
        life = await self.store.client.bucket(LIFECYCLE_BUCKET)
        return await consolidation_status(self.store, life, self.config)

    @operation(
        "mem::consolidate-pipeline",
        description="The consolidation pipeline (upstream's route; `tier` accepted)",
        timeout=LONG,
        http=rest("POST", "consolidate-pipeline"),
    )
    async def consolidate_pipeline(self, req: ConsolidateIn) -> ConsolidateOut:
        return await self.consolidate(req)

    @operation("mem::decay", description="Fold time into memory strength", timeout=LONG)
    async def decay(self, req: DecayIn) -> DecayOut:
        async with await self.exclusive("decay"):
            return await run_decay(self.store, self.config, when(req))

    @operation(
        "mem::reinforce",
        description="Reinforce accessed memories",
        http=rest("POST", "reinforce"),
    )
    async def reinforce(self, req: ReinforceIn) -> ReinforceOut:
        got = await reinforce(self.store, self.config, req.ids, when(req))
        return ReinforceOut(
            memories=[
                Reinforced(id=m.id, strength=round(m.strength, 4), tier=tier(m.strength))
                for m in got
            ]
        )

    @operation(
        "mem::auto-forget",
        description="TTL, contradiction, fading and low-value removal (dryRun previews)",
        timeout=LONG,
        http=rest("POST", "auto-forget"),
    )
    async def auto_forget(self, req: AutoForgetIn) -> AutoForgetOut:
        async with await self.exclusive("auto-forget"):
            return await auto_forget(self.store, self.config, when(req), dry_run=req.dry_run)

    @operation(
        "mem::auto-forget-scheduled",
        description="auto-forget on its schedule (AUTO_FORGET_INTERVAL_MS); does nothing "
        "while AUTO_FORGET_ENABLED=false",
        timeout=LONG,
    )
    async def auto_forget_scheduled(self, req: DecayIn) -> ScheduledOut:
        at = clock.iso(when(req))
        life = await self.store.client.bucket(LIFECYCLE_BUCKET)
        if not self.config.forget.scheduled:
            out = ScheduledOut(ran=False, at=at, reason="AUTO_FORGET_ENABLED=false")
        else:
            done = await self.auto_forget(AutoForgetIn(now=req.now))
            out = ScheduledOut(ran=True, at=at, removed=done.removed)
        await life.put("auto-forget.scheduled", out)  # the last scheduled run, for status
        return out

    @operation(
        "mem::evict",
        description="Evict what memory no longer needs: auto-forget's expired, fading, "
        "superseded and low-value records, stale sessions without a summary (recovered, "
        "then dropped) and observations past the per-project cap, lowest importance first "
        "(dryRun previews)",
        timeout=LONG,
        http=rest("POST", "evict"),
    )
    async def evict(self, req: AutoForgetIn) -> EvictOut:
        now, dry = when(req), req.dry_run
        cfg = await eviction.load_config(self.store)

        async def recover(ids: set[str]) -> list[SessionSummary]:
            return await summarize_sessions(
                self.store, ids, now, cap=self.config.provenance_cap, model=self.model(),
                stop=self.draining,
            )  # fmt: skip

        async with await self.exclusive("auto-forget"):
            stale = await eviction.stale_sessions(self.store, cfg, now, recover, dry)
            forgot = await auto_forget(
                self.store, self.config, now, dry_run=dry, stop=self.draining
            )
            capped = await eviction.project_cap(self.store, cfg, dry)
        return eviction.reply(forgot, stale, capped, dry)

    @operation("mem::audit-retention", description="Drop audit months past retention", timeout=LONG)
    async def audit_retention(self, req: DecayIn) -> RetentionOut:
        n = await purge_audit(self.store, self.config.audit_retention_months, when(req))
        return RetentionOut(purged=n, keep_months=self.config.audit_retention_months)

    # ---- knowledge graph and project profiles (fed from MEM_EVENTS) -------------------
    async def _sinks(self) -> list[Sink]:
        c = self.store.client
        graph = GraphFeed(await c.bucket(GRAPH_BUCKET), cap=self.config.provenance_cap)
        profile = ProfileFeed(await c.bucket(PROFILES_BUCKET), self.config.profile)
        return [graph, profile]

    async def _digest(self) -> dict[str, int]:
        life = await self.store.client.bucket(LIFECYCLE_BUCKET)
        sinks = await self._sinks()
        return await digest(
            self.store, life, sinks, batch=self.config.graph.batch, stop=self.draining
        )

    @operation(
        "mem::digest-events",
        description="Fold new MEM_EVENTS into the knowledge graph and project profiles",
        timeout=LONG,
    )
    async def digest_events(self, req: DigestIn) -> DigestOut:
        return DigestOut(folded=await self.fold_events())

    async def fold_events(self) -> dict[str, int]:
        """Fold the events not yet seen into the graph and the profiles, now."""
        # One lease for the feed and compaction: both rewrite graph records.
        async with await self.exclusive("graph"):
            return await self._digest()

    @operation(
        "mem::graph-compact",
        description="Drop expired edges, idle nodes and forgotten provenance from the graph",
        timeout=LONG,
        http=rest("POST", "graph/compact"),
    )
    async def graph_compact(self, req: GraphCompactIn) -> GraphCompactOut:
        return await self.compact_graph(when(req))

    async def compact_graph(self, now: datetime) -> GraphCompactOut:
        """Fold what the events say, all of it, then compact the graph as of `now`."""
        async with await self.exclusive("graph"):
            folded = await self._digest()
            out = await compact(
                await self.store.client.bucket(GRAPH_BUCKET),
                now,
                retention_days=self.config.graph.retention_days,
                cap=self.config.provenance_cap,
            )
        return GraphCompactOut(folded=folded, **msgspec.structs.asdict(out))

    async def graph_reader(self) -> GraphQuery:
        """A query over the graph that leaves out what only held records support."""
        client = self.store.client
        held = (await Decisions.load(client)).held_ids()
        return GraphQuery(await client.bucket(GRAPH_BUCKET), held=held)

    @operation(
        "mem::graph-query",
        description="Knowledge graph of files, symbols, packages, errors, commands and "
        "concepts: nodes whose name contains `query`, a walk from `startNodeId`, or the "
        "best connected nodes.",
        http=rest("POST", "graph/query"),
        tool=Tool("memory_graph_query"),
    )
    async def graph_query(self, req: GraphQueryIn) -> GraphQueryOut:
        return msgspec.convert(await (await self.graph_reader()).query(req), GraphQueryOut)

    @operation(
        "mem::graph-stats",
        description="Knowledge graph counts by node and edge type",
        http=rest("GET", "graph/stats"),
    )
    async def graph_stats(self, req: GraphStatsIn) -> GraphStatsOut:
        return msgspec.convert(await (await self.graph_reader()).stats(), GraphStatsOut)

    @operation(
        "mem::project-profile",
        description="A project's profile: top concepts, files, commands, errors, conventions",
        timeout=120.0,
    )
    async def project_profile(self, req: ProjectProfileIn) -> ProfileOut:
        if req.refresh:
            try:
                async with await self.exclusive("graph"):
                    await self._digest()
            except FunctionError as err:
                if err.code != "CONFLICT":
                    raise  # a feed already running: serve what is stored
        state = await self.store.client.bucket(PROFILES_BUCKET)
        p: ProjectProfile | None = await state.get(profile_key(req.project), ProjectProfile)
        if p is None:
            return ProfileOut(project=req.project, profile=None, reason="no_observations")
        return ProfileOut(project=req.project, profile=profile_wire(p, self.config.profile))
