"""The `queue` trigger: durable calls through a JetStream work queue, retried, then dead-lettered.

Config keys of a `queue` trigger:

- `queue` (required): queue name, letters, digits, `_` and `-`. One function per queue.
- `concurrency`: calls in flight at once across all replicas (the consumer's
  max_ack_pending), default 8.
- `max_attempts`: deliveries before the message goes to the dead-letter stream, default 5.
- `backoff` / `backoff_max`: first retry delay and its cap in seconds (doubling), 1 / 60.
- `timeout`: seconds one call may take, default 30.

Semantics: at-least-once. A message is acknowledged only after the function replied
successfully. A retryable failure (5xx, deadline, or a crash of the handling process) is
retried after the backoff; a non-retryable 4xx FunctionError, or the last attempt, moves
the message to `DEAD_LETTERS` (subject `dlq.<queue>`) with the error. UNAVAILABLE (no worker
serves the function) waits and retries without dead-lettering. Each call carries
`Idempotency-Key` (the `Nats-Msg-Id` given at enqueue, else `<queue>:<stream seq>`) so
handlers can make redeliveries harmless; enqueueing twice with the same `msg_id` within the
dedup window stores one message.
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any

import msgspec
from nats.aio.msg import Msg
from nats.js.api import RetentionPolicy, StorageType

from engine import Client, Context, FunctionError, TriggerSpec, Worker
from triggers.consume import ConsumerLoop, backoff_delay, ensure_consumer

log = logging.getLogger("triggers.queue")

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


class QueueTrigger:
    kind = "queue"

    def __init__(self) -> None:
        self._client: Client | None = None
        self._loops: dict[str, tuple[QueueConfig, str, ConsumerLoop]] = {}

    def install(self, worker: Worker) -> None:
        from triggers.deadletter import install_dead_letter_functions

        @worker.function("engine::enqueue", description="Store a call in a durable queue")
        async def _enqueue(req: EnqueueIn, ctx: Context) -> Enqueued:
            return await enqueue(ctx.client, req.queue, bytes(req.payload), msg_id=req.msg_id)

        install_dead_letter_functions(worker)

    async def start(self, client: Client) -> None:
        from triggers.plugin import SpecWatcher

        self._client = client
        await ensure_dlq_stream(client)
        self._watcher = SpecWatcher(client, self)
        await self._watcher.start()

    async def apply(self, spec: TriggerSpec) -> None:
        cfg = msgspec.convert(spec.config, QueueConfig)
        old = self._loops.get(spec.key)
        if old is not None and old[0] == cfg and old[1] == spec.function_id:
            return
        await self.remove(spec.key)
        assert self._client is not None
        stream = await ensure_queue_stream(self._client, cfg.queue)
        await ensure_consumer(self._client, stream, DURABLE, max_ack_pending=cfg.concurrency)
        loop = ConsumerLoop(
            self._client.nc,
            stream,
            DURABLE,
            self._handler(cfg, spec.function_id),
            concurrency=cfg.concurrency,
        )
        loop.start()
        self._loops[spec.key] = (cfg, spec.function_id, loop)
        log.debug("queue %s -> %s (concurrency %d)", cfg.queue, spec.function_id, cfg.concurrency)

    async def remove(self, key: str) -> None:
        entry = self._loops.pop(key, None)
        if entry is not None:
            await entry[2].stop()

    async def stop(self) -> None:
        if getattr(self, "_watcher", None) is not None:
            await self._watcher.stop()
        for key in list(self._loops):
            await self.remove(key)

    def _handler(self, cfg: QueueConfig, function_id: str) -> Any:
        client = self._client
        assert client is not None

        async def handle(msg: Msg) -> None:
            md = msg.metadata
            attempt = md.num_delivered or 1
            hdrs = msg.headers or {}
            msg_id = (
                hdrs.get("Idempotency-Key")
                or hdrs.get("Nats-Msg-Id")
                or f"{cfg.queue}:{md.sequence.stream}"
            )
            try:
                await client.call(
                    function_id,
                    msg.data,
                    timeout=cfg.timeout,
                    headers={"Idempotency-Key": msg_id, "Queue-Attempt": str(attempt)},
                )
            except FunctionError as err:
                delay = backoff_delay(attempt, cfg.backoff, cfg.backoff_max)
                if err.code == "UNAVAILABLE":
                    await msg.nak(delay=delay)
                    return
                final = (not err.retryable and err.status < 500) or attempt >= cfg.max_attempts
                if not final:
                    log.info(
                        "queue %s: attempt %d of %s failed: %r", cfg.queue, attempt, msg_id, err
                    )
                    await msg.nak(delay=delay)
                    return
                await dead_letter(client, cfg.queue, function_id, msg, err, attempt, msg_id)
                await msg.ack()
                return
            await msg.ack()

        return handle


async def dead_letter(
    client: Client,
    queue: str,
    function_id: str,
    msg: Msg,
    err: FunctionError,
    attempts: int,
    msg_id: str,
) -> None:
    headers = {
        "Dlq-Queue": queue,
        "Dlq-Function": function_id,
        "Dlq-Error": err.encode().decode(),
        "Dlq-Attempts": str(attempts),
        "Dlq-Msg-Id": msg_id,
        "Dlq-Failed-At": str(int(time.time() * 1000)),
    }
    await client.nc.jetstream().publish(DLQ_PREFIX + queue, msg.data, headers=headers)
    log.warning("queue %s: %s dead-lettered after %d attempts: %r", queue, msg_id, attempts, err)
