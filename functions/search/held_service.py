"""`mem::quarantine-held`: the records the index keeps out of every query right now (held
at write, by hand or by chain), for the quarantine's listing (functions/quarantine). On the
bus only: `GET /agentmemory/quarantine` is the quarantine service's, which adds reasons
from the records, the owner's decisions and held lessons."""

from __future__ import annotations

import logging
from typing import Annotated

import msgspec

from engine import Client, operation
from functions.search.feeder import IndexHolder
from functions.search.settings import search_settings

log = logging.getLogger("functions.search.held")


class HeldIn(msgspec.Struct, rename="camel", kw_only=True):
    project: str = ""
    since: str = ""
    """ISO time: records written at or after it."""
    limit: Annotated[int, msgspec.Meta(ge=1, le=10_000)] = 200


class HeldRecord(msgspec.Struct, rename="camel", kw_only=True):
    id: str
    kind: str
    project: str
    session_id: str
    timestamp: str
    title: str
    reasons: list[str]


class HeldOut(msgspec.Struct, kw_only=True):
    records: list[HeldRecord]
    """Newest first."""
    total: int
    """Held records matching the filters (`records` holds at most `limit`)."""


class HeldService:
    def __init__(self, holder: IndexHolder) -> None:
        self.holder = holder
        self.client: Client | None = None

    async def start(self, client: Client) -> None:
        self.client = client

    @operation("mem::quarantine-held", description="Records the index holds out of queries")
    async def held(self, req: HeldIn) -> HeldOut:
        if self.client is not None:
            try:  # the writes already acknowledged are listed (read-your-writes)
                await self.holder.caught_up(
                    timeout=search_settings().freshness_seconds, project=req.project or None
                )
            except Exception as exc:  # the bus is reconnecting: answer from what we have
                log.debug("freshness fence skipped: %s", exc)
        index = self.holder.index
        found: list[HeldRecord] = []
        for n in sorted(index.held):
            m = index.meta[n]
            if m is None or (req.project and m.project != req.project):
                continue
            if req.since and m.timestamp < req.since:
                continue
            found.append(
                HeldRecord(id=m.id, kind=m.kind, project=m.project, session_id=m.session_id,
                           timestamp=m.timestamp, title=m.title,
                           reasons=index.held_reasons(m.id) or [])
            )  # fmt: skip
        found.sort(key=lambda r: (r.timestamp, r.id), reverse=True)
        return HeldOut(records=found[: req.limit], total=len(found))
