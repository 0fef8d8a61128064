"""Polling helpers for trigger tests: wait for a condition, never a fixed sleep."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


async def eventually(
    probe: Callable[[], Awaitable[T]], *, timeout: float = 10.0, what: str = "condition"
) -> T:
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while True:
        try:
            value = await probe()
            if value:
                return value
        except Exception as exc:
            last = exc
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout}s (last: {last!r})")
        await asyncio.sleep(0.05)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
