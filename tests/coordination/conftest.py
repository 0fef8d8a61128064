"""Coordination tests: a real nats-server, real memory workers (which serve coordination)
and the real http trigger, as in tests/memory."""

from __future__ import annotations

from tests.memory.conftest import http_trigger, memory_worker, rest

__all__ = ["http_trigger", "memory_worker", "rest"]
