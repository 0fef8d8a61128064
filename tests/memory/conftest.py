"""Memory tests: a real nats-server, a real memory worker and (for REST) the real http
trigger worker per test."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers import eventually

SECRET = "memory-test-secret"
AUTH = {"Authorization": f"Bearer {SECRET}", "Content-Type": "application/json"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def memory_worker(spawn: Any, tmp_path: Path) -> Callable[..., Any]:
    """Start `python -m workers.memory` with its inbox under the test's tmp dir."""

    def start(**env: str) -> Any:
        e = {
            "AGENTMEMORY_INBOX_DIR": str(tmp_path / "inbox"),
            "HOME": str(tmp_path / "home"),
            "AGENTMEMORY_SEARCH": "off",
        }
        e.update(env)
        return spawn("workers.memory", env=e)

    return start


@pytest.fixture
def http_trigger(spawn: Any, tmp_path: Path) -> Callable[[], str]:
    """Start the http trigger worker on a free port; returns its base URL."""

    def start() -> str:
        port = free_port()
        spawn(
            "workers.trigger_plugins",
            "http",
            env={
                "AGENTMEMORY_REST_PORT": str(port),
                "AGENTMEMORY_SECRET": SECRET,
                "HOME": str(tmp_path / "home"),
                "HTTP_OPENAPI_PATHS": "/openapi.json,/agentmemory/openapi.json",
            },
        )
        return f"http://127.0.0.1:{port}"

    return start


async def rest_client(base: str) -> httpx.AsyncClient:
    c = httpx.AsyncClient(base_url=base, timeout=15, headers=AUTH)

    async def routes_ready() -> bool:
        r = await c.get("/agentmemory/capture")
        return r.status_code == 200

    await eventually(routes_ready, timeout=15, what="memory routes served")
    return c


@pytest.fixture
async def rest(memory_worker: Any, http_trigger: Any) -> AsyncIterator[httpx.AsyncClient]:
    memory_worker()
    c = await rest_client(http_trigger())
    yield c
    await c.aclose()


async def live_keys(client: Any, bucket: str) -> list[str]:
    """Keys holding a value now (the KV watcher behind Bucket.keys can race; see store.py)."""
    pre = f"$KV.{bucket}."
    info = await client.nc.jetstream().stream_info(f"KV_{bucket}", subjects_filter=f"{pre}>")
    st = await client.bucket(bucket)
    out = []
    for subject in sorted(info.state.subjects or {}):
        key = subject[len(pre) :]
        try:
            if await st.get(key) is not None:
                out.append(key)
        except Exception:  # a tombstone
            continue
    return out


async def stored_ids(client: Any) -> list[str]:
    """Ids of the observations stored now (each one's record on MEM_EVENTS), sorted."""
    from functions.kernel.observation_records import ObservationRecords
    from functions.kernel.store import events_stream

    records = await ObservationRecords(client, events_stream(client)).open()
    return sorted([o.id async for o in records.scan()])


async def stored(client: Any, obs_id: str) -> Any:
    """The stored observation `obs_id` (None: none), read as any process would."""
    from functions.kernel.observation_records import ObservationRecords
    from functions.kernel.store import events_stream

    records = await ObservationRecords(client, events_stream(client)).open()
    return await records.get(obs_id)
