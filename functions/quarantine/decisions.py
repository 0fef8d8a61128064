"""A record's quarantine state: its write verdict (`Trust`, on the record) and what was
decided after (`Decision`, in `mem_quarantine`), and whether, together, they hold it.

The record itself is never rewritten by a decision: a decision is a small entry of its own
and a `QuarantineChanged` event on MEM_EVENTS, so every replica's read models follow it.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from engine import Bucket, Client
from functions.kernel.ids import kv_key
from functions.kernel.records import QUARANTINE_BUCKET, Trust

MANUAL = "manual"
"""The reason of a hold by hand."""
CHAIN = "chain"
"""The reason of a hold inherited from a held record the held one derives from."""

Kind = Literal["observation", "memory", "summary", "lesson"]
State = Literal["", "held", "released"]


class Decision(msgspec.Struct, omit_defaults=True, kw_only=True):
    """`mem_quarantine/<record id>`: what was decided about a record after it was written."""

    id: str
    kind: Kind
    project: str = ""
    state: State = ""
    """The owner's last word on this record: held (by hand) or released; empty: none (it is
    here because a record it derives from is held)."""
    by: str = ""
    at: str = ""
    reason: str = ""
    """What the owner said when deciding (kept in the audit log too)."""
    chain: list[str] = msgspec.field(default_factory=list)
    """Held records this one derives from: each holds it until it is released."""
    derived: list[str] = msgspec.field(default_factory=list)
    """Records derived from this one that its hold holds (so its release frees them)."""
    refed: bool = False
    """Its release gave the record to the feeds that skipped it when it was written held."""


def is_held(trust: Trust | None, decision: Decision | None) -> bool:
    """Effective: the owner's last word, else a hold by chain, else the write verdict."""
    if decision is not None:
        if decision.state:
            return decision.state == "held"
        if decision.chain:
            return True
    return trust is not None and trust.held


def reasons_of(trust: Trust | None, decision: Decision | None) -> list[str]:
    """Why a held record is held: the write verdict's codes, then `manual`, then `chain`."""
    out = list(trust.reasons) if trust is not None and trust.held else []
    if decision is not None and decision.state == "held":
        out.append(MANUAL)
    if decision is not None and decision.chain and decision.state != "released":
        out.append(CHAIN)
    return out


class Decisions:
    """Every decision, read at once: the bucket holds only records decided on after their
    write (holds by hand, releases, and what their chains reach), a small set. The readers
    that go through KV (summaries, consolidation, lessons, the graph) load it once per run
    or call and ask `held(id, trust)` per record."""

    def __init__(self, by_id: dict[str, Decision] | None = None) -> None:
        self.by_id = by_id or {}

    @classmethod
    async def load(cls, client: Client) -> Decisions:
        state = await bucket(client)
        return cls({d.id: d async for _, d in state.scan(">", Decision)})

    def get(self, record_id: str) -> Decision | None:
        return self.by_id.get(record_id)

    def held(self, record_id: str, trust: Trust | None) -> bool:
        return is_held(trust, self.by_id.get(record_id))

    def held_ids(self) -> set[str]:
        """Records a decision holds (by hand or by chain); the write verdict's are not here."""
        return {i for i, d in self.by_id.items() if is_held(None, d)}


async def bucket(client: Client) -> Bucket:
    state: Bucket = await client.bucket(QUARANTINE_BUCKET)
    return state


def key(record_id: str) -> str:
    return kv_key(record_id)
