"""Lifecycle tests: the lifecycle service in-process on the test's nats-server (its jobs
take `now`, so tests drive the clock); tests/fixtures.py has the server and the store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from engine import Client
from functions.lifecycle.lifecycle_service import LifecycleService
from functions.lifecycle.settings import LifecycleConfig
from tests.fixtures import wire


@pytest.fixture
async def lifecycle(client: Client) -> AsyncIterator[Any]:
    svc = LifecycleService(LifecycleConfig())
    await svc.start(client)
    yield wire(svc)
    await svc.stop(client)
