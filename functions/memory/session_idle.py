"""The idle finaliser: a session whose turn ended (a Stop hook's `final: false`) ends after
AGENTMEMORY_FINALIZE_IDLE_MS of silence (upstream's finaliser, #745 #1131).

No timer lives in a process. A deferred end (re)writes the session's key in KV bucket
`mem_session_idle` with a TTL of the idle period, so each new turn restarts the wait;
JetStream removes the key when the TTL runs out and leaves an expiry marker, which the state
trigger on the bucket hands to `mem::session-finalize` through one durable consumer: one
delivery however many replicas run, again after a crash, and still there after a restart
within a day (`MARKER_TTL`). The finaliser ends the session by compare-and-set, only while
it is active and has been silent for the whole period (else it waits the rest), so a
redelivered marker or a turn racing it changes nothing twice.
"""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any, Literal

import msgspec

from engine import Bucket, Client
from functions.kernel import clock
from functions.kernel.ids import kv_key
from functions.kernel.records import Session
from functions.kernel.store import MemoryStore

IDLE_BUCKET = "mem_session_idle"
"""key: the session id; value `Pending`; per-key TTL = the idle period; expiry markers."""
MARKER_TTL = 86_400.0
"""Seconds an expiry marker waits for a finaliser that is down (a day of downtime)."""


class IdleChange(msgspec.Struct, kw_only=True):
    """What the state trigger on `mem_session_idle` delivers (triggers/state.py's event;
    the fields read here)."""

    key: str = ""
    op: Literal["created", "updated", "deleted"]
    old: Any = None


class Pending(msgspec.Struct, rename="camel", kw_only=True):
    session_id: str
    due_at: str


class FinalizeOut(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    session_id: str = ""
    finalized: bool = False
    rescheduled_at: str = ""
    reason: str = ""
    """Why nothing ended: `not_found`, `not_active`, `not_expired` (a write, not a marker)."""


class SessionIdle:
    """Schedules and carries out the idle ends of one process's sessions."""

    def __init__(self, idle_ms: int) -> None:
        self.idle_ms = idle_ms
        self._bucket: Bucket | None = None

    @property
    def deferring(self) -> bool:
        """A Stop hook's end waits for silence; 0 turns it into an immediate end."""
        return self.idle_ms > 0

    async def open(self, client: Client) -> None:
        self._bucket = await client.bucket(IDLE_BUCKET, marker_ttl=MARKER_TTL)

    def due(self, after_ms: float | None = None) -> str:
        wait = self.idle_ms if after_ms is None else after_ms
        return clock.iso(clock.now() + timedelta(milliseconds=wait))

    async def schedule(self, session_id: str, after_ms: float | None = None) -> str:
        """(Re)start the session's wait; returns when it falls due (ISO)."""
        wait = self.idle_ms if after_ms is None else after_ms
        due = self.due(wait)
        if self._bucket is not None:
            # whole seconds (JetStream's TTL); never less than one
            ttl = max(1, math.ceil(wait / 1000))
            await self._bucket.put(
                kv_key(session_id), Pending(session_id=session_id, due_at=due), ttl=ttl
            )
        return due

    async def expired(self, store: MemoryStore, change: IdleChange) -> FinalizeOut:
        """The state trigger's event: a session's wait ran out (its expiry marker)."""
        if change.op != "deleted" or not isinstance(change.old, dict):
            return FinalizeOut(reason="not_expired")
        try:
            pending = msgspec.convert(change.old, Pending)
        except msgspec.ValidationError:
            return FinalizeOut(reason="not_expired")
        return await self.finalize(store, pending.session_id)

    async def finalize(self, store: MemoryStore, session_id: str) -> FinalizeOut:
        """End the session if it is active and silent for the idle period; if a turn came
        since, wait the rest of the period from its last sign of life."""
        now = clock.now()
        seen: dict[str, str] = {}  # what the last attempt of `close` found (CAS retries)

        def close(cur: Session | None) -> Session | None:
            seen.clear()
            if cur is None:
                seen["reason"] = "not_found"
                return None
            if cur.status != "active":
                seen["reason"] = "not_active"
                return None
            last = cur.last_seen or cur.started_at
            if clock.parse(last) + timedelta(milliseconds=self.idle_ms) > now:
                seen["wait_from"] = last
                return None
            cur.status, cur.ended_at = "ended", clock.iso(now)
            return cur

        await store.sessions.update(kv_key(session_id), close, type=Session)
        if "wait_from" in seen:
            left = clock.parse(seen["wait_from"]) + timedelta(milliseconds=self.idle_ms) - now
            due = await self.schedule(session_id, left.total_seconds() * 1000)
            return FinalizeOut(session_id=session_id, rescheduled_at=due)
        if "reason" in seen:
            return FinalizeOut(session_id=session_id, reason=seen["reason"])
        return FinalizeOut(session_id=session_id, finalized=True)
