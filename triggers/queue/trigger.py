"""The queue trigger: a durable consumer per queue that calls its function, retries with backoff
and dead-letters what cannot succeed."""

from __future__ import annotations

import logging
import time
from typing import Any

import msgspec
from nats.aio.msg import Msg

from engine import Client, Context, FunctionError, TriggerSpec, Worker
from triggers.consume import ConsumerLoop, backoff_delay, ensure_consumer
from triggers.queue.deadletter import install_dead_letter_functions
from triggers.queue.streams import (
    DLQ_PREFIX,
    DURABLE,
    Enqueued,
    EnqueueIn,
    QueueConfig,
    enqueue,
    ensure_dlq_stream,
    ensure_queue_stream,
)

log = logging.getLogger("triggers.queue")


class QueueTrigger:
    kind = "queue"

    def __init__(self) -> None:
        self._client: Client | None = None
        self._loops: dict[str, tuple[QueueConfig, str, ConsumerLoop]] = {}

    def install(self, worker: Worker) -> None:

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
