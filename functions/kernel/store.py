"""The memory domain's durable state: its KV buckets, the MEM_EVENTS stream, the audit log,
and what a process of the memory worker remembers about itself (boot id, scope)."""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable
from contextlib import aclosing
from typing import Any, Literal, Protocol, TypeVar, cast

import msgspec

from engine import BUS_ERRORS, Bucket, Client, Presence, Stream
from engine.settings import worker_identity
from functions.kernel.clock import now_iso
from functions.kernel.ids import kv_key, new_id
from functions.kernel.observation_records import ObservationRecords
from functions.kernel.records import (
    AUDIT_BUCKET,
    EVENTS_STREAM,
    EVENTS_SUBJECT,
    MEMORIES_BUCKET,
    SESSIONS_BUCKET,
    SUMMARIES_BUCKET,
    AuditEntry,
    MemEvent,
    Memory,
    MemoryAdded,
    Observation,
    ObservationAdded,
    QuarantineChanged,
    RecordsRemoved,
    SummaryAdded,
    observation_events_subject,
)
from functions.kernel.settings import kernel_settings
from functions.kernel.store_upgrade import upgrade_observations

T = TypeVar("T")
log = logging.getLogger("functions.kernel.store")

STORE_ERRORS = BUS_ERRORS
"""Errors that mean "JetStream could not take the write right now": the caller may retry."""
PUBLISH_TIMEOUT = 5.0
DUPLICATE_WINDOW = 120.0
"""MEM_EVENTS' duplicate window: a msg id is remembered this long (~210 B of nats-server
RAM each, and re-read at its restart), so 2,000 observations a second cost <= 50 MB."""

_event_encoder = msgspec.json.Encoder()
_event_decoder = msgspec.json.Decoder(MemEvent)


def _event_subject(event: MemEvent) -> str:
    if isinstance(event, ObservationAdded):
        return observation_events_subject(event.observation.project)
    kind = {
        MemoryAdded: "memory", SummaryAdded: "summary", RecordsRemoved: "removed",
        QuarantineChanged: "quarantine",
    }[type(event)]  # fmt: skip
    return f"{EVENTS_SUBJECT}.{kind}"


class MemoryStore:
    """Opened once per process; every handler of the memory domain shares it.

    Observations are read and written only through the `*_observation(s)` methods: they
    are records on MEM_EVENTS found through an index (functions/kernel/observation_records.py),
    not a KV bucket. The other records are KV buckets (`memories`, `sessions` ...)."""

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
        # A replay past the duplicate window is the index's: it is never older than half.
        self._observations = ObservationRecords(client, self.events, stale=DUPLICATE_WINDOW / 2)
        self.memories: Bucket
        self.sessions: Bucket
        self.audit_log: Bucket
        self.summaries: Bucket

    async def open(self) -> MemoryStore:
        c = self.client
        # Memories are read by key, at random: nats-server loads, and decompresses, a whole
        # block to read one, which compression makes dearer (see store_compression); the
        # event log, read in order, is compressed.
        self.memories = await c.bucket(MEMORIES_BUCKET, compression=records_compression())
        self.sessions = await c.bucket(SESSIONS_BUCKET)
        self.audit_log = await c.bucket(AUDIT_BUCKET)
        self.summaries = await c.bucket(SUMMARIES_BUCKET)
        await self.ensure_stream()
        await self._observations.open()
        # A data dir of the layout before records on MEM_EVENTS: brought to it in place
        # (once; the other processes wait for the one doing it).
        await upgrade_observations(c, self.events, self._observations)
        await self._observations.repair()
        return self

    async def close(self) -> None:
        """What this process wrote is folded into the observation index before it goes."""
        await self._observations.close()

    async def ensure_stream(self) -> None:
        await self.events.ensure()
        # A stream made before events were per project kept a 600 s window of msg ids:
        # at 2,000 observations a second that is ~250 MB of nats-server's memory.
        changed = await self.events.settle(duplicate_window=int(DUPLICATE_WINDOW * 1e9))
        if changed:
            log.warning("%s: duplicate window set to %.0f s (the per-project event layout)",
                        EVENTS_STREAM, DUPLICATE_WINDOW)  # fmt: skip

    async def publish(self, event: MemEvent, msg_id: str | None = None) -> int:
        """Append to MEM_EVENTS and wait for JetStream's ack; `msg_id` makes a retry a no-op.
        Not for observations: their events are their records (`add_observation` ...)."""
        if isinstance(event, ObservationAdded):
            raise TypeError("an observation is stored with add_observation/put_observation")
        data = _event_encoder.encode(event)
        ack = await self.events.publish(
            _event_subject(event), data, msg_id=msg_id, timeout=PUBLISH_TIMEOUT
        )
        return ack.seq

    # ---- observations --------------------------------------------------------------
    async def add_observation(self, obs: Observation) -> bool:
        """Store a new observation once (the write path's create-once): False when its id
        is stored already or was forgotten. Exact under replays of any age."""
        return await self._observations.add(obs)

    async def put_observation(
        self, obs: Observation, *, replace: bool = True, revive: bool = False
    ) -> bool:
        """Store `obs` as it is: new, or (`replace`) as the next version of the stored
        one; over a forgotten id only with `revive`. False when nothing was written."""
        return await self._observations.put(obs, replace=replace, revive=revive)

    async def update_observation(
        self, obs_id: str, fn: Callable[[Observation], Observation | None]
    ) -> Observation | None:
        """Read-modify-write under compare-and-set: `fn` gets the stored record and returns
        its next version (None: unchanged). None when there is no record; else the record
        as stored after the call. A rewrite that read models must not count again sets a
        `revision` (see Observation.revision)."""
        return await self._observations.update(obs_id, fn)

    async def forget_observations(
        self, ids: Iterable[str], keep: Callable[[Observation], bool] | None = None
    ) -> list[Observation]:
        """Delete these observations (bytes erased), except where `keep` says no; the ones
        deleted. A forgotten id stays forgotten: a replay of its event is a duplicate.
        The caller tells the read models (RecordsRemoved) and the audit log."""
        return await self._observations.forget(ids, keep)

    async def get_observation(self, obs_id: str) -> Observation | None:
        return await self._observations.get(obs_id)

    async def get_observations(self, ids: Iterable[str]) -> dict[str, Observation]:
        """The stored ones of `ids`, by id."""
        return await self._observations.get_many(ids)

    async def observation_presence(self, obs_id: str) -> Presence:
        """present, deleted (forgotten), or absent (never stored)."""
        return await self._observations.presence(obs_id)

    def scan_observations(self, project: str = "") -> AsyncIterator[Observation]:
        """Every observation (of one project when given), a page at a time, oldest first."""
        return self._observations.scan(project)

    async def load_observations(self, project: str = "") -> list[Observation]:
        return [o async for o in self._observations.scan(project)]

    async def count_observations(self) -> int:
        return await self._observations.count()

    async def fold_observations(self) -> None:
        """Bring the observation index up to every record stored so far (a reader does not
        need it: it reads what the index has not folded from the stream)."""
        await self._observations.folder.fold()

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
