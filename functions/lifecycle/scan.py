"""Reading a KV bucket or a stream in pages, so no job holds a whole scope in memory.

Both go through an ephemeral pull consumer: the server sends `page` messages per fetch, so
at most one page is in this process at a time however large the bucket is. A KV scan
delivers the last value per key (deleted keys are skipped).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import TypeVar

import msgspec
import nats.errors
import nats.js.errors
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.client import JetStreamContext

T = TypeVar("T")

PAGE = 512
_DELETED = ("DEL", "PURGE")


async def _pages(
    js: JetStreamContext,
    stream: str,
    subject: str,
    config: ConsumerConfig,
    page: int,
) -> AsyncIterator[list[Msg]]:
    try:
        info = await js.stream_info(stream)
    except nats.js.errors.NotFoundError:
        return
    last = info.state.last_seq
    if info.state.messages == 0:
        return
    sub = await js.pull_subscribe(subject, stream=stream, config=config)
    try:
        # A filtered scan may match nothing: ask rather than wait out a fetch timeout.
        if (await sub.consumer_info()).num_pending == 0:
            return
        done = False
        while not done:
            try:
                msgs = await sub.fetch(page, timeout=2.0)
            except (TimeoutError, nats.errors.TimeoutError):
                return
            if not msgs:
                return
            for m in msgs:
                md = m.metadata
                if md.num_pending == 0 or md.sequence.stream >= last:
                    done = True
            yield msgs
    finally:
        with contextlib.suppress(Exception):
            await sub.unsubscribe()


async def scan_kv(
    js: JetStreamContext,
    bucket: str,
    type_: type[T],
    *,
    page: int = PAGE,
    keys: str | list[str] = ">",
) -> AsyncIterator[tuple[str, T]]:
    """(key, value) for every live key of `bucket` matching `keys` (KV key patterns with
    NATS wildcards: `n.>`, `e.*.<id>.>`; a list is one consumer with several filters), in
    pages; unreadable values are skipped (one corrupt record must not stop a sweep)."""
    prefix = f"$KV.{bucket}."
    try:
        info = await js.stream_info(f"KV_{bucket}")
    except nats.js.errors.NotFoundError:
        return
    # With one value per key (history 1, our default) every stored message is a key's last
    # value, and delivering all is far cheaper for the server than last-per-subject.
    single = (info.config.max_msgs_per_subject or 0) == 1
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
    decoder = msgspec.json.Decoder(type_)
    async for msgs in _pages(js, f"KV_{bucket}", subject, config, page):
        for m in msgs:
            if m.headers and m.headers.get("KV-Operation") in _DELETED:
                continue
            if not m.data:
                continue
            try:
                value = decoder.decode(m.data)
            except (msgspec.DecodeError, msgspec.ValidationError):
                continue
            yield m.subject[len(prefix) :], value


async def read_stream(
    js: JetStreamContext, stream: str, subject: str, after: int, *, page: int = PAGE
) -> AsyncIterator[tuple[int, str, bytes]]:
    """(sequence, subject, data) of the messages after sequence `after`, in order."""
    config = ConsumerConfig(
        deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
        opt_start_seq=after + 1,
        ack_policy=AckPolicy.NONE,
        inactive_threshold=30.0,
        mem_storage=True,
    )
    try:
        info = await js.stream_info(stream)
    except nats.js.errors.NotFoundError:
        return
    if info.state.last_seq <= after:
        return
    async for msgs in _pages(js, stream, subject, config, page):
        for m in msgs:
            yield m.metadata.sequence.stream, m.subject, m.data
