"""The `stream` trigger: a function per message of a JetStream stream, via a durable consumer.

Config keys of a `stream` trigger:

- `stream` (required): the JetStream stream name (e.g. `MEM_EVENTS`).
- `subject`: filter subject within the stream, default all.
- `deliver`: where a new consumer starts, "all" (default) or "new". Once the consumer
  exists, a restart resumes at its first unacknowledged message; JetStream cannot change
  a consumer's deliver policy, so a changed `deliver` leaves the trigger unbound with an
  error saying how to apply it (delete the consumer: `python -m engine consumer delete`).
- `concurrency`: messages in flight, default 1 (strict stream order).
- `max_attempts` / `backoff` / `timeout`: a failing message is retried with doubling
  backoff (default 5 attempts from 1 s, 30 s per call), then skipped with a warning.

At-least-once: a message is acknowledged after the function succeeded, so a crash replays
it; the call carries `Idempotency-Key: <stream>:<seq>` plus `Stream-Seq` and
`Stream-Subject` headers, and the function receives the message data as its payload.
A stream that does not exist yet is waited for.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Literal

import msgspec
from nats.aio.msg import Msg

from engine import Client, ConfigDrift, FunctionError, TriggerSpec, Worker
from triggers.consume import ConsumerBindings, ConsumerLoop, backoff_delay, ensure_consumer
from triggers.plugin import SpecWatcher

log = logging.getLogger("triggers.stream")


class StreamConfig(msgspec.Struct, kw_only=True):
    stream: str
    subject: str = ""
    deliver: Literal["all", "new"] = "all"
    concurrency: int = 1
    max_attempts: int = 5
    backoff: float = 1.0
    timeout: float = 30.0


class StreamTrigger(ConsumerBindings):
    kind = "stream"

    def __init__(self) -> None:
        self._client: Client | None = None
        super().__init__()

    def install(self, worker: Worker) -> None:
        pass

    async def start(self, client: Client) -> None:
        self._client = client
        self._watcher = SpecWatcher(client, self)
        await self._watcher.start()

    async def apply(self, spec: TriggerSpec) -> None:
        cfg = msgspec.convert(spec.config, StreamConfig)
        await self.remove(spec.key)
        self._pending[spec.key] = asyncio.create_task(self._bind(spec, cfg))

    async def _bind(self, spec: TriggerSpec, cfg: StreamConfig) -> None:
        assert self._client is not None
        durable = f"trigger-{spec.id}"
        while True:
            try:
                await ensure_consumer(
                    self._client,
                    cfg.stream,
                    durable,
                    filter_subject=cfg.subject or None,
                    max_ack_pending=cfg.concurrency,
                    deliver=cfg.deliver,
                )
                break
            except ConfigDrift as drift:
                log.error("%s -> %s not bound: %s", spec.id, spec.function_id, drift.message)
                return
            except FunctionError as err:
                if err.code != "NOT_FOUND":
                    raise
                await asyncio.sleep(1.0)  # the stream's owner has not created it yet
        loop = ConsumerLoop(
            self._client.nc,
            cfg.stream,
            durable,
            self._handler(spec.function_id, cfg),
            concurrency=cfg.concurrency,
        )
        loop.start()
        self._loops[spec.key] = loop
        log.debug(
            "stream %s%s -> %s",
            cfg.stream,
            f" ({cfg.subject})" if cfg.subject else "",
            spec.function_id,
        )

    def _handler(self, function_id: str, cfg: StreamConfig) -> Any:
        client = self._client
        assert client is not None

        async def handle(msg: Msg) -> None:
            md = msg.metadata
            seq = md.sequence.stream
            attempt = md.num_delivered or 1
            headers = {
                "Idempotency-Key": f"{cfg.stream}:{seq}",
                "Stream-Seq": str(seq),
                "Stream-Subject": msg.subject,
            }
            try:
                await client.call(function_id, msg.data, timeout=cfg.timeout, headers=headers)
            except FunctionError as err:
                if attempt < cfg.max_attempts:
                    await msg.nak(delay=backoff_delay(attempt, cfg.backoff, 300))
                    return
                log.warning(
                    "stream %s seq %d skipped after %d attempts: %r", cfg.stream, seq, attempt, err
                )
                await msg.term()
                return
            await msg.ack()

        return handle
