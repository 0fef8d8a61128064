"""The bus's clock: what time it is for the NATS servers, seen from a host whose own clock
may be off by seconds.

JetStream stamps every message it stores with its server's clock, and enforces TTLs and
schedules by it. Comparing those stamps with a host's own `time.time()` goes wrong when
the host's clock is off (a laptop without NTP, a VM restored from a snapshot): a lease
looked expired seconds early, a cron tick looked late and was skipped. So a client asks
the bus: it stores a tiny probe message and reads back the time JetStream stamped on it;
the offset is good to half a round trip and is measured again every `REFRESH` seconds.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from nats.js.api import StorageType

if TYPE_CHECKING:
    from nats.aio.client import Client as NATS

STREAM = "ENGINE_CLOCK"
SUBJECT = "engine.clock"
REFRESH = 60.0
CONFIG: dict[str, Any] = {
    "storage": StorageType.MEMORY,
    "max_msgs_per_subject": 1,
    "max_age": REFRESH * 2,
    "allow_direct": True,
}
"""The probe stream's declaration (besides its subjects): one message per client, in memory."""


class BusClock:
    def __init__(self, nc: NATS, ensure: Callable[[], Awaitable[object]]) -> None:
        """`ensure` makes (or reconciles) the probe stream: `Client.stream(...).ensure`,
        so this stream is declared like every other (engine/_reconcile.py)."""
        self._nc = nc
        self._ensure = ensure
        self._subject = f"{SUBJECT}.{uuid.uuid4().hex[:12]}"
        self._offset = 0.0
        self._measured = -REFRESH
        self._lock = asyncio.Lock()
        self._ready = False

    async def now(self) -> float:
        """Seconds since the epoch by the bus's clock (the host's own if the bus cannot
        say: a probe that fails is not a reason to fail the caller)."""
        if time.monotonic() - self._measured >= REFRESH:
            async with self._lock:
                if time.monotonic() - self._measured >= REFRESH:
                    await self._measure()
        return time.time() + self._offset

    @property
    def offset(self) -> float:
        """Bus clock minus this host's, in seconds, as last measured."""
        return self._offset

    async def _measure(self) -> None:
        js = self._nc.jetstream()
        try:
            if not self._ready:
                await self._ensure()
                self._ready = True
            t0 = time.time()
            ack = await js.publish(self._subject, b"", timeout=2)
            t1 = time.time()
            msg = await js.get_msg(STREAM, ack.seq, direct=True)
        except Exception:
            self._measured = time.monotonic() - REFRESH + 5.0  # try again in a few seconds
            return
        if msg.time is not None:
            self._offset = msg.time.timestamp() - (t0 + t1) / 2
        self._measured = time.monotonic()
