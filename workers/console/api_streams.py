"""Streams (list, recent messages, live tail as server-sent events) and queues with their
dead letters (list, redrive, discard through the queue trigger's functions)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
from collections.abc import AsyncIterator
from typing import Any

import msgspec
import nats.js.errors
from nats.aio.msg import Msg
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from engine import FunctionError
from workers.console.api_engine import traced_call
from workers.console.follow import subscribe_from
from workers.console.hub import hub
from workers.console.inventory import untraced
from workers.console.web import json_response, query_int, read_json

DATA_LIMIT = 4096
# triggers.queue.streams.DLQ_STREAM, named here to keep the console light
DLQ_STREAM = "DEAD_LETTERS"
QUEUE_PREFIX = "QUEUE_"


class StreamView(msgspec.Struct, kw_only=True):
    name: str
    subjects: list[str]
    messages: int
    bytes: int
    first_seq: int
    last_seq: int
    consumers: int
    retention: str


class MessageView(msgspec.Struct, kw_only=True):
    seq: int
    subject: str
    time: str = ""
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    data: str = ""
    size: int = 0


class QueueView(msgspec.Struct, kw_only=True):
    queue: str
    stream: str
    waiting: int
    pending: int
    in_flight: int
    redelivered: int
    dead: int


class DeadSelect(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    seq: int = 0
    queue: str = ""
    all: bool = False


def _message(seq: int, subject: str, data: bytes, headers: Any, when: Any = None) -> MessageView:
    stamp = ""
    if isinstance(when, dt.datetime):
        stamp = when.isoformat()
    elif isinstance(when, str):
        stamp = when
    return MessageView(
        seq=seq,
        subject=subject,
        time=stamp,
        headers={str(k): str(v) for k, v in (headers or {}).items()},
        data=data[:DATA_LIMIT].decode("utf-8", "replace"),
        size=len(data),
    )


async def streams(request: Request) -> Response:
    js = hub(request).client.nc.jetstream()
    out = [
        StreamView(
            name=s.config.name or "",
            subjects=list(s.config.subjects or []),
            messages=s.state.messages,
            bytes=s.state.bytes,
            first_seq=s.state.first_seq,
            last_seq=s.state.last_seq,
            consumers=s.state.consumer_count,
            retention=str(getattr(s.config.retention, "value", s.config.retention)),
        )
        for s in await js.streams_info()
    ]
    out.sort(key=lambda s: s.name)
    return json_response({"streams": out})


async def messages(request: Request) -> Response:
    name = request.path_params["name"]
    last = query_int(request, "last", 50, 1, 500)
    js = hub(request).client.nc.jetstream()
    try:
        info = await js.stream_info(name)
    except nats.js.errors.NotFoundError:
        raise FunctionError("NOT_FOUND", f"no stream {name!r}") from None
    out: list[MessageView] = []
    seq = info.state.last_seq
    # Deleted sequences (acked work-queue items, expired spans) leave holes: skip them,
    # but never walk further back than a bounded number of probes.
    probes = 0
    while seq >= max(1, info.state.first_seq) and len(out) < last and probes < last * 4:
        probes += 1
        try:
            raw = await js.get_msg(name, seq=seq)
            out.append(_message(raw.seq or seq, raw.subject or "", raw.data or b"", raw.headers))
        except nats.js.errors.NotFoundError:
            pass
        seq -= 1
    return json_response({"stream": name, "messages": out})


async def tail(request: Request) -> Response:
    """Server-sent events: the last `backlog` messages, then each new one as it lands."""
    name = request.path_params["name"]
    backlog = query_int(request, "backlog", 10, 0, 1000)
    subject = request.query_params.get("subject") or ""
    js = hub(request).client.nc.jetstream()
    try:
        info = await js.stream_info(name)
    except nats.js.errors.NotFoundError:
        raise FunctionError("NOT_FOUND", f"no stream {name!r}") from None
    subject = subject or (info.config.subjects or [">"])[0]
    queue: asyncio.Queue[MessageView] = asyncio.Queue(maxsize=1000)

    async def on_msg(msg: Msg) -> None:
        meta = msg.metadata
        view = _message(meta.sequence.stream, msg.subject, msg.data, msg.headers, meta.timestamp)
        with contextlib.suppress(asyncio.QueueFull):  # a slow browser drops, never blocks
            queue.put_nowait(view)

    try:
        sub = await subscribe_from(js, name, subject, backlog, on_msg)
    except nats.js.errors.Error as exc:
        raise FunctionError(
            "BAD_REQUEST", f"cannot tail {subject}: {exc}", field="subject"
        ) from None

    async def events() -> AsyncIterator[bytes]:
        try:
            yield b": tail of " + name.encode() + b"\n\n"
            while True:
                try:
                    view = await asyncio.wait_for(queue.get(), 15)
                except TimeoutError:
                    yield b": keep-alive\n\n"
                    continue
                yield b"data: " + msgspec.json.encode(view) + b"\n\n"
        finally:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()

    return StreamingResponse(
        events(),
        media_type="text/event-stream",
        headers={"cache-control": "no-store", "x-accel-buffering": "no"},
    )


async def queues(request: Request) -> Response:
    js = hub(request).client.nc.jetstream()
    dead: dict[str, int] = {}
    with contextlib.suppress(nats.js.errors.NotFoundError):
        dinfo = await js.stream_info(DLQ_STREAM, subjects_filter="dlq.>")
        for subj, n in (dinfo.state.subjects or {}).items():
            dead[subj.removeprefix("dlq.")] = n
    out: list[QueueView] = []
    for s in await js.streams_info():
        name = s.config.name or ""
        if not name.startswith(QUEUE_PREFIX):
            continue
        subj = (s.config.subjects or ["queue.?"])[0]
        queue = subj.removeprefix("queue.")
        pending = in_flight = redelivered = 0
        with contextlib.suppress(nats.js.errors.Error):
            for c in await js.consumers_info(name):
                pending += c.num_pending or 0
                in_flight += c.num_ack_pending or 0
                redelivered += c.num_redelivered or 0
        out.append(
            QueueView(
                queue=queue,
                stream=name,
                waiting=s.state.messages,
                pending=pending,
                in_flight=in_flight,
                redelivered=redelivered,
                dead=dead.pop(queue, 0),
            )
        )
    for queue, n in dead.items():  # dead letters of a queue whose stream is gone
        out.append(
            QueueView(
                queue=queue, stream="", waiting=0, pending=0, in_flight=0, redelivered=0, dead=n
            )
        )
    out.sort(key=lambda q: q.queue)
    return json_response({"queues": out})


async def dead_letters(request: Request) -> Response:
    payload = {
        "queue": request.query_params.get("queue", ""),
        "after": query_int(request, "after", 0, 0, 2**63 - 1),
        "limit": query_int(request, "limit", 100, 1, 1000),
    }
    with untraced():
        page = await hub(request).client.call("engine::dlq-list", payload, timeout=10)
    return json_response(page)


async def _act(request: Request, function_id: str) -> Response:
    body = await read_json(request, DeadSelect)
    if not body.seq and not body.queue and not body.all:
        raise FunctionError("BAD_REQUEST", "give a seq, a queue, or all: true", field="seq")
    out = await traced_call(request, function_id, body, 30.0)
    if not out.ok and out.error:
        raise FunctionError.from_dict(out.error)
    return json_response(out)


async def redrive(request: Request) -> Response:
    return await _act(request, "engine::dlq-redrive")


async def discard(request: Request) -> Response:
    return await _act(request, "engine::dlq-discard")


routes = [
    Route("/api/streams", streams),
    Route("/api/streams/{name}/messages", messages),
    Route("/api/streams/{name}/tail", tail),
    Route("/api/queues", queues),
    Route("/api/queues/dead", dead_letters),
    Route("/api/queues/dead/redrive", redrive, methods=["POST"]),
    Route("/api/queues/dead/discard", discard, methods=["POST"]),
]
