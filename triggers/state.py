"""The `state` trigger: a function per KV change, with the old and the new value.

Config keys of a `state` trigger:

- `bucket` (required): the KV bucket to follow.
- `key`: key pattern (`session.*`, `a.>`), default every key.
- `deliver`: "all" (default: the bucket's current entries first, then changes) or "new".
- `max_attempts` / `backoff` / `timeout`: like the stream trigger (5, 1 s, 30 s).

The function receives a `StateEvent` {bucket, key, op: created|updated|deleted, revision,
old?, new?} (old/new as JSON; a non-JSON value arrives as a JSON string). Changes of one
trigger are delivered one at a time in revision order through a durable consumer on the
bucket's stream, so a restarted worker resumes after the last acknowledged revision. The old
value comes from a shadow copy the trigger keeps in KV bucket `engine_state_shadow`.
A bucket keeps `history` revisions per key: with history 1, changes that follow each other
faster than the function runs collapse into the latest one (its `old` is still the last
value the function saw). Give the bucket a larger history to see every revision.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Literal

import msgspec
from nats.aio.msg import Msg

from engine import Bucket, Client, ConfigDrift, Entry, FunctionError, TriggerSpec, Worker
from triggers.consume import ConsumerBindings, ConsumerLoop, backoff_delay, ensure_consumer
from triggers.plugin import SpecWatcher

log = logging.getLogger("triggers.state")

SHADOW_BUCKET = "engine_state_shadow"
_any = msgspec.json.Decoder()


class StateConfig(msgspec.Struct, kw_only=True):
    bucket: str
    key: str = ">"
    deliver: Literal["all", "new"] = "all"
    max_attempts: int = 5
    backoff: float = 1.0
    timeout: float = 30.0


class StateEvent(msgspec.Struct, kw_only=True, omit_defaults=True):
    bucket: str
    key: str
    op: Literal["created", "updated", "deleted"]
    revision: int
    old: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    new: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET


def _as_json(value: bytes | None) -> msgspec.Raw | msgspec.UnsetType:
    if not value:
        return msgspec.UNSET
    try:
        _any.decode(value)
        return msgspec.Raw(value)
    except msgspec.DecodeError:
        return msgspec.Raw(msgspec.json.encode(value.decode("utf-8", "replace")))


class StateTrigger(ConsumerBindings):
    kind = "state"

    def __init__(self) -> None:
        self._client: Client | None = None
        self._shadow: Bucket | None = None
        super().__init__()

    def install(self, worker: Worker) -> None:
        pass

    async def start(self, client: Client) -> None:
        self._client = client
        self._shadow = await client.bucket(SHADOW_BUCKET)
        self._watcher = SpecWatcher(client, self)
        await self._watcher.start()

    async def apply(self, spec: TriggerSpec) -> None:
        cfg = msgspec.convert(spec.config, StateConfig)
        await self.remove(spec.key)
        self._pending[spec.key] = asyncio.create_task(self._bind(spec, cfg))

    async def _bind(self, spec: TriggerSpec, cfg: StateConfig) -> None:
        assert self._client is not None
        stream, durable = f"KV_{cfg.bucket}", f"trigger-{spec.id}"
        while True:
            try:
                await ensure_consumer(
                    self._client,
                    stream,
                    durable,
                    filter_subject=f"$KV.{cfg.bucket}.{cfg.key}",
                    max_ack_pending=1,
                    deliver=cfg.deliver,
                )
                break
            except ConfigDrift as drift:
                log.error("%s -> %s not bound: %s", spec.id, spec.function_id, drift.message)
                return
            except FunctionError as err:
                if err.code != "NOT_FOUND":
                    raise
                await asyncio.sleep(1.0)  # the bucket does not exist yet
        loop = ConsumerLoop(self._client.nc, stream, durable, self._handler(spec, cfg))
        loop.start()
        self._loops[spec.key] = loop
        log.debug("state %s/%s -> %s", cfg.bucket, cfg.key, spec.function_id)

    def _handler(self, spec: TriggerSpec, cfg: StateConfig) -> Any:
        client, shadow = self._client, self._shadow
        assert client is not None and shadow is not None
        prefix = f"$KV.{cfg.bucket}."

        async def handle(msg: Msg) -> None:
            md = msg.metadata
            key = msg.subject[len(prefix) :]
            hdrs = msg.headers or {}
            # A key whose own TTL ran out leaves the server's marker (Nats-Marker-Reason):
            # for a watcher of the bucket that is a deletion like any other.
            deleted = hdrs.get("KV-Operation") in ("DEL", "PURGE") or "Nats-Marker-Reason" in hdrs
            shadow_key = f"{spec.id}.{key}"
            old: Entry[bytes] | None = await shadow.entry(shadow_key, bytes)
            if deleted and old is None:
                await msg.ack()  # deleting what we never saw: nothing to report
                return
            op: Literal["created", "updated", "deleted"] = (
                "deleted" if deleted else "updated" if old is not None else "created"
            )
            event = StateEvent(
                bucket=cfg.bucket,
                key=key,
                op=op,
                revision=md.sequence.stream,
                old=_as_json(old.value if old else None),
                new=msgspec.UNSET if deleted else _as_json(msg.data),
            )
            headers = {"Idempotency-Key": f"{cfg.bucket}:{key}:{md.sequence.stream}"}
            try:
                await client.call(spec.function_id, event, timeout=cfg.timeout, headers=headers)
            except FunctionError as err:
                attempt = md.num_delivered or 1
                if attempt < cfg.max_attempts:
                    await msg.nak(delay=backoff_delay(attempt, cfg.backoff, 300))
                    return
                log.warning(
                    "state %s/%s rev %d skipped: %r", cfg.bucket, key, md.sequence.stream, err
                )
            if deleted:
                await shadow.delete(shadow_key)
            else:
                await shadow.kv.put(shadow_key, msg.data or b"")
            await msg.ack()

        return handle
