"""The team worker: `python -m workers.team`. Records shared with the team, the mesh that
carries them between instances over a NATS leaf link, git snapshots of memory state, and
the MEMORY.md bridge."""

from __future__ import annotations

from engine import Worker
from functions.bridge.bridge_service import BridgeService
from functions.kernel.records import EVENTS_STREAM, EVENTS_SUBJECT
from functions.snapshots.snapshot_service import SnapshotService, schedule
from functions.team.mesh import MeshService
from functions.team.records import TEAM_STREAM
from functions.team.team_service import TeamService


def serve_team(worker: Worker, service: TeamService | None = None) -> TeamService:
    """Team memory and the mesh, git snapshots and the MEMORY.md bridge over the same
    store, the stream triggers that keep the team's book, and the snapshots' cron
    schedule when automatic snapshots are on."""
    svc = service or TeamService()
    worker.on_start(svc.start)
    worker.on_stop(svc.stop)
    worker.serve(svc)
    worker.serve(MeshService(svc))
    worker.serve(SnapshotService(svc))
    worker.serve(BridgeService(svc))
    every = schedule()
    if every is not None:
        # catch_up once: a machine that slept through ticks takes one snapshot on waking.
        worker.trigger("cron", "mem::snapshot-scheduled", schedule=every, timeout=300)
    # Every event of the TEAM stream, in order, once (a durable consumer: after a restart
    # the first unapplied one is next); this instance's own are skipped by the book.
    worker.trigger("stream", "mem::team-apply", stream=TEAM_STREAM, deliver="all")
    # What this instance does to shared records, as MEM_EVENTS says (new events only).
    worker.trigger(
        "stream",
        "mem::team-send-version",
        stream=EVENTS_STREAM,
        subject=f"{EVENTS_SUBJECT}.memory",
        deliver="new",
    )
    worker.trigger(
        "stream",
        "mem::team-send-forget",
        stream=EVENTS_STREAM,
        subject=f"{EVENTS_SUBJECT}.removed",
        deliver="new",
    )
    return svc


def build() -> Worker:
    worker = Worker(
        "team", description="agentmemory team memory: sharing, mesh sync, snapshots, MEMORY.md"
    )
    serve_team(worker)
    return worker


if __name__ == "__main__":
    build().run()
