"""Model tests: the provider layer against the local stand-in, and real workers (memory,
lifecycle) with a provider configured at it."""

from __future__ import annotations

from tests.lifecycle.conftest import store
from tests.memory.conftest import http_trigger, memory_worker, rest

__all__ = ["http_trigger", "memory_worker", "rest", "store"]
