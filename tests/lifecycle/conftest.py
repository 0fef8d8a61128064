"""Lifecycle tests: a real nats-server per test; the lifecycle service in-process (its
jobs take `now`, so tests drive the clock) or as the real worker process."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator
from typing import Any

import msgspec
import pytest

from engine import Client
from functions.kernel.store import MemoryStore
from functions.lifecycle.lifecycle_service import LifecycleService
from functions.lifecycle.settings import LifecycleConfig


@pytest.fixture
async def store(client: Client) -> MemoryStore:
    return await MemoryStore(client).open()


class Wire:
    """A service whose operations answer as a bus caller reads them: the reply Struct as
    JSON builtins (camelCase), so tests check the wire shape."""

    def __init__(self, svc: Any) -> None:
        self.svc = svc

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.svc, name)
        if not inspect.iscoroutinefunction(value) or name in ("start", "stop"):
            return value

        async def call(*args: Any, **kw: Any) -> Any:
            return msgspec.to_builtins(await value(*args, **kw))

        return call


def wire(svc: Any) -> Any:
    return Wire(svc)


@pytest.fixture
async def lifecycle(client: Client) -> AsyncIterator[Any]:
    svc = LifecycleService(LifecycleConfig())
    await svc.start(client)
    yield wire(svc)
    await svc.stop(client)
