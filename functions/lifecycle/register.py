"""The lifecycle worker's operations (every method of `LifecycleService` and of the
services beside it, lessons, insights, diagnostics and graph maintenance, declared with
`engine.operation`) and their cron schedules."""

from __future__ import annotations

from engine import Worker
from functions.graph.ops import GraphOps
from functions.lifecycle.config import LifecycleConfig
from functions.lifecycle.diagnostics import DiagnosticsService
from functions.lifecycle.flows import FlowService
from functions.lifecycle.insights import InsightService
from functions.lifecycle.lesson_ops import LessonService
from functions.lifecycle.service import LONG, LifecycleService


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
    worker.serve(svc)
    for part in (
        LessonService(svc),
        InsightService(svc),
        DiagnosticsService(svc),
        GraphOps(svc),
        FlowService(svc),
    ):
        worker.serve(part)
    for function_id, schedule in schedules(svc.config).items():
        worker.trigger("cron", function_id, schedule=schedule, timeout=LONG)
    return svc
