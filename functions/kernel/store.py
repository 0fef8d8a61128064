"""The memory domain's durable state: its KV buckets, the MEM_EVENTS stream, the audit log,
and what a process of the memory worker remembers about itself (boot id, scope)."""

from __future__ import annotations

import asyncio
import os
import secrets
import time
from typing import Any, Protocol, TypeVar

import msgspec

from engine import BUS_ERRORS, Client, Presence, State, Stream, WrongLastSequence
from functions.kernel.clock import now_iso
from functions.kernel.ids import kv_key, new_id
from functions.kernel.records import (
    AUDIT_BUCKET,
    DEDUP_BUCKET,
    EVENTS_STREAM,
    EVENTS_SUBJECT,
    MEMORIES_BUCKET,
    OBSERVATIONS_BUCKET,
    SESSIONS_BUCKET,
    SUMMARIES_BUCKET,
    AuditEntry,
    MemEvent,
    Memory,
    MemoryAdded,
    ObservationAdded,
    RecordsRemoved,
    SummaryAdded,
)

T = TypeVar("T")

STORE_ERRORS = BUS_ERRORS
"""Errors that mean "JetStream could not take the write right now": the caller may retry."""
PUBLISH_TIMEOUT = 5.0
DUPLICATE_WINDOW = 600.0

_event_encoder = msgspec.json.Encoder()


def _event_subject(event: MemEvent) -> str:
    if isinstance(event, ObservationAdded):
        # One subject per observation: "has this observation's event been written?" is then
        # a per-subject sequence check that JetStream answers on the write itself.
        return f"{EVENTS_SUBJECT}.observation.{kv_key(event.observation.id)}"
    kind = {MemoryAdded: "memory", SummaryAdded: "summary", RecordsRemoved: "removed"}[type(event)]
    return f"{EVENTS_SUBJECT}.{kind}"


class MemoryStore:
    """Opened once per process; every handler of the memory domain shares it."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.events: Stream = events_stream(client)
        self.boot_id = secrets.token_hex(8)
        self.started = time.time()
        self.isolated = os.environ.get("AGENTMEMORY_AGENT_SCOPE", "").lower() == "isolated"
        self._default_agent = os.environ.get("AGENTMEMORY_AGENT_ID", "")
        self.observations: State
        self.memories: State
        self.sessions: State
        self.dedup: State
        self.audit_log: State
        self.summaries: State

    async def open(self) -> MemoryStore:
        c = self.client
        self.observations = await c.state(OBSERVATIONS_BUCKET)
        self.memories = await c.state(MEMORIES_BUCKET)
        self.sessions = await c.state(SESSIONS_BUCKET)
        self.dedup = await c.state(DEDUP_BUCKET)
        self.audit_log = await c.state(AUDIT_BUCKET)
        self.summaries = await c.state(SUMMARIES_BUCKET)
        await self.ensure_stream()
        return self

    async def ensure_stream(self) -> None:
        await self.events.ensure()

    async def publish(self, event: MemEvent, msg_id: str | None = None) -> int:
        """Append to MEM_EVENTS and wait for JetStream's ack; `msg_id` makes a retry a no-op."""
        data = _event_encoder.encode(event)
        ack = await self.events.publish(
            _event_subject(event), data, msg_id=msg_id, timeout=PUBLISH_TIMEOUT
        )
        return ack.seq

    async def publish_once(self, event: ObservationAdded) -> bool:
        """Append an observation's event unless its subject already holds one: False when it
        was there (a replay), whatever the age of the first write."""
        data = _event_encoder.encode(event)
        try:
            await self.events.publish(
                _event_subject(event), data, expect_last_subject_seq=0, timeout=PUBLISH_TIMEOUT
            )
        except WrongLastSequence:
            return False
        return True

    async def save_memory(self, memory: Memory, *, supersedes: str = "", reason: str = "") -> None:
        """Store a memory: its event, then its record. A new version (`supersedes` names the
        one it replaces) then marks the old one superseded and tells the read models it is
        gone (`reason`), in that order, so a reader never sees two current versions."""
        await self.publish(MemoryAdded(memory=memory), msg_id=memory.id)
        await self.memories.put(kv_key(memory.id), memory)
        if not supersedes:
            return

        def mark(cur: Memory | None) -> Memory | None:
            if cur is None:
                return None
            cur.superseded_by, cur.updated_at = memory.id, memory.updated_at
            return cur

        await self.memories.update(kv_key(supersedes), mark, type=Memory)
        await self.publish(RecordsRemoved(ids=[supersedes], reason=reason))

    async def kv_create_fast(self, state: State, key: str, value: Any) -> int | None:
        """KV create: None when the key holds a value or a tombstone (a deleted key is never
        re-created this way, so a forgotten observation stays forgotten)."""
        return await state.create(kv_key(key), value, over_tombstone=False)

    async def presence(self, state: State, key: str) -> Presence:
        """Whether a key holds a value, was deleted (tombstone kept), or never existed."""
        return await state.presence(kv_key(key))

    async def get(self, state: State, key: str, type_: type[T]) -> T | None:
        return await state.get(kv_key(key), type_)

    async def keys(self, state: State, prefix: str = "") -> list[str]:
        """Keys of a bucket (tombstoned ones included: reading them gives None), read from
        the stream's own subject listing: a list that came back short would make a
        replace-import or a forget skip records."""
        return sorted(k for k in await state.stored_keys() if k.startswith(prefix))

    async def load_all(self, state: State, type_: type[T], prefix: str = "") -> list[T]:
        keys = await self.keys(state, prefix)
        out: list[T] = []
        for chunk in range(0, len(keys), 256):
            got = await asyncio.gather(
                *(self.get(state, k, type_) for k in keys[chunk : chunk + 256])
            )
            out.extend(v for v in got if v is not None)
        return out

    async def audit(
        self,
        action: str,
        target_ids: list[str],
        *,
        reason: str = "",
        actor: str = "",
        project: str = "",
    ) -> AuditEntry:
        return await write_audit(
            self.audit_log, action, target_ids, reason=reason, actor=actor, project=project
        )

    def visible(self, record_agent: str, agent_id: str) -> bool:
        """Isolated scope: a reader sees only its own agent's records (and unscoped ones
        only when it is itself unscoped)."""
        return not self.isolated or record_agent == agent_id

    def default_agent(self, agent_id: str) -> str:
        return agent_id or self._default_agent


async def write_audit(
    audit_log: State,
    action: str,
    target_ids: list[str],
    *,
    reason: str = "",
    actor: str = "",
    project: str = "",
    details: dict[str, Any] | None = None,
    retry_for: float = 0.0,
) -> AuditEntry:
    """Append an entry to the audit log (`mem_audit`), keyed so keys sort by time.
    `retry_for`: seconds to keep trying while the bus cannot take it (an election, a
    partition) for an entry that records a commit already made: the same key each time."""
    at = now_iso()
    entry = AuditEntry(
        id=new_id("aud"),
        at=at,
        action=action,
        target_ids=target_ids,
        reason=reason,
        actor=actor,
        project=project,
        details=details or {},
    )
    key = f"{at[:4]}{at[5:7]}.{int(time.time() * 1000):013d}-{entry.id}"
    deadline = time.monotonic() + retry_for
    delay = 0.2
    while True:
        try:
            await audit_log.put(key, entry)
            return entry
        except BUS_ERRORS:
            if time.monotonic() + delay > deadline:
                raise
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)


class StoreOwner(Protocol):
    """What a worker's family services share: the process's one store (the memory or the
    lifecycle service opened it)."""

    @property
    def store(self) -> MemoryStore: ...


def events_stream(client: Client) -> Stream:
    """MEM_EVENTS, as every process that writes or follows it declares it."""
    return client.stream(
        EVENTS_STREAM, subjects=[f"{EVENTS_SUBJECT}.>"], duplicate_window=DUPLICATE_WINDOW
    )
