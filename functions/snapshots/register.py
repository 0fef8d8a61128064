"""The snapshot operations, and their cron schedule when automatic snapshots are on."""

from __future__ import annotations

from engine import Worker
from functions.snapshots.service import SnapshotService, schedule


def register(worker: Worker, service: SnapshotService | None = None) -> SnapshotService:
    svc = service or SnapshotService()
    worker.on_start(svc.start)
    worker.serve(svc)
    every = schedule()
    if every is not None:
        # catch_up once: a machine that slept through ticks takes one snapshot on waking.
        worker.trigger("cron", "mem::snapshot-scheduled", schedule=every, timeout=300)
    return svc
