"""Following a JetStream stream from its recent past: an ordered (ephemeral, flow-controlled)
consumer that starts `backlog` messages back and then stays live."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import nats.js.errors
from nats.aio.msg import Msg
from nats.js.api import ConsumerConfig, DeliverPolicy
from nats.js.client import JetStreamContext

log = logging.getLogger("console.follow")
REPLAY_BYTES = 8 << 20
"""What a follower replays of its stream's past at most (the newest messages)."""


async def subscribe_from(
    js: JetStreamContext,
    stream: str,
    subject: str,
    backlog: int,
    cb: Callable[[Msg], Awaitable[None]],
) -> Any:
    """An ordered consumer on `subject` that replays the last `backlog` messages first.
    Raises nats.js.errors.NotFoundError when the stream does not exist."""
    info = await js.stream_info(stream)
    if backlog > 0 and info.state.messages:
        # At most REPLAY_BYTES of it: a trace message holds a batch of spans (~80 KB under
        # load), and decoding a whole capped stream at start held the event loop of every
        # worker sharing the process for tens of seconds.
        each = max(1, info.state.bytes // info.state.messages)
        backlog = min(backlog, max(1, REPLAY_BYTES // each))
        start = max(1, info.state.first_seq, info.state.last_seq - backlog + 1)
        cfg = ConsumerConfig(deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=start)
    else:
        cfg = ConsumerConfig(deliver_policy=DeliverPolicy.NEW)
    return await js.subscribe(subject, stream=stream, ordered_consumer=True, config=cfg, cb=cb)


class Follower:
    """Keeps one ordered consumer alive for the process's lifetime; waits for the stream
    to appear when the console starts before the supervisor has created it."""

    def __init__(
        self,
        js: JetStreamContext,
        stream: str,
        subject: str,
        backlog: int,
        on_data: Callable[[bytes], None],
    ) -> None:
        self.js = js
        self.stream = stream
        self.subject = subject
        self.backlog = backlog
        self.on_data = on_data
        self._task: asyncio.Task[None] | None = None
        self._sub: Any = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        async def cb(msg: Msg) -> None:
            try:
                self.on_data(msg.data)
            except Exception:  # one bad record must not stop the tail
                log.debug("skipped a record of %s", self.stream, exc_info=True)

        while self._sub is None:
            try:
                self._sub = await subscribe_from(
                    self.js, self.stream, self.subject, self.backlog, cb
                )
            except nats.js.errors.NotFoundError:
                await asyncio.sleep(1.0)
            except Exception:
                log.warning("cannot follow %s yet; retrying", self.stream, exc_info=True)
                await asyncio.sleep(2.0)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
        if self._sub is not None:
            try:
                await self._sub.unsubscribe()
            except Exception:
                pass
