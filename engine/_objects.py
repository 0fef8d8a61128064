"""A JetStream object store: named blobs larger than a message (snapshots), stored in chunks
by nats-py's object store and handed back whole."""

from __future__ import annotations

import io
from typing import Any

import nats.js.errors

from engine import _jetstream, _reconcile
from engine._bus_errors import translate
from engine._connection import Connection

_FIELDS = {"ttl": "max_age", "replicas": "num_replicas"}


def _declared(config: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in config.items():
        field = _FIELDS.get(key, key)
        out[field] = _reconcile.declared_wire(field, value)
    return out


class Objects:
    """One bucket (`await Client.objects(bucket)`): put and get bytes by name."""

    def __init__(self, store: Any, bucket: str) -> None:
        self._store = store
        self.bucket = bucket

    @classmethod
    async def open(cls, conn: Connection, bucket: str, **config: Any) -> Objects:
        """The bucket, created with `config` (nats-py's create_object_store arguments: ttl,
        max_bytes, storage, replicas, description) if missing, or brought to it where it
        exists with other settings (engine/_reconcile.py; only what is passed is declared)."""
        js = conn.js

        async def once() -> Any:
            try:
                store = await js.object_store(bucket)
                if config:
                    await _reconcile.stream(
                        conn, f"OBJ_{bucket}", _declared(config), what=f"object store {bucket}"
                    )
            except nats.js.errors.BucketNotFoundError:
                made = {"replicas": conn.replicas, **config}
                try:
                    store = await js.create_object_store(bucket, **made)
                except nats.js.errors.BadRequestError:
                    store = await js.object_store(bucket)  # a racing peer created it
                if made["replicas"] > 1:
                    await _jetstream.wait_for_leader(conn, f"OBJ_{bucket}")
            return store

        try:
            store = await _jetstream.patiently(once, f"opening object store {bucket}")
        except Exception as exc:
            raise translate(exc, f"opening object store {bucket}") from None
        return cls(store, bucket)

    async def put(self, name: str, data: bytes | io.RawIOBase | io.BufferedIOBase) -> None:
        """Store `data` under `name`, replacing what was there once all of it is stored:
        bytes, or a reader (its `readinto` is called in a thread, chunk by chunk, so an
        object need never be whole in memory). Raises BusError when JetStream could not
        take it."""
        try:
            await self._store.put(name, data)
        except Exception as exc:
            raise translate(exc, f"storing {self.bucket}/{name}") from None

    async def get(self, name: str) -> bytes | None:
        """The object's bytes, or None when there is no such object (or it was deleted)."""
        # Into a buffer: without `writeinto` nats-py joins the chunks with `bytes +=`, which
        # is quadratic: 96 MB took 38.8 s to read, 2.0 s this way (ops/bench/objects.py).
        buf = io.BytesIO()
        try:
            res = await self._store.get(name, writeinto=buf)
        except (nats.js.errors.ObjectNotFoundError, nats.js.errors.ObjectDeletedError):
            return None
        except Exception as exc:
            raise translate(exc, f"reading {self.bucket}/{name}") from None
        return buf.getvalue() or bytes(res.data or b"")  # a link's target comes in `data`
