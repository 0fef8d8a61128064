"""The lifecycle worker: `python -m workers.lifecycle`. Summaries, consolidation, decay,
auto-forget and retention (`LifecycleService`), and the families served beside it over its
store: lessons, insights, diagnostics, graph maintenance and flows; on cron and on demand."""

from __future__ import annotations

from engine import Worker
from functions.diagnostics.diagnostics_service import DiagnosticsService
from functions.flows.flow_service import FlowService
from functions.graph import mirror
from functions.graph.ops import GraphOps
from functions.insights.insight_service import InsightService
from functions.lessons.lesson_service import LessonService
from functions.lifecycle.lifecycle_service import LONG, LifecycleService
from functions.lifecycle.settings import LifecycleConfig


def schedules(cfg: LifecycleConfig) -> dict[str, str]:
    every = max(60, cfg.consolidation_interval_ms // 1000)
    return {
        "mem::sweep": "@every 15m",
        "mem::consolidate": f"@every {every}s",
        "mem::decay": "@every 1h",
        "mem::auto-forget-scheduled": f"@every {cfg.forget.interval_ms // 1000}s",
        "mem::audit-retention": "@daily",
        "mem::digest-events": "@every 1m",
        "mem::graph-compact": "@daily",
    }


def serve_lifecycle(worker: Worker, service: LifecycleService | None = None) -> LifecycleService:
    svc = service or LifecycleService()
    worker.on_start(svc.start)
    worker.on_drain(svc.drain)
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
    # After the service's start hook (it creates the buckets): graph queries read this
    # in-memory mirror.
    worker.on_start(mirror.start_for)
    worker.on_stop(mirror.stop_for)
    return svc


def build() -> Worker:
    worker = Worker(
        "lifecycle",
        description="agentmemory lifecycle: summaries, consolidation, decay, forgetting",
    )
    serve_lifecycle(worker)
    return worker


if __name__ == "__main__":
    build().run()
