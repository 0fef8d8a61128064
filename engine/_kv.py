"""Durable state: a JetStream KV bucket with typed values and compare-and-set updates."""

from __future__ import annotations

import asyncio
import logging
import math
import random
import re
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, Generic, Literal, TypeVar

import msgspec
import nats.js.errors
from nats.js.api import (
    DiscardPolicy,
    KeyValueConfig,
    StorageType,
    StoreCompression,
    StreamConfig,
)
from nats.js.kv import KeyValue

from engine import _codec, _jetstream, _reconcile, _scan, _tracing
from engine._bus_errors import BusError, WrongLastSequence
from engine._connection import Connection
from engine._errors import FunctionError
from engine._jetstream_api import LastMessage, StreamInfo
from engine._watch import Change, Op, SnapshotEnd, Watch

T = TypeVar("T")
log = logging.getLogger("engine.state")

Presence = Literal["present", "deleted", "absent"]
CREATE_TIMEOUT = 5.0
WRITE_TIMEOUT = 5.0
_DELETED = ("DEL", "PURGE")
_KEY_RE = re.compile(r"^[-/_=.a-zA-Z0-9]+$")


def valid_key(key: str) -> bool:
    """A key JetStream KV can hold (the rule nats-py checks before sending)."""
    return bool(key) and key[0] != "." and key[-1] != "." and bool(_KEY_RE.match(key))


def _check_key(bucket: str, key: str) -> None:
    # A write with a key from outside (an id a client sent) fails as the client's error,
    # naming what is wrong, not as nats-py's InvalidKeyError (a 500).
    if not valid_key(key):
        raise FunctionError(
            "BAD_REQUEST",
            f"{key[:80]!r} cannot be a key of {bucket}: use letters, digits and - / _ = . "
            "(not at either end)",
        )


_EXPECT = "Nats-Expected-Last-Subject-Sequence"
_MARKER = "Nats-Marker-Reason"
_TTL = "Nats-TTL"
__all__ = ["Bucket", "CasConflict", "Change", "Entry", "Op", "Presence"]


class Entry(msgspec.Struct, Generic[T]):
    key: str
    value: T
    revision: int


class CasConflict(FunctionError):
    def __init__(self, bucket: str, key: str) -> None:
        super().__init__(
            "CONFLICT",
            f"{bucket}/{key} changed concurrently; retry with the new revision",
            retryable=True,
        )


def _kv_span(op: str, bucket: str) -> Any:
    # Only inside a recorded trace: a KV write is a child of the call that made it.
    if not _tracing.active or not _tracing.current_span().is_recording():
        return None
    return _tracing.start(
        f"kv.{op} {bucket}",
        _tracing.SpanKind.CLIENT,
        {
            "db.system.name": "nats-kv",
            "db.operation.name": op,
            "db.collection.name": bucket,
        },
    )


def ttl_header(ttl: float) -> str:
    """`Nats-TTL` for `ttl` seconds: JetStream keeps a message TTL in whole seconds (it
    truncates "1500ms" to 1 s), so a TTL is rounded up, never down: a key lives at least
    `ttl` seconds."""
    if not ttl > 0:
        raise ValueError(f"ttl must be positive, got {ttl!r}")
    return str(max(1, math.ceil(ttl)))


def _kv_stream(cfg: KeyValueConfig, compression: str) -> StreamConfig:
    """The stream of a new KV bucket, as the KV convention (NATS ADR-8) lays it out, with
    compression: nats-py's KeyValueConfig cannot ask for it, and nats-server applies a
    compression turned on later by an update only from its next start."""
    window = min(120.0, cfg.ttl) if cfg.ttl else 120.0
    return StreamConfig(
        name=f"KV_{cfg.bucket}",
        description=cfg.description,
        subjects=[f"$KV.{cfg.bucket}.>"],
        allow_direct=cfg.direct,
        allow_rollup_hdrs=True,
        allow_msg_ttl=True,
        deny_delete=True,
        discard=DiscardPolicy.NEW,
        duplicate_window=window,
        max_age=cfg.ttl,
        max_bytes=cfg.max_bytes,
        max_consumers=-1,
        max_msg_size=cfg.max_value_size,
        max_msgs=-1,
        max_msgs_per_subject=cfg.history,
        num_replicas=cfg.replicas,
        storage=cfg.storage,
        compression=StoreCompression(compression),
        subject_delete_marker_ttl=cfg.limit_marker_ttl or None,
    )


def _declared(
    history: int | None,
    ttl: float | None,
    replicas: int | None,
    max_bytes: int | None,
    storage: str | None,
    marker_ttl: float | None,
    compression: str | None = None,
) -> dict[str, Any]:
    """A bucket's declared settings as fields of its stream (KV_<bucket>), API form."""
    out: dict[str, Any] = {}
    if history is not None:
        out["max_msgs_per_subject"] = history
    if ttl is not None:
        out["max_age"] = _reconcile.declared_wire("max_age", ttl)
    if replicas is not None:
        out["num_replicas"] = replicas
    if max_bytes is not None:
        out["max_bytes"] = _reconcile.normal("max_bytes", max_bytes)
    if storage is not None:
        out["storage"] = storage
    if compression is not None:
        out["compression"] = _reconcile.normal("compression", compression)
    if marker_ttl is not None:
        out["allow_msg_ttl"] = True
        out["subject_delete_marker_ttl"] = _reconcile.declared_wire(
            "subject_delete_marker_ttl", marker_ttl
        )
    return out


class Bucket:
    """A KV bucket. Values are msgspec JSON; `type=` decodes into a Struct.

    Made by `Client.bucket`. The bucket-wide operations (keys, scan, watch, info, purge)
    need the connection it came from (`Client.connection`): a Bucket built by hand without
    one has only the per-key operations."""

    def __init__(
        self,
        kv: KeyValue,
        bucket: str,
        connection: Connection | None = None,
        direct: bool = False,
    ) -> None:
        self.kv = kv
        self.bucket = bucket
        self._conn = connection
        self._prefix = f"$KV.{bucket}."
        self._stream = f"KV_{bucket}"
        self._direct = direct and connection is not None
        """Its stream answers batched direct gets (`entries`): one server holds it."""

    def _bus(self) -> Connection:
        if self._conn is None:
            raise RuntimeError(
                f"Bucket {self.bucket!r} was made without its connection: open it with "
                "Client.bucket()"
            )
        return self._conn

    @classmethod
    async def open(
        cls,
        conn: Connection,
        bucket: str,
        *,
        history: int | None = None,
        ttl: float | None = None,
        replicas: int | None = None,
        max_bytes: int | None = None,
        storage: Literal["file", "memory"] | None = None,
        marker_ttl: float | None = None,
        compression: Literal["s2", "none"] | None = None,
    ) -> Bucket:
        """The bucket, created with this config if missing (history 1, no age limit, file
        storage, the client's replicas unless given), or brought to the settings given here
        when it exists with others (engine/_reconcile.py): only what is passed is declared,
        so opening a bucket without config changes nothing but direct gets (allowed with
        one replica, not with more). `history`: values kept per
        key. `ttl`: the bucket's maximum age in seconds (0: none). `max_bytes` (-1: none).
        `marker_ttl`: when a key's own TTL (`ttl=` on create, put, compare_and_set) runs
        out, the server leaves a deletion marker that watchers and state triggers see, kept
        `marker_ttl` seconds; without it an expired key vanishes silently. `compression`:
        "s2" stores the bucket's blocks compressed on disk (full blocks: the one being
        written stays plain); an old bucket is brought to it in place, which nats-server
        applies to the blocks it writes from its next start."""
        declared = _declared(history, ttl, replicas, max_bytes, storage, marker_ttl, compression)
        if replicas is None:
            replicas = conn.replicas
        # Direct gets are answered by any replica, a follower perhaps behind the last write:
        # allowed only where one server holds the bucket (then they cost the server a third
        # of a stream message get, and `entries` batches them). A bucket that exists keeps
        # its replicas: its own count decides (`_open`).
        direct = replicas == 1
        config = KeyValueConfig(
            bucket=bucket,
            history=history or 1,
            ttl=ttl or None,
            replicas=replicas,
            max_bytes=max_bytes if max_bytes is not None else -1,
            storage=StorageType.MEMORY if storage == "memory" else StorageType.FILE,
            limit_marker_ttl=marker_ttl,
            direct=direct,
        )
        kv, direct = await _jetstream.patiently(
            lambda: cls._open(conn, bucket, config, declared), f"opening KV bucket {bucket}"
        )
        return cls(kv, bucket, conn, direct)

    @staticmethod
    async def _open(
        conn: Connection, bucket: str, cfg: KeyValueConfig, declared: dict[str, Any]
    ) -> tuple[KeyValue, bool]:
        """The bucket, and whether it answers direct gets (one replica: they are allowed,
        in place for a bucket made before)."""
        js = conn.js
        try:
            kv = await js.key_value(bucket)
            stored = (await js.stream_info(f"KV_{bucket}")).config
            replicas = declared.get("num_replicas", stored.num_replicas or 1)
            if (replicas == 1) != bool(stored.allow_direct):
                declared = {**declared, "allow_direct": replicas == 1}
            if declared:
                await _reconcile.stream(conn, f"KV_{bucket}", declared, what=f"KV bucket {bucket}")
            return kv, replicas == 1
        except nats.js.errors.BucketNotFoundError:
            compression = declared.get("compression", "none")
            try:
                if compression == "none":
                    kv = await js.create_key_value(cfg)
                else:
                    await js.add_stream(_kv_stream(cfg, compression))
                    kv = await js.key_value(bucket)
            except nats.js.errors.BadRequestError:
                kv = await js.key_value(bucket)  # a racing replica created it first
            if (cfg.replicas or 1) > 1:
                await _jetstream.wait_for_leader(conn, f"KV_{bucket}", CREATE_TIMEOUT)
        return kv, bool(cfg.direct)

    async def entry(self, key: str, type: type[T] | Any = Any) -> Entry[T] | None:
        if not valid_key(key):
            return None  # no record can live under it
        try:
            e = await self.kv.get(key)
        except nats.js.errors.KeyNotFoundError:
            return None
        if e.value is None or e.operation in ("DEL", "PURGE"):
            return None
        if not e.value and await self._is_marker(key):
            return None
        return Entry(key, _codec.decode(e.value, type), e.revision or 0)

    async def entries(self, keys: list[str], type: type[T] | Any = Any) -> list[Entry[T] | None]:
        """`entry` of each key, in order. On a bucket one server holds (direct gets
        allowed), one request per DIRECT_BATCH keys brings their last values, where `entry`
        takes a round trip each: a fold that reads thousands of records costs a few
        requests. Elsewhere, or if the server refuses the batch, key by key."""
        out: list[Entry[T] | None] = []
        for i in range(0, len(keys), _jetstream.DIRECT_BATCH):
            out.extend(await self._entries(keys[i : i + _jetstream.DIRECT_BATCH], type))
        return out

    async def _entries(self, keys: list[str], type: type[T] | Any) -> list[Entry[T] | None]:
        valid = [k for k in keys if valid_key(k)]
        if self._direct and valid:
            try:
                got = await _jetstream.last_messages(
                    self._bus(), self._stream, [self._prefix + k for k in dict.fromkeys(valid)]
                )
            except BusError as err:
                log.warning("%s: batched read refused, reading key by key (%s)", self.bucket, err)
            else:
                return [self._entry_of(k, got.get(self._prefix + k), type) for k in keys]
        return list(await asyncio.gather(*(self.entry(k, type) for k in keys)))

    async def deleted(self, keys: list[str]) -> set[str]:
        """Which of `keys` hold a tombstone (deleted, or their TTL ran out): batched like
        `entries` where the bucket allows it, else a `presence` each."""
        out: set[str] = set()
        valid = [k for k in dict.fromkeys(keys) if valid_key(k)]
        for i in range(0, len(valid), _jetstream.DIRECT_BATCH):
            chunk = valid[i : i + _jetstream.DIRECT_BATCH]
            if self._direct:
                try:
                    got = await _jetstream.last_messages(
                        self._bus(), self._stream, [self._prefix + k for k in chunk]
                    )
                except BusError as err:
                    log.warning(
                        "%s: batched read refused, reading key by key (%s)", self.bucket, err
                    )
                else:
                    for k in chunk:
                        msg = got.get(self._prefix + k)
                        if msg is not None and (
                            msg.headers.get("KV-Operation") in _DELETED or _MARKER in msg.headers
                        ):
                            out.add(k)
                    continue
            states = await asyncio.gather(*(self.presence(k) for k in chunk))
            out.update(k for k, st in zip(chunk, states, strict=True) if st == "deleted")
        return out

    def _entry_of(self, key: str, msg: LastMessage | None, type: type[T] | Any) -> Entry[T] | None:
        if msg is None or not valid_key(key):
            return None
        if msg.headers.get("KV-Operation") in _DELETED or _MARKER in msg.headers:
            return None  # a tombstone, or the marker a key's own TTL left
        return Entry(key, _codec.decode(msg.data, type), msg.seq)

    async def _is_marker(self, key: str) -> bool:
        # A key whose own TTL ran out in a bucket with `marker_ttl` holds the server's
        # marker: an empty message with a Nats-Marker-Reason header, which nats-py's KV get
        # returns as an empty value. Only an empty value is looked at twice.
        if self._conn is None:
            return False
        try:
            msg = await self._conn.js.get_msg(self._stream, subject=self._prefix + key)
        except nats.js.errors.NotFoundError:
            return False
        return bool(msg.headers and msg.headers.get(_MARKER))

    async def get(self, key: str, type: type[T] | Any = Any) -> T | None:
        e = await self.entry(key, type)
        return None if e is None else e.value

    async def put(self, key: str, value: Any, *, ttl: float | None = None) -> int:
        """Store `value`; with `ttl` (seconds, rounded up to whole seconds) JetStream removes
        the key when it runs out, unless a later write replaced it."""
        _check_key(self.bucket, key)
        span = _kv_span("put", self.bucket)
        try:
            if ttl is None:
                return await self.kv.put(key, _codec.encode(value))
            return await self._write(key, _codec.encode(value), {_TTL: ttl_header(ttl)})
        finally:
            if span is not None:
                span.end()

    async def _write(self, key: str, data: bytes, headers: dict[str, str]) -> int:
        """One publish to the key's subject; raises WrongLastSequence when an expected
        revision in `headers` did not hold."""
        ack = await _jetstream.publish(
            self._bus(), self._prefix + key, data, headers, WRITE_TIMEOUT
        )
        return ack.seq

    async def create(
        self, key: str, value: Any, *, over_tombstone: bool = True, ttl: float | None = None
    ) -> int | None:
        """Store only if absent (atomic across replicas); the new revision, or None when the
        key holds a value. A deleted key (or one whose TTL ran out) counts as absent unless
        `over_tombstone=False`: then a key that was ever written and deleted is never
        written again this way (one JetStream write, no read first, for the hot paths that
        want exactly that). `ttl`: seconds until JetStream removes the key (see `put`)."""
        _check_key(self.bucket, key)
        span = _kv_span("create", self.bucket)
        try:
            if not over_tombstone and ttl is None:
                return await self._create_on_empty_subject(key, _codec.encode(value))
            if ttl is None and self._conn is None:
                return await self.kv.create(key, _codec.encode(value))
            return await self._create(key, _codec.encode(value), ttl, over_tombstone)
        except nats.js.errors.KeyWrongLastSequenceError:
            return None
        finally:
            if span is not None:
                span.end()

    async def _create(
        self, key: str, data: bytes, ttl: float | None, over_tombstone: bool
    ) -> int | None:
        headers = {_EXPECT: "0"}
        if ttl is not None:
            headers[_TTL] = ttl_header(ttl)
        for _ in range(8):
            try:
                return await self._write(key, data, headers)
            except WrongLastSequence:
                if not over_tombstone:
                    return None
            # The subject holds a message: a live value (no), or a tombstone or an expiry
            # marker, which a write conditioned on its revision replaces atomically.
            gone = await self._deleted_revision(key)
            if gone is None:
                return None
            headers[_EXPECT] = str(gone)
        return None

    async def _deleted_revision(self, key: str) -> int | None:
        """The revision of the key's tombstone or expiry marker, 0 when the subject is empty
        now, None when the key holds a value."""
        try:
            e = await self.kv.get(key)
        except nats.js.errors.KeyNotFoundError as err:
            if err.op in _DELETED and err.entry is not None:
                return err.entry.revision or 0
            return 0
        if not e.value and await self._is_marker(key):
            return e.revision or 0
        return None

    async def _create_on_empty_subject(self, key: str, data: bytes) -> int | None:
        headers = {"Nats-Expected-Last-Subject-Sequence": "0"}
        try:
            ack = await _jetstream.publish(
                self._bus(), self._prefix + key, data, headers, CREATE_TIMEOUT
            )
        except WrongLastSequence:
            return None
        return ack.seq

    async def presence(self, key: str) -> Presence:
        """Whether `key` holds a value, was deleted (its tombstone kept), or never existed
        (or was purged)."""
        if not valid_key(key):
            return "absent"
        try:
            e = await self.kv.get(key)
        except nats.js.errors.KeyNotFoundError as err:
            # nats-py reports a tombstone as "not found" carrying the DEL/PURGE operation
            return "deleted" if err.op in _DELETED else "absent"
        if e.operation in _DELETED or (not e.value and await self._is_marker(key)):
            return "deleted"
        return "present"

    async def compare_and_set(
        self, key: str, value: Any, revision: int, *, ttl: float | None = None
    ) -> int:
        """Write only if the key is still at `revision` (0: absent). Raises CasConflict.
        `ttl`: seconds until JetStream removes the key (see `put`); a write without one
        leaves the key without a TTL."""
        _check_key(self.bucket, key)
        span = _kv_span("update", self.bucket)
        try:
            if ttl is not None or (revision == 0 and self._conn is not None):
                if revision == 0:
                    got = await self._create(key, _codec.encode(value), ttl, True)
                    if got is None:
                        raise nats.js.errors.KeyWrongLastSequenceError()
                    rev = got
                else:
                    assert ttl is not None
                    headers = {_EXPECT: str(revision), _TTL: ttl_header(ttl)}
                    rev = await self._write(key, _codec.encode(value), headers)
            elif revision == 0:
                rev = await self.kv.create(key, _codec.encode(value))
            else:
                rev = await self.kv.update(key, _codec.encode(value), last=revision)
        except (nats.js.errors.KeyWrongLastSequenceError, WrongLastSequence):
            if span is not None:
                span.set_attribute("error.type", "CONFLICT")
            raise CasConflict(self.bucket, key) from None
        finally:
            if span is not None:
                span.end()
        return rev

    async def update(
        self,
        key: str,
        fn: Callable[[T | None], T | None] | Callable[[T | None], Coroutine[Any, Any, T | None]],
        *,
        type: type[T] | Any = Any,
        attempts: int = 64,
    ) -> T | None:
        """Read-modify-write with compare-and-set, retried on conflict.

        `fn` (a plain or an `async def` function) gets the current value (None when absent)
        and returns the new one; returning None leaves the key unchanged.
        """
        for attempt in range(attempts):
            cur = await self.entry(key, type)
            new = fn(cur.value if cur else None)
            if asyncio.iscoroutine(new):
                new = await new
            if new is None:
                return cur.value if cur else None
            try:
                await self.compare_and_set(key, new, cur.revision if cur else 0)
                return new
            except CasConflict:
                # Full jitter: contenders that collided spread out instead of colliding again.
                await asyncio.sleep(random.uniform(0, min(0.001 * (2**attempt), 0.1)))
        raise CasConflict(self.bucket, key)

    async def delete(self, key: str, *, revision: int | None = None) -> None:
        """Delete `key` (its tombstone stays for watchers); with `revision`, only if the key
        is still at that revision, else CasConflict."""
        if not valid_key(key):
            return  # nothing can be stored under it
        span = _kv_span("delete", self.bucket)
        try:
            if revision is None:
                await self.kv.delete(key)
                return
            headers = {"KV-Operation": "DEL", _EXPECT: str(revision)}
            try:
                await self._write(key, b"", headers)
            except WrongLastSequence:
                raise CasConflict(self.bucket, key) from None
        finally:
            if span is not None:
                span.end()

    async def keys(self, prefix: str = "") -> list[str]:
        """Live keys (deleted ones left out) starting with `prefix`."""
        # A prefix ending at a token boundary becomes a server-side subject filter.
        pattern = f"{prefix}>" if prefix.endswith(".") else ">"
        out: list[str] = []
        async with await self.changes(pattern, values=False) as watch:
            async for ch in watch:
                if isinstance(ch, SnapshotEnd):
                    break
                if ch.op == "put" and ch.key.startswith(prefix):
                    out.append(ch.key)
        return out

    async def watch(
        self, pattern: str = ">", *, include_existing: bool = True
    ) -> AsyncIterator[Change]:
        """Changes in order; with `include_existing` the current values come first."""
        async with await self.changes(pattern) as watch:
            initial = True  # until the end-of-snapshot marker
            async for ch in watch:
                if isinstance(ch, SnapshotEnd):
                    initial = False
                elif not initial or (include_existing and ch.op == "put"):
                    yield ch

    async def changes(self, pattern: str = ">", *, values: bool = True) -> Watch:
        """A started watch of the keys matching `pattern`: each one's current value, then
        one `SnapshotEnd`, then every change as stored (deletes included). It ends when
        stopped (`async with` stops it) or when the connection closes."""
        return await Watch(self._bus(), self.bucket, pattern, values=values).start()

    def scan(
        self,
        keys: str | list[str],
        type: type[T],
        *,
        page: int = _scan.PAGE,
        timeout: float = _scan.FETCH_TIMEOUT,
    ) -> AsyncIterator[tuple[str, T]]:
        """(key, value) for every live key matching `keys` (NATS wildcards: `n.>`,
        `e.*.<id>.>`; a list is one pass with several filters), read `page` at a time so
        no whole bucket is held; values that do not decode as `type` are skipped. Raises
        BusError if a page does not come within `timeout`."""
        return _scan.scan_bucket(self._bus(), self.bucket, keys, type, page, timeout)

    async def stored_keys(self, pattern: str = ">") -> list[str]:
        """Every key matching `pattern` that holds a message, deleted ones included (their
        tombstone), from the stream's own subject listing."""
        subjects = await _jetstream.stream_subjects(
            self._bus(), self._stream, self._prefix + pattern
        )
        n = len(self._prefix)
        return [s[n:] for s in subjects]

    async def info(self) -> StreamInfo:
        """The bucket's stream now: messages, bytes, last sequence (the last revision)."""
        return await _jetstream.stream_info(self._bus(), self._stream)

    async def purge(self, pattern: str) -> int:
        """Remove the keys matching `pattern` with their history and no tombstone (so no
        watcher hears of it); how many messages went."""
        return await _jetstream.purge(self._bus(), self._stream, self._prefix + pattern)
