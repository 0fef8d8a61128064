"""Request/reply for every call of a process: one wildcard inbox subscription, a counter for
reply tokens and a timer handle per request.

nats-py's `request` spends a `getrandom` syscall (token_hex) and a NUID per request and waits
through `asyncio.wait_for` (two futures and a callback chain); on this path a call's whole
client-side cost is ~60 µs, and those parts were a fifth of it. The wire is the same: a
publish with a reply subject under a private inbox, so any responder works unchanged.
"""

from __future__ import annotations

import asyncio

import nats.errors
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

_NO_RESPONDERS = "503"


class Requester:
    """Owned by one connection; safe to share between the tasks of its event loop."""

    def __init__(self, nc: NATS) -> None:
        self.nc = nc
        self._prefix = ""
        self._next = 0
        self._pending: dict[str, asyncio.Future[Msg]] = {}
        self._starting: asyncio.Task[None] | None = None

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    async def _start(self) -> None:
        prefix = self.nc.new_inbox() + "."
        await self.nc.subscribe(prefix + "*", cb=self._on_reply)
        self._prefix = prefix

    async def _ensure_started(self) -> None:
        # Concurrent first requests share one subscribe; a failed one is retried later.
        if self._starting is None:
            self._starting = asyncio.ensure_future(self._start())
        try:
            await asyncio.shield(self._starting)
        except BaseException:
            if self._starting.done():
                self._starting = None
            raise

    async def _on_reply(self, msg: Msg) -> None:
        fut = self._pending.pop(msg.subject[len(self._prefix) :], None)
        if fut is not None and not fut.done():
            fut.set_result(msg)

    def _expire(self, token: str) -> None:
        fut = self._pending.pop(token, None)
        if fut is not None and not fut.done():
            fut.set_exception(nats.errors.TimeoutError())

    async def request(
        self,
        subject: str,
        data: bytes,
        timeout: float,
        headers: dict[str, str] | None = None,
    ) -> Msg:
        """Publish `data` and wait for the first reply. Raises nats.errors.TimeoutError,
        NoRespondersError, and what `publish` raises on a closed or draining connection."""
        if not self._prefix:
            await self._ensure_started()
        self._next += 1
        token = str(self._next)
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Msg] = loop.create_future()
        self._pending[token] = fut
        timer = loop.call_later(timeout, self._expire, token)
        try:
            await self.nc.publish(subject, data, reply=self._prefix + token, headers=headers)
            msg = await fut
        finally:
            timer.cancel()
            self._pending.pop(token, None)
        if not msg.data and msg.headers and msg.headers.get("Status") == _NO_RESPONDERS:
            raise nats.errors.NoRespondersError
        return msg
