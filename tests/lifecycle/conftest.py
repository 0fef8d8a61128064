"""Lifecycle tests: a real nats-server per test; the lifecycle service in-process (its
jobs take `now`, so tests drive the clock) or as the real worker process."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from engine import Client
from functions.lifecycle.config import LifecycleConfig
from functions.lifecycle.service import LifecycleService
from functions.memory.store import MemoryStore


@pytest.fixture
async def store(client: Client) -> MemoryStore:
    return await MemoryStore(client).open()


@pytest.fixture
async def lifecycle(client: Client) -> AsyncIterator[LifecycleService]:
    svc = LifecycleService(LifecycleConfig())
    await svc.start(client)
    yield svc
    await svc.stop(client)
