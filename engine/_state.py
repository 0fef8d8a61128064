"""Durable state: a JetStream KV bucket with typed values and compare-and-set updates."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Generic, Literal, TypeVar

import msgspec
import nats.errors
import nats.js.errors
from nats.js.api import KeyValueConfig, StorageType
from nats.js.client import JetStreamContext
from nats.js.kv import KeyValue

from engine import _codec, _tracing
from engine._errors import FunctionError

T = TypeVar("T")

Op = Literal["put", "delete"]


class Entry(msgspec.Struct, Generic[T]):
    key: str
    value: T
    revision: int


class Change(msgspec.Struct):
    """One KV event as a watcher sees it; `value` is None on delete."""

    key: str
    op: Op
    value: bytes | None
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
    if not _tracing._enabled or not _tracing.current_span().is_recording():
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


class State:
    """A KV bucket. Values are msgspec JSON; `type=` decodes into a Struct."""

    def __init__(self, kv: KeyValue, bucket: str) -> None:
        self.kv = kv
        self.bucket = bucket

    @classmethod
    async def open(
        cls,
        js: JetStreamContext,
        bucket: str,
        *,
        history: int = 1,
        ttl: float | None = None,
        replicas: int = 1,
        max_bytes: int | None = None,
        storage: Literal["file", "memory"] = "file",
    ) -> State:
        try:
            kv = await js.key_value(bucket)
        except nats.js.errors.BucketNotFoundError:
            cfg = KeyValueConfig(
                bucket=bucket,
                history=history,
                ttl=ttl,
                replicas=replicas,
                max_bytes=max_bytes if max_bytes is not None else -1,
                storage=StorageType.FILE if storage == "file" else StorageType.MEMORY,
            )
            try:
                kv = await js.create_key_value(cfg)
            except nats.js.errors.BadRequestError:
                kv = await js.key_value(bucket)  # a racing replica created it first
        return cls(kv, bucket)

    async def entry(self, key: str, type: type[T] | Any = Any) -> Entry[T] | None:
        try:
            e = await self.kv.get(key)
        except nats.js.errors.KeyNotFoundError:
            return None
        if e.value is None or e.operation in ("DEL", "PURGE"):
            return None
        return Entry(key, _codec.decode(e.value, type), e.revision or 0)

    async def get(self, key: str, type: type[T] | Any = Any) -> T | None:
        e = await self.entry(key, type)
        return None if e is None else e.value

    async def put(self, key: str, value: Any) -> int:
        span = _kv_span("put", self.bucket)
        try:
            return await self.kv.put(key, _codec.encode(value))
        finally:
            if span is not None:
                span.end()

    async def create(self, key: str, value: Any) -> int | None:
        """Store only if absent (atomic across replicas). None when the key exists."""
        span = _kv_span("create", self.bucket)
        try:
            return await self.kv.create(key, _codec.encode(value))
        except nats.js.errors.KeyWrongLastSequenceError:
            return None
        finally:
            if span is not None:
                span.end()

    async def compare_and_set(self, key: str, value: Any, revision: int) -> int:
        """Write only if the key is still at `revision` (0: absent). Raises CasConflict."""
        span = _kv_span("update", self.bucket)
        try:
            if revision == 0:
                rev = await self.kv.create(key, _codec.encode(value))
            else:
                rev = await self.kv.update(key, _codec.encode(value), last=revision)
        except nats.js.errors.KeyWrongLastSequenceError:
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
        fn: Callable[[T | None], T | None] | Callable[[T | None], Awaitable[T | None]],
        *,
        type: type[T] | Any = Any,
        attempts: int = 64,
    ) -> T | None:
        """Read-modify-write with compare-and-set, retried on conflict.

        `fn` gets the current value (None when absent) and returns the new one; returning
        None leaves the key unchanged.
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
                return new  # type: ignore[return-value]
            except CasConflict:
                # Full jitter: contenders that collided spread out instead of colliding again.
                await asyncio.sleep(random.uniform(0, min(0.001 * (2**attempt), 0.1)))
        raise CasConflict(self.bucket, key)

    async def delete(self, key: str) -> None:
        span = _kv_span("delete", self.bucket)
        try:
            await self.kv.delete(key)
        finally:
            if span is not None:
                span.end()

    async def keys(self, prefix: str = "") -> list[str]:
        """Live keys (deleted ones left out) starting with `prefix`.

        nats-py's watcher may send its end-of-snapshot marker before the snapshot's first
        entries (it checks the consumer's pending count while they are in flight), which made
        a listing come back short. So the stream's per-subject state says how many subjects
        there are (a deleted key still has its marker), and the watcher is read until that
        many entries arrived, or until it stays quiet after the marker.
        """
        # A prefix ending at a token boundary becomes a server-side subject filter.
        pattern = f"{prefix}>" if prefix.endswith(".") else ">"
        pre = f"$KV.{self.bucket}."
        info = await self.kv._js.stream_info(f"KV_{self.bucket}", subjects_filter=pre + pattern)
        expected = len(info.state.subjects or {})
        if expected == 0:
            return []
        watcher = await self.kv.watch(pattern, meta_only=True)
        out: list[str] = []
        seen = 0
        marker = False
        try:
            while seen < expected:
                try:
                    e = await watcher.updates(timeout=0.5 if marker else 5.0)
                except nats.errors.TimeoutError:
                    break  # keys removed since the count: what arrived is the listing
                if e is None:
                    marker = True
                    continue
                seen += 1
                if e.operation not in ("DEL", "PURGE") and e.key.startswith(prefix):
                    out.append(e.key)
        finally:
            await watcher.stop()
        return out

    async def watch(
        self, pattern: str = ">", *, include_existing: bool = True
    ) -> AsyncIterator[Change]:
        """Changes in order; with `include_existing` the current values come first."""
        watcher = await self.kv.watch(pattern, include_history=False)
        initial = True  # until the watcher's end-of-snapshot marker (None)
        try:
            while True:
                try:
                    e = await watcher.updates(timeout=3600)
                except nats.errors.TimeoutError:
                    continue
                if e is None:
                    initial = False
                    continue
                deleted = e.operation in ("DEL", "PURGE")
                if initial and (deleted or not include_existing):
                    continue
                if deleted:
                    yield Change(e.key, "delete", None, e.revision or 0)
                else:
                    yield Change(e.key, "put", e.value, e.revision or 0)
        finally:
            await watcher.stop()
