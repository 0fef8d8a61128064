"""Fault tests: the memory worker fixtures of tests/memory."""

from __future__ import annotations

from tests.memory.conftest import memory_worker

__all__ = ["memory_worker"]
