"""The TEAM stream of this instance: its own events on `team.log.<origin>.>`, and a copy of
each peer's own events, sourced from the peer's TEAM stream in the peer's JetStream domain
(filter `team.log.<peer>.>`, so what a peer copied from us never comes back). JetStream
keeps each source's place: a peer that was away resumes where it stopped."""

from __future__ import annotations

import msgspec

from engine import Client, Source, SourceState, Stream
from functions.kernel.records import Memory, Observation
from functions.team.records import LOG_SUBJECT, TEAM_STREAM, Forgotten, Shared, log_subject

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

    async def ensure(self) -> None:
        await self.stream.ensure()

    async def append(self, event: Shared | Forgotten) -> int:
        record_id = event.item.id if isinstance(event, Shared) else event.id
        ack = await self.stream.publish(
            log_subject(self.origin, record_id), event, timeout=PUBLISH_TIMEOUT
        )
        return ack.seq

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

    async def peer_states(self) -> dict[str, SourceState]:
        return {s.source.domain or "": s for s in await self.stream.sources()}

    async def last_seq(self) -> int:
        return (await self.stream.info()).last_seq


def shared_copy(record: Memory | Observation, team: str, origin: str) -> Memory | Observation:
    """The record as the team holds it: marked with its team and where it came from."""
    return msgspec.structs.replace(record, team=team, instance=record.instance or origin)
