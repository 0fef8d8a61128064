"""A durable JetStream pull consumer turned into handler calls, with bounded concurrency.

Shared by the queue, stream, cron and state plug-ins. The consumer is durable and shared:
every replica of a trigger worker binds the same one, so each message goes to one replica,
and after a restart delivery resumes at the first unacknowledged message. The handler owns
the acknowledgement (ack, nak with delay, term).

A loop waits for messages with a long poll: a pull request held by the consumer's leader.
On a cluster that request dies with the leader's node (or with the node the loop's
connection is on), and nothing answers it: the loop asks again as soon as JetStream says
the consumer has a new leader, or its connection is back, instead of when the poll expires.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

import nats.errors
import nats.js.errors
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js.client import JetStreamContext

from engine import Client, reconnected_event
from triggers.plugin import SpecWatcher

log = logging.getLogger("triggers.consume")

MsgHandler = Callable[[Msg], Awaitable[None]]
ACK_WAIT = 6.0
IDLE_FETCH = 30.0
"""Seconds one pull request waits for messages (a long poll)."""
LEADER_ELECTED = "$JS.EVENT.ADVISORY.CONSUMER.LEADER_ELECTED.{stream}.{durable}"
"""JetStream's advisory that a consumer has a new leader (its pull requests did not move)."""
SETTLE_FETCH = 1.0
SETTLE_FOR = 15.0
"""After a new leader or a reconnect, polls last SETTLE_FETCH seconds for SETTLE_FOR
seconds: a request sent before the cluster has learnt where the new leader listens is
dropped unanswered, and a long poll would wait it out."""


async def ensure_consumer(
    client: Client,
    stream: str,
    durable: str,
    *,
    filter_subject: str | None = None,
    max_ack_pending: int = 1,
    ack_wait: float = ACK_WAIT,
    deliver: str = "all",
) -> None:
    """The trigger's durable consumer, as declared: an existing one is brought to these
    settings where JetStream allows it. A setting it cannot change in place (the deliver
    policy: the consumer's position is what makes a restart resume) raises ConfigDrift,
    and the trigger is not bound until the declaration or the consumer changes; NotFound
    while the stream does not exist yet."""
    await client.stream(stream).ensure_consumer(
        durable,
        filter_subject=filter_subject,
        deliver_policy=deliver,
        max_ack_pending=max_ack_pending,
        ack_wait=ack_wait,
    )


class ConsumerLoop:
    """Fetch from a durable consumer and run `handler` on each message, at most
    `concurrency` at a time. With concurrency 1, messages are handled in stream order."""

    def __init__(
        self,
        nc: NATS,
        stream: str,
        durable: str,
        handler: MsgHandler,
        *,
        concurrency: int = 1,
        ack_wait: float = ACK_WAIT,
    ) -> None:
        self.ack_wait = ack_wait
        self.nc = nc
        self.js = nc.jetstream()
        self.stream = stream
        self.durable = durable
        self.handler = handler
        self.concurrency = max(1, concurrency)
        self._task: asyncio.Task[None] | None = None
        self._inflight: set[asyncio.Task[None]] = set()
        self._slot = asyncio.Condition()
        self._stopping = False
        self._fetching = False
        self._settle_until = 0.0
        self._back = reconnected_event(nc)

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"consume {self.stream}/{self.durable}")

    async def _run(self) -> None:
        psub = await self.js.pull_subscribe_bind(self.durable, stream=self.stream)
        moved = asyncio.Event()

        async def leader_elected(_: Msg) -> None:
            moved.set()

        advisory = await self.nc.subscribe(
            LEADER_ELECTED.format(stream=self.stream, durable=self.durable), cb=leader_elected
        )
        try:
            while not self._stopping:
                async with self._slot:
                    await self._slot.wait_for(lambda: len(self._inflight) < self.concurrency)
                    free = self.concurrency - len(self._inflight)
                try:
                    # A long poll: the server answers as soon as a message is there, and an
                    # idle consumer asks once per IDLE_FETCH seconds, not once a second.
                    self._fetching = True
                    msgs = await self._fetch(psub, free, moved)
                except (TimeoutError, nats.errors.TimeoutError):
                    continue
                except nats.js.errors.NotFoundError:
                    log.warning("consumer %s/%s is gone; stopping", self.stream, self.durable)
                    return
                except (nats.errors.ConnectionClosedError, nats.errors.ConnectionReconnectingError):
                    await asyncio.sleep(0.5)
                    continue
                finally:
                    self._fetching = False
                for msg in msgs:
                    if self.concurrency == 1:
                        await self._handle(msg)
                    else:
                        t = asyncio.create_task(self._handle(msg))
                        self._inflight.add(t)
                        t.add_done_callback(self._done)
        finally:
            with contextlib.suppress(Exception):
                await advisory.unsubscribe()
            with contextlib.suppress(Exception):
                await psub.unsubscribe()

    async def _fetch(
        self, psub: JetStreamContext.PullSubscription, batch: int, moved: asyncio.Event
    ) -> list[Msg]:
        """One long poll, given up (no messages) when the consumer's leader changes or the
        connection reconnects: the pull request is gone with the node that held it. Either
        also makes the polls short for a while (SETTLE_FOR), also when it came between two
        polls."""
        now = time.monotonic()
        if self._back is not None and self._back.is_set():
            self._back = reconnected_event(self.nc)
            self._settle_until = now + SETTLE_FOR
        if moved.is_set():
            moved.clear()
            self._settle_until = now + SETTLE_FOR
        poll = SETTLE_FETCH if now < self._settle_until else IDLE_FETCH
        fetch = asyncio.ensure_future(psub.fetch(batch, timeout=poll))
        wakers = [asyncio.ensure_future(moved.wait())]
        if self._back is not None:
            wakers.append(asyncio.ensure_future(self._back.wait()))
        try:
            await asyncio.wait({fetch, *wakers}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in wakers:
                w.cancel()
            # Python 3.11's wait_for (inside nats-py's fetch) drops a cancellation that lands
            # as a message arrives, and the fetch goes on waiting for the next one: cancel
            # until it ends. Messages it returned all the same are handled below.
            while not fetch.done():
                fetch.cancel()
                await asyncio.wait({fetch}, timeout=0.2)
        if fetch.cancelled():
            log.info("consumer %s/%s: its leader or our server changed; polling again",
                     self.stream, self.durable)  # fmt: skip
            return []
        return fetch.result()

    def _done(self, task: asyncio.Task[None]) -> None:
        self._inflight.discard(task)

        async def wake() -> None:
            async with self._slot:
                self._slot.notify_all()

        asyncio.get_running_loop().create_task(wake())

    async def _handle(self, msg: Msg) -> None:
        # A short ack_wait kept alive by progress pings: a slow call keeps its message,
        # while the message of a killed process is redelivered within seconds.
        beat = asyncio.create_task(_keep_alive(msg, self.ack_wait / 3))
        try:
            await self.handler(msg)
        except Exception:
            # Unacknowledged: JetStream redelivers it after ack_wait.
            log.exception("handling %s from %s failed", msg.subject, self.stream)
        finally:
            beat.cancel()

    async def stop(self, timeout: float = 10.0) -> None:
        """Stop fetching and let handlers in flight finish (an abandoned message would stay
        unacknowledged until ack_wait, blocking an ordered consumer that long)."""
        self._stopping = True
        if self._task is not None and self._fetching:
            self._task.cancel()  # waiting for messages: nothing to finish
        if self._task is not None:
            done, _ = await asyncio.wait({self._task}, timeout=timeout)
            if not done:
                self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        if self._inflight:
            await asyncio.wait(set(self._inflight), timeout=timeout)


async def _keep_alive(msg: Msg, every: float) -> None:
    with contextlib.suppress(Exception):
        while True:
            await asyncio.sleep(every)
            await msg.in_progress()


def backoff_delay(attempt: int, initial: float, maximum: float) -> float:
    """Exponential backoff: initial, 2×initial, 4×initial … capped at `maximum`."""
    return float(min(initial * (2 ** max(attempt - 1, 0)), maximum))


class ConsumerBindings:
    """What the stream and state plug-ins share: one consumer loop per declaration, bound in
    the background (`_pending`) and torn down on removal or stop."""

    def __init__(self) -> None:
        self._loops: dict[str, ConsumerLoop] = {}
        self._pending: dict[str, asyncio.Task[None]] = {}
        self._watcher: SpecWatcher | None = None

    async def remove(self, key: str) -> None:
        task = self._pending.pop(key, None)
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        loop = self._loops.pop(key, None)
        if loop is not None:
            await loop.stop()

    async def stop(self) -> None:
        if self._watcher is not None:
            await self._watcher.stop()
        for key in list(self._loops) + list(self._pending):
            await self.remove(key)
