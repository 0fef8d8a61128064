"""Reading a KV bucket or a stream in pages, so no job holds a whole bucket in memory.

Both go through an ephemeral pull consumer: the server sends `page` messages per fetch, so
at most one page is in this process at a time however large the bucket is. A KV scan
delivers the last value per key (deleted keys are skipped). The scan ends at the stream's
last sequence when it started; a fetch that gets nothing before that raises BusError, so
a job never takes a scan cut short by an outage for the whole bucket.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, TypeVar

import msgspec
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from engine import _codec, _jetstream
from engine._bus_errors import BusError, translate
from engine._connection import Connection
from engine._jetstream_api import API, PullRequest

T = TypeVar("T")

PAGE = 512
FETCH_TIMEOUT = 2.0
_DELETED = ("DEL", "PURGE")


class StreamMessage(msgspec.Struct, frozen=True):
    """One stored message as a reader sees it."""

    seq: int
    subject: str
    data: bytes
    pending: int = 0
    """Messages after this one that the reader has not been sent yet (0: caught up)."""
    at: float = 0.0
    """When JetStream stored it (epoch seconds; 0: not known). One clock for every
    message, whatever times the payloads carry."""


_encode_next = msgspec.json.Encoder().encode


async def _pages(
    conn: Connection,
    stream: str,
    last: int,
    subject: str,
    config: ConsumerConfig,
    page: int,
    timeout: float,
) -> AsyncIterator[list[Msg]]:
    """The consumer's messages a page at a time. Each page is one pull request (JetStream's
    CONSUMER.MSG.NEXT) whose messages a subscription callback collects: nats-py's `fetch`
    makes a task, a uuid and a timer for every message: 37 us of client CPU a record against
    12 here (50k records of a 1M-record bucket, docs/design/scans.md)."""
    what = f"reading {stream}"
    if not config.filter_subjects:
        config.filter_subject = subject
    nc = conn.nc
    try:
        info = await conn.js.add_consumer(stream, config)
    except Exception as exc:
        raise translate(exc, what) from None
    inbox = nc.new_inbox()
    got: list[Msg] = []
    status: list[str] = []
    arrived = asyncio.Event()

    async def on_msg(msg: Msg) -> None:
        code = msg.headers.get("Status") if msg.headers else None
        if code == "100":  # a heartbeat
            return
        if code:  # 404/408: the request ended short; 409: the consumer went away
            status.append(f"{code} {msg.headers.get('Description', '') if msg.headers else ''}")
            arrived.set()
            return
        got.append(msg)
        if len(got) >= page:
            arrived.set()

    sub = None
    try:
        # A filtered scan may match nothing: ask rather than wait out a pull's expiry.
        if info.num_pending == 0:
            return
        try:
            sub = await nc.subscribe(inbox, cb=on_msg)
        except Exception as exc:
            raise translate(exc, what) from None
        request = f"{API}.CONSUMER.MSG.NEXT.{stream}.{info.name}"
        now = _encode_next(PullRequest(page, int(timeout * 1e9), no_wait=True))
        waiting = _encode_next(PullRequest(page, int(timeout * 1e9)))
        done = False
        while not done:
            for body in (now, waiting):  # the second only when the first brought nothing
                got, status[:] = [], []
                arrived.clear()
                try:
                    await nc.publish(request, body, reply=inbox)
                    await asyncio.wait_for(arrived.wait(), timeout + 1.0)
                except TimeoutError:
                    pass  # (an outage): nothing came; told below
                except Exception as exc:
                    raise translate(exc, what) from None
                if got:
                    break
            msgs = got
            if not msgs:
                why = f" ({status[0].strip()})" if status else ""
                raise BusError(f"{what}: a fetch returned nothing before the end{why}")
            # Delivered in stream order: the page's last message says where the scan is.
            md = msgs[-1].metadata
            done = md.num_pending == 0 or md.sequence.stream >= last
            yield msgs
    finally:
        if sub is not None:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()
        with contextlib.suppress(Exception):  # else it expires after inactive_threshold
            await asyncio.wait_for(conn.js.delete_consumer(stream, info.name), 1.0)


async def scan_bucket(
    conn: Connection,
    bucket: str,
    keys: str | list[str],
    type_: Any,
    page: int = PAGE,
    timeout: float = FETCH_TIMEOUT,
) -> AsyncIterator[tuple[str, Any]]:
    """(key, value) for every live key of `bucket` matching `keys`; values that do not
    decode as `type_` are skipped (one corrupt record must not stop a sweep)."""
    prefix = f"$KV.{bucket}."
    stream = f"KV_{bucket}"
    try:
        info = await _jetstream.stream_info(conn, stream)
    except _jetstream.NotFound:
        return
    if info.messages == 0:
        return
    # With one value per key (history 1, our default) every stored message is a key's last
    # value, and delivering all is far cheaper for the server than last-per-subject.
    single = info.max_msgs_per_subject == 1
    config = ConsumerConfig(
        deliver_policy=DeliverPolicy.ALL if single else DeliverPolicy.LAST_PER_SUBJECT,
        ack_policy=AckPolicy.NONE,
        inactive_threshold=30.0,
        mem_storage=True,
    )
    if isinstance(keys, list):
        if not keys:
            return
        config.filter_subjects = [prefix + k for k in keys]
        subject = prefix + keys[0]
    else:
        subject = prefix + keys
    decoder = _codec.decoder(type_) if type_ is not bytes else None
    async for msgs in _pages(conn, stream, info.last_seq, subject, config, page, timeout):
        for m in msgs:
            if m.headers and m.headers.get("KV-Operation") in _DELETED:
                continue
            if not m.data:
                continue
            if decoder is None:
                yield m.subject[len(prefix) :], m.data
                continue
            try:
                value = decoder.decode(m.data)
            except (msgspec.DecodeError, msgspec.ValidationError):
                continue
            yield m.subject[len(prefix) :], value


async def read_stream(
    conn: Connection,
    stream: str,
    subject: str,
    after: int,
    page: int = PAGE,
    timeout: float = FETCH_TIMEOUT,
    headers_only: bool = False,
) -> AsyncGenerator[StreamMessage, None]:
    """The messages after sequence `after` on `subject` ("" for all), in order;
    `headers_only`: without their data (a pass over subjects and sequences alone)."""
    try:
        info = await _jetstream.stream_info(conn, stream)
    except _jetstream.NotFound:
        return
    if info.last_seq <= after or info.messages == 0:
        return
    config = ConsumerConfig(
        deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
        opt_start_seq=after + 1,
        ack_policy=AckPolicy.NONE,
        inactive_threshold=30.0,
        mem_storage=True,
        headers_only=headers_only or None,
    )
    async for msgs in _pages(conn, stream, info.last_seq, subject, config, page, timeout):
        for m in msgs:
            md = m.metadata
            yield StreamMessage(
                md.sequence.stream, m.subject, m.data, md.num_pending, md.timestamp.timestamp()
            )
