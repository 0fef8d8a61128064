"""A circuit breaker per provider (per process): after `failures` failures within `window`
seconds the provider is skipped for `recovery` seconds, then calls may try it again
(half-open): a success closes the breaker, a failure opens it again at once. Upstream's numbers
(3, 60 s, 30 s). A library was not worth it: `circuitbreaker` has no failure window and one
process-wide registry, `pybreaker` is synchronous, `aiobreaker` unmaintained since 2021."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

BreakerState = Literal["closed", "open", "half-open"]


@dataclass
class Breaker:
    failures: int = 3
    window: float = 60.0
    recovery: float = 30.0
    clock: Callable[[], float] = time.monotonic
    state: BreakerState = "closed"
    count: int = 0
    last_failure: float | None = None
    opened_at: float | None = None

    def allow(self) -> bool:
        """Whether a call may go to the provider now."""
        if self.state == "open":
            if self.opened_at is None or self.clock() - self.opened_at < self.recovery:
                return False
            self.state = "half-open"
        return True

    def success(self) -> None:
        if self.state != "closed":  # a closed breaker keeps counting within its window
            self.state, self.count, self.last_failure, self.opened_at = "closed", 0, None, None

    def failure(self) -> None:
        now = self.clock()
        if self.state == "half-open":
            self.state, self.opened_at = "open", now
            return
        if self.state == "open":
            return  # a call sent before it opened: the open period is not extended
        if self.last_failure is not None and now - self.last_failure > self.window:
            self.count = 0
        self.count += 1
        self.last_failure = now
        if self.count >= self.failures:
            self.state, self.opened_at = "open", now

    def current(self) -> BreakerState:
        """The state as a caller would meet it now (open turns half-open by time)."""
        if (
            self.state == "open"
            and self.opened_at is not None
            and self.clock() - self.opened_at >= self.recovery
        ):
            return "half-open"
        return self.state
