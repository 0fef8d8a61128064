"""The TEAM stream of this instance: its own events on `team.log.<origin>.>`, and a copy of
each peer's own events, sourced from the peer's TEAM stream in the peer's JetStream domain
(filter `team.log.<peer>.>`, so what a peer copied from us never comes back). JetStream
keeps each source's place: a peer that was away resumes where it stopped."""

from __future__ import annotations

import msgspec

from engine import Client, FunctionError, Source, SourceStatus, Stream
from functions.kernel.records import Memory, Observation
from functions.team.records import (
    LOG_SUBJECT,
    TEAM_STREAM,
    Echo,
    Forgotten,
    Probe,
    Resolved,
    Shared,
    log_subject,
)

PUBLISH_TIMEOUT = 5.0


class TeamLog:
    def __init__(self, client: Client, origin: str) -> None:
        self.origin = origin
        self.stream: Stream = client.stream(
            TEAM_STREAM,
            subjects=[f"{LOG_SUBJECT}.{origin}.>"],
            # One message per subject (origin, record): the latest word on each record.
            # No age limit, so a peer away for days finds everything it missed.
            max_msgs_per_subject=1,
        )

    async def previous_origin(self) -> str:
        """The origin this instance's TEAM stream was made for, when it was another one
        (an instance first run without a domain, `local`, that has one now); else ""."""
        try:
            stored = await self.stream.stored_subjects()
        except FunctionError as err:
            if err.code == "NOT_FOUND":
                return ""
            raise
        mine = f"{LOG_SUBJECT}.{self.origin}.>"
        for subject in stored:
            parts = subject.split(".")
            if subject != mine and len(parts) == 4 and subject.startswith(LOG_SUBJECT + "."):
                return parts[2]
        return ""

    async def ensure(self) -> None:
        """Made, or brought to this origin's subjects (engine/_reconcile.py): the events it
        holds stay."""
        await self.stream.ensure()

    async def append(self, event: Shared | Forgotten | Resolved) -> int:
        if isinstance(event, Shared):
            token = event.item.id
        elif isinstance(event, Forgotten):
            token = event.id
        else:
            token = "resolve-" + event.root
        ack = await self.stream.publish(
            log_subject(self.origin, token), event, timeout=PUBLISH_TIMEOUT
        )
        return ack.seq

    async def probe(self, probe: Probe) -> None:
        """One subject per origin (the stream keeps its latest message): no growth."""
        await self.stream.publish(log_subject(self.origin, "probe"), probe, timeout=PUBLISH_TIMEOUT)

    async def echo(self, echo: Echo) -> None:
        subject = log_subject(self.origin, "echo-" + echo.to)
        await self.stream.publish(subject, echo, timeout=PUBLISH_TIMEOUT)

    async def purge_origin(self, origin: str) -> int:
        return await self.stream.purge(f"{LOG_SUBJECT}.{origin}.>")

    async def source_peers(self, peers: list[str]) -> None:
        await self.stream.set_sources(
            [Source(TEAM_STREAM, p, f"{LOG_SUBJECT}.{p}.>") for p in sorted(set(peers))]
        )

    async def retry(self, stale: list[str], peers: list[str]) -> None:
        """Retry sourcing these peers now: a source that failed while its peer was away is
        retried by the server with a backoff growing to minutes; dropped and added again it
        is retried at once, and resumes where it was (the stream knows what it copied)."""
        await self.source_peers([p for p in peers if p not in stale])
        await self.source_peers(peers)

    async def peer_states(self) -> dict[str, SourceStatus]:
        return {s.source.domain or "": s for s in await self.stream.sources()}

    async def last_seq(self) -> int:
        return (await self.stream.info()).last_seq


def shared_copy(record: Memory | Observation, team: str, origin: str) -> Memory | Observation:
    """The record as the team holds it: marked with its team and where it came from."""
    return msgspec.structs.replace(record, team=team, instance=record.instance or origin)
