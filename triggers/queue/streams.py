"""A queue's JetStream side: its stream and subject, the dead-letter stream, and enqueueing."""

from __future__ import annotations

import re
from typing import Any

import msgspec
from nats.js.api import RetentionPolicy, StorageType

from engine import Client, FunctionError

DLQ_STREAM = "DEAD_LETTERS"
DLQ_PREFIX = "dlq."
DURABLE = "calls"
_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class QueueConfig(msgspec.Struct, kw_only=True):
    queue: str
    concurrency: int = 8
    max_attempts: int = 5
    backoff: float = 1.0
    backoff_max: float = 60.0
    timeout: float = 30.0

    def __post_init__(self) -> None:
        check_queue_name(self.queue)
        if self.concurrency < 1 or self.max_attempts < 1 or self.timeout <= 0:
            raise ValueError("queue concurrency and max_attempts must be >= 1, timeout > 0")


class EnqueueIn(msgspec.Struct, kw_only=True):
    queue: str
    payload: msgspec.Raw
    msg_id: str = ""


class Enqueued(msgspec.Struct):
    seq: int
    duplicate: bool


def check_queue_name(name: str) -> str:
    if not _NAME_RE.match(name):
        raise FunctionError(
            "BAD_REQUEST", f"queue name {name!r} must be 1-64 of A-Z a-z 0-9 _ -", field="queue"
        )
    return name


def stream_name(queue: str) -> str:
    return "QUEUE_" + queue.replace("-", "_").upper()


def subject(queue: str) -> str:
    return f"queue.{queue}"


async def ensure_queue_stream(client: Client, queue: str) -> str:
    """The queue's work-queue stream, at the instance's replica count (the client's
    `replicas`); its name."""
    name = stream_name(queue)
    await client.stream(
        name,
        subjects=[subject(queue)],
        retention=RetentionPolicy.WORK_QUEUE,
        storage=StorageType.FILE,
        duplicate_window=120.0,
    ).ensure()
    return name


async def ensure_dlq_stream(client: Client) -> None:
    await client.stream(DLQ_STREAM, subjects=[DLQ_PREFIX + ">"], storage=StorageType.FILE).ensure()


async def enqueue(client: Client, queue: str, payload: Any, *, msg_id: str = "") -> Enqueued:
    """Store a call durably; returns once JetStream has it. Same `msg_id` → stored once."""
    check_queue_name(queue)
    js = client.nc.jetstream()
    await ensure_queue_stream(client, queue)
    data = payload if isinstance(payload, bytes) else msgspec.json.encode(payload)
    headers = {"Nats-Msg-Id": msg_id} if msg_id else None
    ack = await js.publish(subject(queue), data, headers=headers)
    return Enqueued(ack.seq, bool(ack.duplicate))
