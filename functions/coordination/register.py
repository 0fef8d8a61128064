"""The coordination operations on a worker (the memory worker serves them, so both memory
replicas do and the :3111 routes reach them in-process), and the triggers that drive them:
state triggers on leases (expiry), timers and checkpoints, and cron for the sweep and the
daily crystals. The pattern sentinels' scan of MEM_EVENTS is a cron trigger that exists only
while a pattern sentinel watches (sentinels.Patterns arms and disarms it): an idle install
has no firing every two seconds."""

from __future__ import annotations

from engine import Worker
from functions.coordination.records import CHECKPOINTS_BUCKET, LEASES_BUCKET, TIMERS_BUCKET
from functions.coordination.service import CoordinationService

SWEEP_SCHEDULE = "@every 2m"
"""The fallback for leases whose expiry marker nobody acted on (the state trigger on the
marker hands an expired lease back first)."""
CRYSTALS_SCHEDULE = "17 3 * * *"


def register(worker: Worker, service: CoordinationService | None = None) -> CoordinationService:
    svc = service or CoordinationService()
    worker.on_start(svc.start)
    worker.on_stop(svc.stop)
    worker.serve(svc)
    worker.trigger("state", "mem::lease-changed", bucket=LEASES_BUCKET, deliver="new")
    worker.trigger("state", "mem::coord-timer", bucket=TIMERS_BUCKET, deliver="new")
    worker.trigger("state", "mem::sentinel-checkpoint", bucket=CHECKPOINTS_BUCKET, deliver="new")
    worker.trigger("cron", "mem::coord-sweep", schedule=SWEEP_SCHEDULE, catch_up="skip")
    worker.trigger("cron", "mem::crystal-auto", schedule=CRYSTALS_SCHEDULE)
    return svc
