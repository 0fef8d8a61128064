"""The memory domain's durable state: its KV buckets, the MEM_EVENTS stream, the audit log,
and what a process of the memory worker remembers about itself (boot id, scope)."""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any, Literal, Protocol, TypeVar, cast

import msgspec

from engine import BUS_ERRORS, Bucket, Client, Entry, Presence, Stream
from engine.settings import worker_identity
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
    Observation,
    ObservationAdded,
    RecordsRemoved,
    SummaryAdded,
    observation_events_subject,
)
from functions.kernel.settings import kernel_settings

T = TypeVar("T")
log = logging.getLogger("functions.kernel.store")

STORE_ERRORS = BUS_ERRORS
"""Errors that mean "JetStream could not take the write right now": the caller may retry."""
PUBLISH_TIMEOUT = 5.0
DUPLICATE_WINDOW = 120.0
"""MEM_EVENTS' duplicate window: a msg id is remembered this long (~210 B of nats-server
RAM each, and re-read at its restart), so 2,000 observations a second cost <= 50 MB."""
REPLAY_MARGIN = 10.0
"""A replay of a record younger than the window less this relies on the msg id alone."""
EVENT_MARKER = "ev."
"""`mem_dedup` key prefix: an observation whose event an old replay published (rare)."""

_event_encoder = msgspec.json.Encoder()
_event_decoder = msgspec.json.Decoder(MemEvent)


def _event_subject(event: MemEvent) -> str:
    if isinstance(event, ObservationAdded):
        return observation_events_subject(event.observation.project)
    kind = {MemoryAdded: "memory", SummaryAdded: "summary", RecordsRemoved: "removed"}[type(event)]
    return f"{EVENTS_SUBJECT}.{kind}"


class MemoryStore:
    """Opened once per process; every handler of the memory domain shares it."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.events: Stream = events_stream(client)
        # The instance's boot (the supervisor gives every worker the same), so replicas
        # behind one port answer one bootId; a process run alone gets its own.
        self.boot_id = worker_identity().boot_id or secrets.token_hex(8)
        self.started = time.time()
        settings = kernel_settings()
        self.isolated = settings.agent_scope == "isolated"
        # upstream's AGENT_ID first (trimmed, 128 characters), ours as the older name
        self._default_agent = settings.agent_id[:128]
        self.observations: Bucket
        self.memories: Bucket
        self.sessions: Bucket
        self.dedup: Bucket
        self.audit_log: Bucket
        self.summaries: Bucket

    async def open(self) -> MemoryStore:
        c = self.client
        # Records are read by key, at random (a timeline; hits come from the search
        # worker's own file): nats-server loads, and decompresses, a whole block to read
        # one, which compression makes dearer (see store_compression); the event log, read
        # in order, is compressed.
        self.observations = await c.bucket(OBSERVATIONS_BUCKET, compression=records_compression())
        self.memories = await c.bucket(MEMORIES_BUCKET, compression=records_compression())
        self.sessions = await c.bucket(SESSIONS_BUCKET)
        self.dedup = await c.bucket(DEDUP_BUCKET)
        self.audit_log = await c.bucket(AUDIT_BUCKET)
        self.summaries = await c.bucket(SUMMARIES_BUCKET)
        await self.ensure_stream()
        return self

    async def ensure_stream(self) -> None:
        await self.events.ensure()
        # A stream made before events were per project kept a 600 s window of msg ids:
        # at 2,000 observations a second that is ~250 MB of nats-server's memory.
        changed = await self.events.settle(duplicate_window=int(DUPLICATE_WINDOW * 1e9))
        if changed:
            log.warning("%s: duplicate window set to %.0f s (the per-project event layout)",
                        EVENTS_STREAM, DUPLICATE_WINDOW)  # fmt: skip

    async def publish(self, event: MemEvent, msg_id: str | None = None) -> int:
        """Append to MEM_EVENTS and wait for JetStream's ack; `msg_id` makes a retry a no-op."""
        data = _event_encoder.encode(event)
        ack = await self.events.publish(
            _event_subject(event), data, msg_id=msg_id, timeout=PUBLISH_TIMEOUT
        )
        return ack.seq

    async def publish_new(self, event: ObservationAdded) -> None:
        """The event of an observation this call just created: its id is the msg id, so a
        replay within the duplicate window is dropped by JetStream itself."""
        await self.events.publish(
            _event_subject(event), _event_encoder.encode(event),
            msg_id=event.observation.id, timeout=PUBLISH_TIMEOUT,
        )  # fmt: skip

    async def publish_once(self, event: ObservationAdded) -> bool:
        """Append the event of a stored observation unless MEM_EVENTS holds it: False when it
        is there (a replay), whatever the age of the first write.

        Every publish of an observation's event carries its id as msg id. A record stored
        less than the duplicate window ago: the msg id decides. An older one: its event, if
        any, was stored between the record's own write and a window after it (the first
        attempt publishes right after its KV create, replays inside the window publish
        with the msg id), so that range of its project's subject is read; if the event is
        not there, a marker in `mem_dedup` (created once: concurrent old replays agree on
        one) lets this replay publish it. Only that rare path writes a key."""
        obs = event.observation
        # A record of the layout before per-project subjects has its event on a subject of
        # its own: JetStream answers that one directly.
        if await self.events.last_seq(f"{EVENTS_SUBJECT}.observation.{kv_key(obs.id)}"):
            return False
        created = await self._stored_at(obs.id)
        if created is None or time.time() - created < DUPLICATE_WINDOW - REPLAY_MARGIN:
            return await self._publish_dedup(event)
        marker = EVENT_MARKER + kv_key(obs.id)
        if await self.dedup.presence(marker) != "absent":
            return False
        if await self._event_between(
            obs, created - 2.0, created + DUPLICATE_WINDOW + 2 * PUBLISH_TIMEOUT
        ):
            return False
        if await self.dedup.create(marker, {"at": now_iso()}) is None:
            return False
        return await self._publish_dedup(event)

    async def _publish_dedup(self, event: ObservationAdded) -> bool:
        ack = await self.events.publish(
            _event_subject(event), _event_encoder.encode(event),
            msg_id=event.observation.id, timeout=PUBLISH_TIMEOUT,
        )  # fmt: skip
        return not ack.duplicate

    async def _stored_at(self, obs_id: str) -> float | None:
        """When the observation's current record was written (the server's time)."""
        entry: Entry[Observation] | None = await self.observations.entry(
            kv_key(obs_id), Observation
        )
        if entry is None:
            return None
        return await self.client.stream(f"KV_{OBSERVATIONS_BUCKET}").stored_at(entry.revision)

    async def _event_between(self, obs: Observation, start: float, end: float) -> bool:
        """Whether an event of `obs` was stored on its project's subject from `start` to
        `end` (epoch seconds, the server's clock)."""
        first = await self.events.seq_at(start)
        if first is None:
            return False
        stop = await self.events.seq_at(end)
        needle = obs.id.encode()
        reader = self.events.read(after=first - 1, subject=observation_events_subject(obs.project))
        async with aclosing(reader) as found:
            async for m in found:
                if stop is not None and m.seq >= stop:
                    return False
                if needle in m.data:
                    ev = msgspec.json.decode(m.data, type=MemEvent)
                    if isinstance(ev, ObservationAdded) and ev.observation.id == obs.id:
                        return True
        return False

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

    async def kv_create_fast(self, state: Bucket, key: str, value: Any) -> int | None:
        """KV create: None when the key holds a value or a tombstone (a deleted key is never
        re-created this way, so a forgotten observation stays forgotten)."""
        return await state.create(kv_key(key), value, over_tombstone=False)

    async def presence(self, state: Bucket, key: str) -> Presence:
        """Whether a key holds a value, was deleted (tombstone kept), or never existed."""
        return await state.presence(kv_key(key))

    async def get(self, state: Bucket, key: str, type_: type[T]) -> T | None:
        return await state.get(kv_key(key), type_)

    async def keys(self, state: Bucket, prefix: str = "") -> list[str]:
        """Keys of a bucket (tombstoned ones included: reading them gives None), read from
        the stream's own subject listing: a list that came back short would make a
        replace-import or a forget skip records."""
        return sorted(k for k in await state.stored_keys() if k.startswith(prefix))

    async def load_all(self, state: Bucket, type_: type[T], prefix: str = "") -> list[T]:
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

    async def project_observations(
        self, project: str, *, after: int = 0, since: float | None = None
    ) -> AsyncGenerator[tuple[int, Observation], None]:
        """The observations stored for `project`, in the order they were stored, each with
        its position in that order: those after position `after`, or (with `after` 0 and
        `since`, epoch seconds) those stored since then. A caller keeps the last position
        to resume from it, so following one project reads each record once, however big the
        store (the incremental session summaries do). `project=None`-like needs (every
        project) read the scan instead. The records are as first stored: read one by id for
        its current state (a later rewrite, a hold, a forget)."""
        if not after and since is not None:
            first = await self.events.seq_at(since)
            if first is None:
                return  # nothing stored since
            after = first - 1
        reader = self.events.read(after=after, subject=observation_events_subject(project))
        async with aclosing(reader) as found:
            async for m in found:
                try:
                    ev = _event_decoder.decode(m.data)
                except (msgspec.DecodeError, msgspec.ValidationError):
                    continue
                if isinstance(ev, ObservationAdded):
                    yield m.seq, ev.observation


async def write_audit(
    audit_log: Bucket,
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


Compression = Literal["events", "all", "none"]


def store_compression() -> Compression:
    """AGENTMEMORY_STORE_COMPRESSION: what is kept S2-compressed on disk. `all` (the
    default; `s2` names it too): MEM_EVENTS and the observations and memories buckets, the
    least disk (1.56 KB per observation at 1M against 3.12 with `events`, docs/
    PERFORMANCE.md, "Disk"); a record read by key decompresses the block holding it, which
    became cheap once hits were read from the search worker's own file (at 1M, saturated:
    nats-server 0.69 ms of CPU per observation against 0.65, 5% fewer observations a
    second). `events`: MEM_EVENTS alone (the log every read model follows in order).
    `none`: nothing. A change applies to the blocks nats-server writes from its next
    start; blocks already written stay as they are and read back either way."""
    return cast(Compression, kernel_settings().store_compression)


def events_compression() -> Literal["s2", "none"]:
    return "none" if store_compression() == "none" else "s2"


def records_compression() -> Literal["s2", "none"]:
    return "s2" if store_compression() == "all" else "none"


def events_stream(client: Client) -> Stream:
    """MEM_EVENTS, as every process that writes or follows it declares it."""
    return client.stream(
        EVENTS_STREAM,
        subjects=[f"{EVENTS_SUBJECT}.>"],
        duplicate_window=DUPLICATE_WINDOW,
        compression=events_compression(),
    )
