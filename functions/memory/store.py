"""The memory domain's durable state: its KV buckets, the MEM_EVENTS stream, the audit log,
and what a process of the memory worker remembers about itself (boot id, scope)."""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import secrets
import time
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar

import msgspec
import nats.errors
import nats.js.errors
from nats.js.api import StreamConfig
from nats.js.kv import KeyValue

from engine import Client, State
from functions.records import (
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
    MemoryAdded,
    ObservationAdded,
    RecordsRemoved,
    SummaryAdded,
)

T = TypeVar("T")

# Errors that mean "JetStream could not take the write right now": the caller may retry.
STORE_ERRORS: tuple[type[BaseException], ...] = (
    nats.errors.Error,
    nats.js.errors.Error,
    asyncio.TimeoutError,
    TimeoutError,
    ConnectionError,
)
PUBLISH_TIMEOUT = 5.0
DUPLICATE_WINDOW = 600.0

_event_encoder = msgspec.json.Encoder()
Presence = Literal["present", "deleted", "absent"]


_KEY_OK = re.compile(r"^[-/_=a-zA-Z0-9]+(?:\.[-/_=a-zA-Z0-9]+)*$")


def kv_key(raw: str) -> str:
    """A KV key for an id from outside (session ids, imported ids): valid keys are kept,
    anything else (spaces, ':', '..', too long) becomes a stable hash."""
    if len(raw) <= 200 and _KEY_OK.match(raw):
        return raw
    return "_h_" + hashlib.sha256(raw.encode()).hexdigest()[:40]


def now_iso() -> str:
    """The current UTC time as `2026-01-31T12:34:56.789Z`."""
    return _iso_millis(time.time_ns())


# The date and time of day change once a second: formatted then, not on every call (a
# datetime and its isoformat cost ~2 µs, on every write). time.time_ns() reads the clock
# datetime.now() reads, and datetime floors it to the microsecond and isoformat to the
# millisecond: the integer divisions below.
_iso_second: tuple[int, str] = (-1, "")


def _iso_millis(ns: int) -> str:
    global _iso_second
    second, prefix = _iso_second
    if ns // 1_000_000_000 != second:
        second = ns // 1_000_000_000
        prefix = datetime.fromtimestamp(second, UTC).isoformat().removesuffix("+00:00")
        _iso_second = (second, prefix)
    return f"{prefix}.{ns // 1_000_000 % 1000:03d}Z"


def new_id(prefix: str) -> str:
    return f"{prefix}_{int(time.time() * 1000):x}{secrets.token_hex(6)}"


def _event_subject(event: MemEvent) -> str:
    if isinstance(event, ObservationAdded):
        # One subject per observation: "has this observation's event been written?" is then
        # a per-subject sequence check that JetStream answers on the write itself.
        return f"{EVENTS_SUBJECT}.observation.{kv_key(event.observation.id)}"
    kind = {MemoryAdded: "memory", SummaryAdded: "summary", RecordsRemoved: "removed"}[type(event)]
    return f"{EVENTS_SUBJECT}.{kind}"


class _ApiError(msgspec.Struct):
    code: int = 0
    err_code: int = 0
    description: str = ""


class _PubAck(msgspec.Struct):
    stream: str = ""
    seq: int = 0
    duplicate: bool = False
    error: _ApiError | None = None


class JetStreamWriteError(nats.errors.Error):
    """JetStream refused a write (full stream, wrong last sequence …)."""

    def __init__(self, err: _ApiError) -> None:
        super().__init__(f"jetstream: {err.description} (err_code {err.err_code})")
        self.err_code = err.err_code


WRONG_LAST_SEQUENCE = 10071
_ack_decoder = msgspec.json.Decoder(_PubAck)


class MemoryStore:
    """Opened once per process; every handler of the memory domain shares it."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.js = client.nc.jetstream()
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
        try:
            await self.js.stream_info(EVENTS_STREAM)
            return
        except nats.js.errors.NotFoundError:
            pass
        cfg = StreamConfig(
            name=EVENTS_STREAM,
            subjects=[f"{EVENTS_SUBJECT}.>"],
            duplicate_window=DUPLICATE_WINDOW,
        )
        try:
            await self.js.add_stream(cfg)
        except nats.js.errors.BadRequestError:
            await self.js.stream_info(EVENTS_STREAM)  # created concurrently by a peer

    async def publish(self, event: MemEvent, msg_id: str | None = None) -> int:
        """Append to MEM_EVENTS and wait for JetStream's ack; `msg_id` makes a retry a no-op."""
        headers = {"Nats-Expected-Stream": EVENTS_STREAM}
        if msg_id:
            headers["Nats-Msg-Id"] = msg_id
        ack = await self._write(_event_subject(event), _event_encoder.encode(event), headers)
        return ack.seq

    async def publish_once(self, event: ObservationAdded) -> bool:
        """Append an observation's event unless its subject already holds one: False when it
        was there (a replay), whatever the age of the first write."""
        seq = await self._write_once(
            _event_subject(event),
            _event_encoder.encode(event),
            {"Nats-Expected-Stream": EVENTS_STREAM},
        )
        return seq is not None

    async def kv_create_fast(self, state: State, key: str, value: Any) -> int | None:
        """KV create: None when the key holds a value or a tombstone (a deleted key is never
        re-created this way, so a forgotten observation stays forgotten)."""
        return await self._write_once(
            f"$KV.{state.bucket}.{kv_key(key)}", _event_encoder.encode(value), {}
        )

    async def _write_once(self, subject: str, data: bytes, headers: dict[str, str]) -> int | None:
        """A write that lands only on an empty subject (expected last subject sequence 0):
        its sequence, or None when the subject already holds a message or a tombstone."""
        headers["Nats-Expected-Last-Subject-Sequence"] = "0"
        try:
            ack = await self._write(subject, data, headers)
        except JetStreamWriteError as err:
            if err.err_code == WRONG_LAST_SEQUENCE:
                return None
            raise
        return ack.seq

    async def _write(self, subject: str, data: bytes, headers: dict[str, str] | None) -> _PubAck:
        # The observe hot path writes twice per call: a plain request with a msgspec decoded
        # ack costs about half of nats-py's JetStream/KV wrappers (json + dataclasses).
        msg = await self.client.request(subject, data, PUBLISH_TIMEOUT, headers)
        ack = _ack_decoder.decode(msg.data)
        if ack.error is not None:
            raise JetStreamWriteError(ack.error)
        return ack

    async def presence(self, state: State, key: str) -> Presence:
        """Whether a key holds a value, was deleted (tombstone kept), or never existed."""
        kv: KeyValue = state.kv
        try:
            e = await kv.get(kv_key(key))
        except nats.js.errors.KeyNotFoundError as err:
            # nats-py reports a tombstone as "not found" carrying the DEL/PURGE operation
            return "deleted" if err.op in ("DEL", "PURGE") else "absent"
        return "deleted" if e.operation in ("DEL", "PURGE") else "present"

    async def get(self, state: State, key: str, type_: type[T]) -> T | None:
        try:
            return await state.get(kv_key(key), type_)
        except nats.js.errors.KeyDeletedError:
            return None

    async def keys(self, state: State, prefix: str = "") -> list[str]:
        """Keys of a bucket (tombstoned ones included: reading them gives None).

        Read from the stream's per-subject state rather than a KV watcher: nats-py's
        `keys()` watcher can report "no keys" when its first messages race the consumer
        info it checks, and a list that is silently empty would make a replace-import or
        a forget skip records.
        """
        pre = f"$KV.{state.bucket}."
        info = await self.js.stream_info(f"KV_{state.bucket}", subjects_filter=f"{pre}>")
        subjects = info.state.subjects or {}
        return sorted(k for k in (s[len(pre) :] for s in subjects) if k.startswith(prefix))

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
        at = now_iso()
        entry = AuditEntry(
            id=new_id("aud"),
            at=at,
            action=action,
            target_ids=target_ids,
            reason=reason,
            actor=actor,
            project=project,
        )
        key = f"{at[:4]}{at[5:7]}.{int(time.time() * 1000):013d}-{entry.id}"
        await self.audit_log.put(key, entry)
        return entry

    def visible(self, record_agent: str, agent_id: str) -> bool:
        """Isolated scope: a reader sees only its own agent's records (and unscoped ones
        only when it is itself unscoped)."""
        return not self.isolated or record_agent == agent_id

    def default_agent(self, agent_id: str) -> str:
        return agent_id or self._default_agent


def decode_any(data: bytes) -> Any:
    return msgspec.json.decode(data)
