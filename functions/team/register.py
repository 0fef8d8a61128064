"""The team worker's operations and the stream triggers that keep the team's book."""

from __future__ import annotations

from engine import Worker
from functions.records import EVENTS_STREAM, EVENTS_SUBJECT
from functions.team.records import TEAM_STREAM
from functions.team.service import TeamService


def register(worker: Worker, service: TeamService | None = None) -> TeamService:
    svc = service or TeamService()
    worker.on_start(svc.start)
    worker.on_stop(svc.stop)
    worker.serve(svc)
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
