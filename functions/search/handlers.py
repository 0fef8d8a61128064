"""The search operations, each declared once: bus function (`mem::search` …), REST route
(`POST /agentmemory/search` …) and MCP tool, plus the index's lifecycle hooks."""

from __future__ import annotations

import msgspec

from engine import Context, Http, NoArgs, Tool, Worker
from functions.owned import routes
from functions.search.embed_queue import QUEUE, EmbedIn, EmbedOut, embed_call
from functions.search.feeder import IndexHolder
from functions.search.service import IndexAudit, SearchService, audit_index
from functions.search.wire import (
    ContextIn,
    ContextOut,
    EnrichOut,
    EnrichRequest,
    ProfileIn,
    ProfileOut,
    SearchIn,
    SearchOut,
    SearchStatusOut,
    SmartSearchOut,
    SmartSearchRequest,
    TimelineIn,
    TimelineOut,
)

AGENT = {"x-agent-id": "agentId"}


rest = routes("search", headers=AGENT)


def register(worker: Worker, holder: IndexHolder | None = None) -> SearchService:
    """Add the search functions to `worker`; the index starts and stops with it."""
    svc = SearchService(holder or IndexHolder())
    worker.on_start(svc.start)
    worker.on_stop(svc.stop)

    @worker.function(
        "mem::search",
        description="Search past session observations for relevant context (BM25 + vectors "
        "+ graph); full records.",
        http=rest("POST", "search"),
        tool=Tool("memory_recall", tier="core,basic"),
    )
    async def search(req: SearchIn, ctx: Context) -> SearchOut:
        return await svc.search(req)

    @worker.function(
        "mem::smart-search",
        description="Hybrid semantic+keyword search with progressive disclosure: compact "
        "hits; expandIds for full records.",
        http=rest("POST", "smart-search"),
        tool=Tool("memory_smart_search", tier="core,basic"),
    )
    async def smart(req: SmartSearchRequest, ctx: Context) -> SmartSearchOut:
        return await svc.smart_search(req)

    @worker.function(
        "mem::context",
        description="Token-budgeted context for a session",
        http=rest("POST", "context"),
    )
    async def context(req: ContextIn, ctx: Context) -> ContextOut:
        return await svc.context(req)

    @worker.function(
        "mem::enrich",
        description="What memory knows about these files and terms",
        http=rest("POST", "enrich"),
    )
    async def enrich(req: EnrichRequest, ctx: Context) -> EnrichOut:
        return await svc.enrich(req)

    @worker.function(
        "mem::file-context",
        description="Get past observations about specific files (sessionId: the current "
        "session, left out).",
        http=rest("POST", "file-context"),
        tool=Tool("memory_file_history", tier="basic"),
    )
    async def file_context(req: EnrichRequest, ctx: Context) -> EnrichOut:
        return await svc.enrich(req, exclude_session=True)

    @worker.function(
        "mem::timeline",
        description="Chronological observations around an anchor (an ISO date or a keyword; "
        "before/after = how many records either side), or within a time window (before/after "
        "= ISO times).",
        http=rest("POST", "timeline"),
        tool=Tool("memory_timeline", tier="basic"),
    )
    async def timeline(req: TimelineIn, ctx: Context) -> TimelineOut:
        return await svc.timeline(req)

    @worker.function(
        "mem::profile",
        description="A project's profile: activity, top files and concepts, conventions.",
        http=rest("GET", "profile"),
        tool=Tool("memory_profile", tier="basic"),
    )
    async def profile(req: ProfileIn, ctx: Context) -> ProfileOut:
        return await svc.profile(req)

    @worker.function(
        "mem::search-status",
        description="Index size, lag, snapshot age",
        http=Http("GET", "/agentmemory/search/status", source="none", tags=["search"]),
    )
    async def status(req: NoArgs, ctx: Context) -> SearchStatusOut:
        return msgspec.convert(svc.holder.status(), SearchStatusOut)

    @worker.function(
        "mem::index-audit",
        description="The index against KV: orphan entries and unindexed records (samples)",
        timeout=120,
    )
    async def index_audit(req: NoArgs, ctx: Context) -> IndexAudit:
        return await audit_index(ctx.client, svc.holder)

    if svc.holder.queue is not None and svc.holder.embedder is not None:
        embedder = svc.holder.embedder

        async def embed(req: EmbedIn, ctx: Context) -> EmbedOut:
            return await embed_call(embedder, req, ctx)

        worker.function("mem::embed", description="embed a batch into mem_embeddings", timeout=300)(
            embed
        )
        worker.trigger(
            "queue", "mem::embed", queue=QUEUE, concurrency=2, timeout=300, max_attempts=8
        )
    return svc
