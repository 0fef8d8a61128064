"""`GET status` in upstream's shape (0.9.30 `StatusReport`, src/functions/status.ts): the
worst problem's level, a headline, and what each part of the service says, each probe
within a budget (a probe that does not answer is null, not an error). Our own checks
(`checks`, functions/memory/status.py) ride along; each failing one is also a problem.

Upstream's `index.vectorBackfillState` says why embeddings wait (0.9.34 #1820); here the
backfill is the search index's embedding queue, and `vectorBackfillReason` says why it is
not running, in words a user can act on."""

from __future__ import annotations

import asyncio
import html
import logging
import resource
import time
from collections.abc import Awaitable
from typing import Any, Literal, TypeVar

import msgspec

from engine import FunctionError
from engine.paths import Instance, current_layout
from functions.kernel.clock import now_iso
from functions.kernel.models.settings import ModelSettings
from functions.kernel.models.usage import UsageOut
from functions.kernel.store import MemoryStore
from functions.kernel.trust.counts import TrustCounts
from functions.memory import capture, metrics
from functions.memory.inbox import Inbox
from functions.memory.status import VERSION, checks, model_checks, trust_check, viewer_configured
from functions.memory.wire import Check

Level = Literal["info", "warn", "error"]
PROBE_SECONDS = 5.0
ENGINE_VERSION = "nats-jetstream"
log = logging.getLogger("functions.memory.status_report")
T = TypeVar("T")


class Problem(msgspec.Struct, kw_only=True, omit_defaults=True):
    level: Level
    code: str
    message: str
    fix: str = ""


class StateStore(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    ok: bool
    latency_ms: float | None = None


class Ports(msgspec.Struct, kw_only=True):
    rest: int | None
    streams: int | None
    viewer: int | None


class ServiceInfo(msgspec.Struct, rename="camel", kw_only=True):
    version: str
    engine_version: str
    uptime_seconds: int
    state_backend: str
    """`jetstream` here (upstream: file or redis)."""
    state_store: StateStore | None
    ports: Ports


class ProcessMemory(msgspec.Struct, rename="camel", kw_only=True):
    rss: int
    """Peak resident set of this process, bytes."""


class HealthPart(msgspec.Struct, rename="camel", kw_only=True):
    status: str
    alerts: list[str]
    notes: list[str]
    connection_state: str
    memory: ProcessMemory


class Breaker(msgspec.Struct, kw_only=True, omit_defaults=True):
    state: str
    failures: int = 0


class ProviderPart(msgspec.Struct, rename="camel", kw_only=True):
    llm: str
    """The primary model provider, or noop when none is configured."""
    embeddings: str
    circuit_breaker: Breaker | None
    off_without_llm: list[str]
    usage: UsageOut | None


class IndexPart(msgspec.Struct, rename="camel", kw_only=True):
    bm25_documents: int
    vector_documents: int | None
    observations_indexed: int
    missing_observations: int | None = None
    """Not counted here: `POST diagnostics` compares the index with the store."""
    sessions: int | None = None
    bm25_incomplete: bool = False
    pending_vector_backfill: int
    vector_backfill_state: str
    """running, idle, paused or waiting-for-opt-in."""
    vector_backfill_reason: str = ""
    """Why the backfill is not running (empty while it runs or has nothing to do)."""
    lag: int = 0
    """Events of MEM_EVENTS the index has not applied yet."""
    breakdown: dict[str, int] | None = None


class GraphPart(msgspec.Struct, rename="camel", kw_only=True):
    total_nodes: int
    total_edges: int
    updated_at: str | None
    age_seconds: int | None = None
    extraction_enabled: bool = True
    """The graph is built from every observation here, with or without a model."""


class StatusOut(msgspec.Struct, rename="camel", kw_only=True):
    status: Literal["ok", "info", "warn", "error"]
    headline: str
    checked_at: str
    service: ServiceInfo
    health: HealthPart | None
    provider: ProviderPart
    index: IndexPart | None
    index_persistence: dict[str, Any] | None = None
    graph: GraphPart | None
    graph_compaction: dict[str, Any] | None = None
    capture: capture.CaptureStatus | None
    observe_dedup: dict[str, Any] | None = None
    """Upstream skips repeats within a window; here a repeat is a duplicate by its key."""
    functions: list[metrics.FunctionMetric]
    flags: list[dict[str, Any]]
    problems: list[Problem]
    boot_id: str
    agent_scope: str
    checks: list[Check]
    """Our checks, each with how to fix it (the HTML page's table)."""
    models: UsageOut | None = None
    trust: TrustCounts | None = None
    """Records the write paths checked for poisoning and held, by reason and by source,
    summed over the processes that wrote them (functions/kernel/trust); None when the
    counts could not be read."""


async def within(work: Awaitable[T]) -> T | None:
    """`work`'s answer, or None when it does not come within the probe's budget or fails:
    a part that cannot be read is null, and the report still answers (on a full disk,
    JetStream refuses to create a bucket a part opens: the report must say the disk is
    full, not fail)."""
    try:
        return await asyncio.wait_for(work, PROBE_SECONDS)
    except (TimeoutError, FunctionError, OSError, msgspec.ValidationError):
        return None
    except Exception:  # a part's failure is the report's null, never its 500
        log.warning("status: a part could not be read", exc_info=True)
        return None


_CODES: dict[str, tuple[Level, str]] = {
    "events": ("error", "state-store-unreachable"),
    "disk": ("error", "disk-full"),
    "inbox": ("warn", "capture-inbox-backlog"),
    "dead_letters": ("warn", "capture-dead-letters"),
    "retrieval": ("warn", "index-check-unavailable"),
}


def _problem(c: Check) -> Problem:
    if c.name.startswith("model:"):
        return Problem(level="warn", code="provider-circuit-open", message=c.detail, fix=c.fix)
    level, code = _CODES.get(c.name, ("warn", c.name))
    return Problem(level=level, code=code, message=c.detail, fix=c.fix)


async def _probe_store(store: MemoryStore) -> StateStore:
    started = time.perf_counter()
    try:
        await asyncio.wait_for(store.events.info(), PROBE_SECONDS)
    except Exception:
        return StateStore(ok=False)
    return StateStore(ok=True, latency_ms=round((time.perf_counter() - started) * 1000, 2))


def _backfill(doc: dict[str, Any], embedder: str) -> tuple[str, str]:
    pending = int(doc.get("pendingEmbeddings") or 0)
    if embedder in ("", "none"):
        return (
            "waiting-for-opt-in",
            "no embedding provider: set EMBEDDING_PROVIDER=local or openai to add vectors",
        )
    if not pending:
        return "idle", ""
    return "running", ""


async def _index(
    store: MemoryStore, fn: list[metrics.FunctionMetric]
) -> tuple[IndexPart | None, str]:
    """The search index's part, and its embedder (`unknown` when search does not answer)."""
    doc = await within(store.client.call("mem::search-status", {}, timeout=PROBE_SECONDS))
    if not isinstance(doc, dict):
        return None, "unknown"
    embedder = str(doc.get("embedder") or "none")
    state, reason = _backfill(doc, embedder)
    embed = next((f for f in fn if f.function_id == "mem::embed"), None)
    if state == "running" and embed is not None and embed.failure_count:
        last = await within(_last_error(store, "mem::embed"))
        state, reason = (
            "paused",
            (
                f"the embedding provider is failing ({last or 'see mem::embed'}); the queue "
                "retries each batch and resumes by itself once it answers"
            ),
        )
    part = IndexPart(
        bm25_documents=int(doc.get("documents") or 0),
        vector_documents=int(doc.get("vectors") or 0) if embedder != "none" else None,
        observations_indexed=int(doc.get("documents") or 0),
        pending_vector_backfill=int(doc.get("pendingEmbeddings") or 0),
        vector_backfill_state=state,
        vector_backfill_reason=reason,
        lag=int(doc.get("lag") or 0),
    )
    return part, embedder


async def _last_error(store: MemoryStore, function_id: str) -> str:
    from engine import service_infos

    for info in await service_infos(store.client, verb="STATS"):
        for ep in (info or {}).get("endpoints") or []:
            data = (ep or {}).get("data") or {}
            if isinstance(data, dict) and data.get("function_id") == function_id:
                if data.get("last_error"):
                    return str(data["last_error"])[:300]
    return ""


async def _graph(store: MemoryStore) -> GraphPart | None:
    doc = await within(store.client.call("mem::graph-stats", {}, timeout=PROBE_SECONDS))
    if not isinstance(doc, dict):
        return None
    return GraphPart(
        total_nodes=int(doc.get("totalNodes") or 0),
        total_edges=int(doc.get("totalEdges") or 0),
        updated_at=str(doc.get("compactedAt") or "") or None,
    )


async def _flags(store: MemoryStore) -> list[dict[str, Any]]:
    doc = await within(store.client.call("mem::config-flags", {}, timeout=PROBE_SECONDS))
    got = doc.get("flags") if isinstance(doc, dict) else None
    return [f for f in got or [] if isinstance(f, dict)]


def _ports() -> Ports:
    ports = Instance.resolve().ports
    lay = current_layout()

    def port(name: str) -> int | None:
        return lay.given_port(name) or (ports[name] if name in ports else None)

    return Ports(
        rest=port("rest"),
        streams=port("streams"),
        viewer=port("viewer") if viewer_configured() else None,
    )


def _worst(problems: list[Problem]) -> Literal["ok", "info", "warn", "error"]:
    levels = {p.level for p in problems}
    if "error" in levels:
        return "error"
    if "warn" in levels:
        return "warn"
    return "info" if "info" in levels else "ok"


async def report(store: MemoryStore, inbox: Inbox) -> StatusOut:
    settings = ModelSettings.from_env()
    fn = await within(metrics.function_metrics(store.client, model_configured=settings.enabled))
    fn = fn or []
    (cs, (mc, usage), (tc, held)), state, (index, embedder), graph, flags = await asyncio.gather(
        asyncio.gather(checks(store, inbox), model_checks(store), trust_check(store)),
        _probe_store(store),
        _index(store, fn),
        _graph(store),
        _flags(store),
    )
    all_checks = [*cs, *mc, tc]
    problems = [_problem(c) for c in all_checks if not c.ok]
    if not settings.enabled:
        problems.append(
            Problem(
                level="info",
                code="no-llm-provider",
                message="no model provider: compression, summaries and consolidation are "
                "keyless (deterministic text)",
                fix="set ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY, OPENROUTER_API_KEY "
                "or MINIMAX_API_KEY to add one",
            )
        )
    if index is not None and index.vector_backfill_state == "paused":
        problems.append(
            Problem(
                level="warn",
                code="index-vector-backfill-paused",
                message=f"{index.pending_vector_backfill} records wait for vectors: "
                + index.vector_backfill_reason,
            )
        )
    for f in fn:
        if f.total_calls >= 5 and f.failure_rate >= 0.5:
            problems.append(
                Problem(
                    level="warn",
                    code="function-failing",
                    message=f"{f.function_id} failed {f.failure_count} of {f.total_calls} calls",
                )
            )
    worst = _worst(problems)
    headline = (
        "agentmemory is healthy"
        if worst in ("ok", "info")
        else next(p.message for p in problems if p.level == worst)
    )
    opened = [
        k for p in (usage.providers if usage else []) for k, v in p.breakers.items() if v == "open"
    ]
    return StatusOut(
        status=worst,
        headline=headline,
        checked_at=now_iso(),
        service=ServiceInfo(
            version=VERSION,
            engine_version=ENGINE_VERSION,
            uptime_seconds=int(time.time() - store.started),
            state_backend="jetstream",
            state_store=state,
            ports=_ports(),
        ),
        health=HealthPart(
            status="healthy" if worst in ("ok", "info") else "degraded",
            alerts=[p.message for p in problems if p.level != "info"],
            notes=[p.message for p in problems if p.level == "info"],
            connection_state="connected" if state.ok else "disconnected",
            memory=ProcessMemory(rss=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024),
        ),
        provider=ProviderPart(
            llm=settings.primary if settings.enabled else "noop",
            embeddings=embedder,
            circuit_breaker=Breaker(state="open", failures=len(opened)) if opened else None,
            off_without_llm=[f.function_id for f in fn if f.off_without_llm],
            usage=usage,
        ),
        index=index,
        graph=graph,
        capture=capture.status(inbox),
        functions=fn,
        flags=flags,
        problems=problems,
        boot_id=store.boot_id,
        agent_scope="isolated" if store.isolated else "shared",
        checks=all_checks,
        models=usage,
        trust=held,
    )


def status_html(doc: StatusOut) -> str:
    rows = "".join(
        f"<tr><td>{'✅' if c.ok else '❌'}</td><td>{html.escape(c.name)}</td>"
        f"<td>{html.escape(c.detail)}</td><td>{html.escape(c.fix)}</td></tr>"
        for c in doc.checks
    )
    problems = "".join(
        f"<li><b>{html.escape(p.level)}</b> {html.escape(p.code)}: {html.escape(p.message)}"
        + (f" <i>{html.escape(p.fix)}</i>" if p.fix else "")
        + "</li>"
        for p in doc.problems
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>agentmemory status</title>"
        "<style>body{font:14px system-ui;margin:2em}td{padding:4px 10px;"
        "border-bottom:1px solid #ddd}</style></head><body>"
        f"<h1>agentmemory: {html.escape(doc.status)}</h1>"
        f"<p>{html.escape(doc.headline)}</p>"
        f"<p>boot {html.escape(doc.boot_id)}, up {doc.service.uptime_seconds} s, "
        f"agent scope {html.escape(doc.agent_scope)}</p>"
        + (f"<ul>{problems}</ul>" if problems else "")
        + f"<table><tr><th></th><th>check</th><th>detail</th><th>how to fix</th></tr>{rows}"
        "</table></body></html>"
    )
