"""Registration: each lifecycle operation as a bus function, its cron schedule, and its
REST route (`mem::rest::<name>`, HttpRequest in, HttpResponse out)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from engine import Context, HttpRequest, HttpResponse, Worker
from functions.graph.wire import GraphQueryIn, GraphStatsIn
from functions.lifecycle.config import LifecycleConfig
from functions.lifecycle.service import LifecycleService
from functions.lifecycle.wire import (
    AutoForgetIn,
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
from functions.memory.register import Op as RestOp
from functions.memory.register import decode_rest

Call = Callable[[LifecycleService, Any], Awaitable[Any]]
LONG = 900.0
"""Seconds a sweep over a large store may take (consolidation of 100k observations)."""


@dataclass(frozen=True)
class Op:
    id: str
    request: Any
    call: Call
    summary: str
    timeout: float = 60.0
    route: tuple[str, str] | None = None
    """(method, path under /agentmemory/)"""
    source: str = "body"
    status: int = 200


def ops() -> list[Op]:
    return [
        Op("mem::summarize", SummarizeIn, lambda s, r: s.summarize(r), "Write a session's summary", LONG, ("POST", "summarize")),
        Op("mem::sweep", SweepIn, lambda s, r: s.sweep(r), "Abandon stale sessions and summarize them", LONG),
        Op("mem::consolidate", ConsolidateIn, lambda s, r: s.consolidate(r), "Consolidate observations into episodic, semantic and procedural memory", LONG, ("POST", "consolidate")),
        Op("mem::decay", DecayIn, lambda s, r: s.decay(r), "Fold time into memory strength", LONG),
        Op("mem::reinforce", ReinforceIn, lambda s, r: s.reinforce(r), "Reinforce accessed memories", 30.0, ("POST", "reinforce")),
        Op("mem::auto-forget", AutoForgetIn, lambda s, r: s.auto_forget(r), "TTL, contradiction, fading and low-value removal (dryRun previews)", LONG, ("POST", "auto-forget")),
        Op("mem::audit-retention", DecayIn, lambda s, r: s.audit_retention(r), "Drop audit months past retention", LONG),
        Op("mem::lesson::save", LessonSaveIn, lambda s, r: s.lesson_save(r), "Save (or reinforce) a lesson", 30.0, ("POST", "lessons"), status=201),
        Op("mem::lesson::recall", LessonRecallIn, lambda s, r: s.lesson_recall(r), "Recall lessons by relevance and strength", 30.0, ("POST", "lessons/recall")),
        Op("mem::lesson::reinforce", LessonReinforceIn, lambda s, r: s.lesson_reinforce(r), "Reinforce a lesson that helped", 30.0, ("POST", "lessons/reinforce")),
        Op("mem::digest-events", DigestIn, lambda s, r: s.digest_events(r), "Fold new MEM_EVENTS into the knowledge graph and project profiles", LONG),
        Op("mem::graph-compact", DecayIn, lambda s, r: s.graph_compact(r), "Drop expired edges, idle nodes and forgotten provenance from the graph", LONG),
        Op("mem::graph-query", GraphQueryIn, lambda s, r: s.graph_query(r), "Knowledge graph: nodes by name, a walk from a node, or the best connected", 60.0, ("POST", "graph/query")),
        Op("mem::graph-stats", GraphStatsIn, lambda s, r: s.graph_stats(r), "Knowledge graph counts by node and edge type", 30.0, ("GET", "graph/stats"), source="query"),
        Op("mem::project-profile", ProjectProfileIn, lambda s, r: s.project_profile(r), "A project's profile: top concepts, files, commands, errors, conventions", 120.0),
    ]  # fmt: skip


def schedules(cfg: LifecycleConfig) -> dict[str, str]:
    every = max(60, cfg.consolidation_interval_ms // 1000)
    return {
        "mem::sweep": "@every 15m",
        "mem::consolidate": f"@every {every}s",
        "mem::decay": "@every 1h",
        "mem::auto-forget": "@every 1h",
        "mem::audit-retention": "@daily",
        "mem::digest-events": "@every 1m",
        "mem::graph-compact": "@daily",
    }


def register(worker: Worker, service: LifecycleService | None = None) -> LifecycleService:
    svc = service or LifecycleService()
    worker.on_start(svc.start)
    worker.on_stop(svc.stop)
    crons = schedules(svc.config)
    for op in ops():
        _bus(worker, svc, op)
        if op.route is not None:
            _rest(worker, svc, op)
        if op.id in crons:
            worker.trigger("cron", op.id, schedule=crons[op.id], timeout=op.timeout)
    return svc


def _bus(worker: Worker, svc: LifecycleService, op: Op) -> None:
    async def handler(req: Any, ctx: Context) -> Any:
        return await op.call(svc, req)

    worker.function(
        op.id, description=op.summary, request=op.request, response=Any, timeout=op.timeout
    )(handler)


def _rest(worker: Worker, svc: LifecycleService, op: Op) -> None:
    assert op.route is not None
    method, path = op.route
    name = op.id.removeprefix("mem::").replace("::", "-")
    fid = f"mem::rest::{name}"
    decode_as = RestOp(name, method, path, op.request, op.call, op.summary, source=op.source)  # type: ignore[arg-type]

    async def handler(req: HttpRequest, ctx: Context) -> HttpResponse:
        payload = decode_rest(decode_as, req)
        return HttpResponse(status=op.status, body=await op.call(svc, payload))

    worker.function(
        fid, description=op.summary, request=HttpRequest, response=HttpResponse, timeout=op.timeout
    )(handler)
    worker.trigger(
        "http",
        fid,
        method=method,
        path="/agentmemory/" + path,
        auth="bearer",
        summary=op.summary,
        tags=["lifecycle"],
        status=op.status,
        body_schema=msgspec.json.schema(op.request),
        timeout=op.timeout,
    )
