"""Watching a KV bucket: every key's current value, an end-of-snapshot marker, then each
change as it is stored; the iteration ends when the watch is stopped or its connection
closes.

Why not nats-py's KeyWatcher: it sends its end-of-snapshot marker as soon as the consumer
info it asks for shows nothing pending, counting only the messages this process has
handled, so the marker could overtake the snapshot's first entries (a listing came back
short). Here the marker follows the first message the server sent with nothing pending
after it, or, for an empty snapshot, consumer info that shows nothing delivered and nothing
pending. Changes are handed over through one bounded queue read by async iteration: no
`wait_for` per message (a task each), which cost a watcher sharing a process with writes
a third of their speed (functions/graph/mirror.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
from typing import Any, Literal

import msgspec
from nats.aio.msg import Msg
from nats.js.api import DeliverPolicy

from engine._bus_errors import translate
from engine._connect import closed_event
from engine._connection import Connection

Op = Literal["put", "delete"]
QUEUE = 256
CLOSED_CHECK = 0.5
"""Seconds between checks that the connection is still open (a closed one sends nothing)."""
INACTIVE = 300.0
_DELETES = ("DEL", "PURGE")
_MARKER_OPS: dict[str, Op] = {"MaxAge": "delete", "Purge": "delete", "Remove": "delete"}


class Change(msgspec.Struct):
    """One KV event as a watcher sees it; `value` is None on delete."""

    key: str
    op: Op
    value: bytes | None
    revision: int


class SnapshotEnd(msgspec.Struct, frozen=True):
    """Yielded once by a watch, after the value of every key that existed when it started."""


class _Stop(enum.Enum):
    """What `_end` queues to end the iteration (an enum member: mypy narrows `is` on it)."""

    STOP = enum.auto()


_END = SnapshotEnd()
_STOP = _Stop.STOP


class Watch:
    """An async iterator of `Change` and one `SnapshotEnd`; `stop()` ends it (also as an
    async context manager)."""

    def __init__(self, conn: Connection, bucket: str, pattern: str, *, values: bool) -> None:
        self._conn = conn
        self._bucket = bucket
        self._pattern = pattern
        self._values = values
        self._prefix = len(f"$KV.{bucket}.")
        self._queue: asyncio.Queue[Change | SnapshotEnd | _Stop] = asyncio.Queue(maxsize=QUEUE)
        self._sub: Any = None
        self._marked = False
        self._done = False
        self._closing: asyncio.Task[None] | None = None

    async def start(self) -> Watch:
        what = f"watching {self._bucket}/{self._pattern}"
        try:
            self._sub = await self._conn.js.subscribe(
                f"$KV.{self._bucket}.{self._pattern}",
                stream=f"KV_{self._bucket}",
                cb=self._on_msg,
                ordered_consumer=True,
                deliver_policy=DeliverPolicy.LAST_PER_SUBJECT,
                headers_only=not self._values or None,
                inactive_threshold=INACTIVE,
            )
            info = await self._sub.consumer_info()
        except Exception as exc:
            await self.stop()
            raise translate(exc, what) from None
        delivered = info.delivered.consumer_seq if info.delivered else 0
        if not self._marked and not info.num_pending and not delivered:
            self._marked = True  # nothing matched: the snapshot is empty
            await self._queue.put(_END)
        self._closing = asyncio.create_task(self._on_close())
        return self

    async def _on_msg(self, msg: Msg) -> None:
        md = msg.metadata
        headers = msg.headers
        op: Op = "put"
        if headers:
            kv_op = headers.get("KV-Operation")
            if kv_op in _DELETES:
                op = "delete"
            elif kv_op is None and (reason := headers.get("Nats-Marker-Reason")):
                # nats-server 2.11+ marks TTL and age expiry this way; unknown reasons skip
                marked = _MARKER_OPS.get(reason)
                if marked is None:
                    return await self._snapshot_done(md.num_pending)
                op = marked
        value = None if op == "delete" else msg.data
        await self._queue.put(Change(msg.subject[self._prefix :], op, value, md.sequence.stream))
        if not md.num_pending and not self._marked:
            await self._snapshot_done(0)

    async def _snapshot_done(self, pending: int) -> None:
        if not pending and not self._marked:
            self._marked = True
            await self._queue.put(_END)

    async def _on_close(self) -> None:
        nc = self._conn.nc
        closed = closed_event(nc)
        if closed is not None:  # our own connection says when it closes: no polling
            await closed.wait()
        else:
            while not nc.is_closed:  # noqa: ASYNC110 - nats-py offers no event to await
                await asyncio.sleep(CLOSED_CHECK)
        self._end()

    def _end(self) -> None:
        self._done = True
        while True:
            try:
                self._queue.put_nowait(_STOP)
                return
            except asyncio.QueueFull:
                with contextlib.suppress(asyncio.QueueEmpty):
                    self._queue.get_nowait()  # a stopped watch drops what was not read

    async def stop(self) -> None:
        if self._closing is not None and self._closing is not asyncio.current_task():
            self._closing.cancel()
        if self._sub is not None:
            with contextlib.suppress(Exception):  # a closed connection: nothing to undo
                await self._sub.unsubscribe()
        self._end()

    def __aiter__(self) -> Watch:
        return self

    async def __anext__(self) -> Change | SnapshotEnd:
        if self._done and self._queue.empty():
            raise StopAsyncIteration
        item = await self._queue.get()
        if item is _STOP:
            raise StopAsyncIteration
        return item

    async def __aenter__(self) -> Watch:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.stop()
