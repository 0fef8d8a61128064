"""Registration: the search functions on the bus (`mem::search` …) and their REST routes
(`POST /agentmemory/search` …) through http triggers, plus the index's lifecycle hooks."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from engine import Context, FunctionError, HttpRequest, HttpResponse, Worker, invalid_request
from functions.search.embed_queue import QUEUE, EmbedIn, EmbedOut, embed_call
from functions.search.feeder import IndexHolder
from functions.search.service import SearchService
from functions.search.wire import (
    ContextIn,
    ContextOut,
    EnrichIn,
    EnrichOut,
    ProfileIn,
    ProfileOut,
    SearchIn,
    SearchOut,
    SmartSearchIn,
    SmartSearchOut,
    TimelineIn,
    TimelineOut,
)

PREFIX = "/agentmemory"


class StatusIn(msgspec.Struct):
    pass


def register(worker: Worker, holder: IndexHolder | None = None) -> SearchService:
    """Add the search functions to `worker`; the index starts and stops with it."""
    svc = SearchService(holder or IndexHolder())
    worker.on_start(svc.start)
    worker.on_stop(svc.stop)

    async def search(req: SearchIn, ctx: Context) -> SearchOut:
        return await svc.search(req)

    async def smart(req: SmartSearchIn, ctx: Context) -> SmartSearchOut:
        return await svc.smart_search(req)

    async def context(req: ContextIn, ctx: Context) -> ContextOut:
        return await svc.context(req)

    async def enrich(req: EnrichIn, ctx: Context) -> EnrichOut:
        return await svc.enrich(req)

    async def timeline(req: TimelineIn, ctx: Context) -> TimelineOut:
        return await svc.timeline(req)

    async def profile(req: ProfileIn, ctx: Context) -> ProfileOut:
        return await svc.profile(req)

    async def status(req: StatusIn | None, ctx: Context) -> dict[str, Any]:
        return svc.holder.status()

    ops: list[tuple[str, Callable[[Any, Context], Awaitable[Any]], Any, str, str, str]] = [
        ("search", search, SearchIn, "POST", "/search", "BM25 + vector + graph search, full records"),
        ("smart-search", smart, SmartSearchIn, "POST", "/smart-search", "compact results; expandIds for full records"),
        ("context", context, ContextIn, "POST", "/context", "token-budgeted context for a session"),
        ("enrich", enrich, EnrichIn, "POST", "/enrich", "what memory knows about these files and terms"),
        ("file-context", enrich, EnrichIn, "POST", "/file-context", "alias of enrich"),
        ("timeline", timeline, TimelineIn, "POST", "/timeline", "records in time order"),
        ("profile", profile, ProfileIn, "GET", "/profile", "project profile: activity, files, concepts"),
        ("search-status", status, StatusIn | None, "GET", "/search/status", "index size, lag, snapshot age"),
    ]  # fmt: skip
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
    for name, fn, req_t, method, path, summary in ops:
        worker.function(f"mem::{name}", description=summary, request=req_t)(fn)
        _rest(worker, name, fn, req_t, method, PREFIX + path, summary)
    return svc


def _rest(
    worker: Worker,
    name: str,
    fn: Callable[[Any, Context], Awaitable[Any]],
    req_t: Any,
    method: str,
    path: str,
    summary: str,
) -> None:
    fid = f"mem::rest::{name}"

    async def handler(req: HttpRequest, ctx: Context) -> HttpResponse:
        try:
            if method == "GET":
                payload = msgspec.convert(req.query, req_t, strict=False)
            else:
                payload = req.json(req_t)
        except msgspec.ValidationError as exc:
            raise invalid_request(exc) from None
        except msgspec.DecodeError as exc:
            raise FunctionError(
                "BAD_REQUEST", f"body is not valid JSON: {exc}", field="body"
            ) from None
        if agent := req.headers.get("x-agent-id"):
            if hasattr(payload, "agent_id") and not payload.agent_id:
                payload.agent_id = agent
        return HttpResponse(status=200, body=await fn(payload, ctx))

    worker.function(fid, description=summary, request=HttpRequest, response=HttpResponse)(handler)
    config: dict[str, Any] = {
        "method": method,
        "path": path,
        "summary": summary,
        "tags": ["search"],
    }
    worker.trigger("http", fid, **config)
