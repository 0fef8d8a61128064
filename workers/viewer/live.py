"""Live events for open pages, over one WebSocket per page (`/live?after=<seq>`).

Each socket follows MEM_EVENTS itself from the sequence its snapshot covered (an ordered
consumer: nothing is missed between the snapshot and the socket, nothing kept on the
server), so a page that reconnects and loads a new snapshot resumes exactly. Changes to
sessions, lessons, the audit log and the graph's counts, and the health the viewer process
checks, are shared by every socket (`Hub`). A heartbeat every few seconds carries the last
sequence and whether the bus is connected: a page that hears nothing, or hears that the bus
is gone, shows how stale it is.

Messages (JSON text frames):
  {"type": "hello", "seq", "health"}            on connect
  {"type": "event", "item": ActivityItem}        a MEM_EVENTS event
  {"type": "kv", "kind", "key", "op", "value"}   session | lesson | audit | graph
  {"type": "health", "health"}                   when the status changed
  {"type": "heartbeat", "seq", "bus", "at"}      every HEARTBEAT seconds
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

import msgspec
from nats.aio.msg import Msg
from starlette.websockets import WebSocket, WebSocketDisconnect

from engine import BusError, Client, FunctionError, StreamMessage
from functions.graph.wire import stats_wire
from functions.kernel.records import (
    AUDIT_BUCKET,
    GRAPH_BUCKET,
    LESSONS_BUCKET,
    SESSIONS_BUCKET,
    AuditEntry,
    GraphStats,
    Lesson,
    Session,
)
from functions.kernel.store import events_stream
from functions.kernel.views import AuditEntryView, SessionView, as_view, view
from functions.viewer.activity import Activity
from functions.viewer.health import HealthView, health_of

log = logging.getLogger("viewer.live")

HEARTBEAT = 5.0
QUEUE_LIMIT = 2000
_LessonView = view(Lesson)
_KV_OPS = {"DEL": "delete", "PURGE": "delete"}
# bucket -> (kind, subject filter, record type, view type)
_WATCHED: dict[str, tuple[str, str, Any, Any]] = {
    SESSIONS_BUCKET: ("session", ">", Session, SessionView),
    LESSONS_BUCKET: ("lesson", ">", Lesson, _LessonView),
    AUDIT_BUCKET: ("audit", ">", AuditEntry, AuditEntryView),
    GRAPH_BUCKET: ("graph", "stats", GraphStats, None),
}


def kv_message(bucket: str, key: str, op: str, data: bytes) -> bytes | None:
    kind, _, record, shown = _WATCHED[bucket]
    value: Any = None
    if op == "put":
        try:
            rec = msgspec.json.decode(data, type=record)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None
        value = stats_wire(rec) if shown is None else msgspec.to_builtins(as_view(rec, shown))
    return msgspec.json.encode({"type": "kv", "kind": kind, "key": key, "op": op, "value": value})


class Hub:
    """What every open page hears alike: KV changes and health (one watch per process)."""

    def __init__(self, client: Client, health_every: float, activity: Activity) -> None:
        self.client = client
        self.activity = activity
        """Feed lines as the snapshot makes them (the titles it learnt name removals)."""
        self.health_every = health_every
        self.health: HealthView | None = None
        self.sockets: set[asyncio.Queue[bytes]] = set()
        self.watched = asyncio.Event()
        """Set while a page is connected: health is checked only for someone to see it."""
        self._subs: list[Any] = []
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        nc = self.client.nc
        for bucket, (_, pattern, _, _) in _WATCHED.items():
            # Live changes only: the page has the current state from its snapshot and REST.
            prefix = f"$KV.{bucket}."
            self._subs.append(
                await nc.subscribe(prefix + pattern, cb=self._on_kv(bucket, len(prefix)))
            )
        self._task = asyncio.create_task(self._check_health())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        for sub in self._subs:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()

    def _on_kv(self, bucket: str, prefix_len: int) -> Any:
        async def cb(msg: Msg) -> None:
            op = "put"
            if msg.headers:
                op = _KV_OPS.get(msg.headers.get("KV-Operation", ""), "put")
            out = kv_message(bucket, msg.subject[prefix_len:], op, msg.data or b"")
            if out is not None:
                self.broadcast(out)

        return cb

    def broadcast(self, data: bytes) -> None:
        for q in list(self.sockets):
            with contextlib.suppress(asyncio.QueueFull):
                q.put_nowait(data)

    async def _check_health(self) -> None:
        while True:
            if not self.sockets:  # nobody looks: no status calls every few seconds
                self.watched.clear()
                await self.watched.wait()
            now = await health_of(self.client)
            if self.health is None or _summary(now) != _summary(self.health):
                self.health = now
                self.broadcast(msgspec.json.encode({"type": "health", "health": now}))
            await asyncio.sleep(self.health_every)


def _summary(h: HealthView) -> tuple[object, ...]:
    return h.status, tuple((c.name, c.ok) for c in h.checks), tuple(sorted(h.held.items()))


async def follow(ws: WebSocket, hub: Hub) -> None:
    """One page's socket, until it closes (or reads too slowly: closed with 1013, the page
    reconnects and resyncs)."""
    raw = ws.query_params.get("after", "0")
    after = int(raw) if raw.isdigit() else 0
    q: asyncio.Queue[bytes] = asyncio.Queue(QUEUE_LIMIT)
    overflow = asyncio.Event()
    last = after

    async def on_event(m: StreamMessage) -> None:
        nonlocal last
        last = m.seq
        item = await hub.activity.item(m.seq, m.data, m.at)
        if item is None:
            return
        try:
            q.put_nowait(msgspec.json.encode({"type": "event", "item": item}))
        except asyncio.QueueFull:
            overflow.set()

    await ws.accept()
    hub.sockets.add(q)
    hub.watched.set()
    follower = None
    try:
        await ws.send_text(
            msgspec.json.encode({"type": "hello", "seq": after, "health": hub.health}).decode()
        )
        try:
            follower = await events_stream(hub.client).follow(on_event, start_seq=after + 1)
        except (BusError, FunctionError) as exc:
            log.warning("cannot follow MEM_EVENTS: %s", exc)
        await _pump(ws, q, overflow, lambda: last, hub.client)
    except (WebSocketDisconnect, RuntimeError):
        pass
    finally:
        hub.sockets.discard(q)
        if follower is not None:
            await follower.stop()


async def _pump(
    ws: WebSocket, q: asyncio.Queue[bytes], overflow: asyncio.Event, last: Any, client: Client
) -> None:
    closed = asyncio.create_task(_closed(ws))
    slow = asyncio.create_task(overflow.wait())
    try:
        while True:
            getter = asyncio.create_task(q.get())
            done, _ = await asyncio.wait(
                {getter, closed, slow}, timeout=HEARTBEAT, return_when=asyncio.FIRST_COMPLETED
            )
            if getter in done:
                await ws.send_text(getter.result().decode())
                continue
            getter.cancel()
            if closed in done:
                return
            if slow in done:
                await ws.close(code=1013, reason="page too slow: reload to resync")
                return
            beat = {"type": "heartbeat", "seq": last(), "bus": client.nc.is_connected,
                    "at": time.time()}  # fmt: skip
            await ws.send_text(msgspec.json.encode(beat).decode())
    finally:
        closed.cancel()
        slow.cancel()


async def _closed(ws: WebSocket) -> None:
    with contextlib.suppress(Exception):
        while True:
            msg = await ws.receive()
            if msg["type"] == "websocket.disconnect":
                return
