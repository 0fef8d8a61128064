"""How many records the write paths checked and held, by reason and by source, for status
and the viewer's Health page. Each process counts its own writes and puts its totals under
its own key of `mem_trust` (no write ever conflicts), at most once a FLUSH_EVERY; `read`
sums the keys. The figures count verdicts at write (a later release or hold by hand is the
quarantine's to count), and may miss the last FLUSH_EVERY of a process that died.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import msgspec

from engine import Bucket, Client
from functions.kernel.models.usage import PROCESS
from functions.kernel.records import Trust

TRUST_BUCKET = "mem_trust"
FLUSH_EVERY = 1.0
log = logging.getLogger("functions.kernel.trust")


class TrustCounts(msgspec.Struct, rename="camel", kw_only=True):
    checked: int = 0
    """Records whose words a write path classified."""
    held: int = 0
    """Of those, held at write."""
    by_reason: dict[str, int] = msgspec.field(default_factory=dict)
    """Held records by reason (a record with two reasons counts under both)."""
    by_source: dict[str, int] = msgspec.field(default_factory=dict)
    """Held records by who wrote the words (web, file, command, peer, remember ...)."""

    def add(self, other: TrustCounts) -> None:
        self.checked += other.checked
        self.held += other.held
        for mine, theirs in ((self.by_reason, other.by_reason), (self.by_source, other.by_source)):
            for k, n in theirs.items():
                mine[k] = mine.get(k, 0) + n


class _Tally:
    """One client's counts in this process, flushed to KV after a change."""

    def __init__(self, client: Client, key: str) -> None:
        self.client = client
        self.key = key
        self.counts = TrustCounts()
        self._state: Bucket | None = None
        self._task: asyncio.Task[None] | None = None

    def count(self, trust: Trust) -> None:
        c = self.counts
        c.checked += 1
        if trust.held:
            c.held += 1
            for r in trust.reasons:
                c.by_reason[r] = c.by_reason.get(r, 0) + 1
            c.by_source[trust.source] = c.by_source.get(trust.source, 0) + 1
        if self._task is None or self._task.done():
            with contextlib.suppress(RuntimeError):  # no loop: counted, flushed next time
                self._task = asyncio.get_running_loop().create_task(self._flush())

    async def _flush(self) -> None:
        await asyncio.sleep(FLUSH_EVERY)  # writes in between ride along
        try:
            if self._state is None:
                self._state = await self.client.bucket(TRUST_BUCKET)
            await self._state.put(self.key, self.counts)
        except Exception as exc:
            log.warning("trust counts not recorded: %s", exc)


_tallies: dict[int, _Tally] = {}


def count(client: Client, trust: Trust | None) -> None:
    """Count one write's verdict (cheap: the KV put happens later, coalesced)."""
    if trust is None:
        return
    tally = _tallies.get(id(client))
    if tally is None or tally.client is not client:
        key = f"c.{PROCESS}" + (f"_{len(_tallies)}" if _tallies else "")
        tally = _tallies[id(client)] = _Tally(client, key)
    tally.count(trust)


async def read(client: Client) -> TrustCounts:
    """The counts of every process that ever wrote, summed."""
    state = await client.bucket(TRUST_BUCKET)
    total = TrustCounts()
    async for _key, value in state.scan("c.>", Any):
        total.add(msgspec.convert(value, TrustCounts, strict=False))
    return total
