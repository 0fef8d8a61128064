"""The seeds' persistence probe: remember, stop everything, start again, find it."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from engine import Client, connect
from engine.server import NatsServer
from tests.fixtures import eventually

PROBE = "persistence probe: the deploy key rotates every ninety days zebracorn"


async def _restart_everything(nats_server: NatsServer, worker: Any) -> None:
    worker.terminate()
    worker.wait(timeout=20)
    nats_server.port = nats_server.client_port or nats_server.port  # same address again
    nats_server.stop()
    nats_server.start()


async def test_remembered_probe_survives_a_full_restart(
    nats_server: NatsServer, memory_worker: Any
) -> None:
    w = memory_worker()
    c = Client(await connect(nats_server.url))
    out = await c.call("mem::remember", {"content": PROBE, "project": "probe"}, timeout=10)
    mid = out["memory"]["id"]
    await c.nc.close()

    await _restart_everything(nats_server, w)
    memory_worker()
    c = Client(await connect(nats_server.url))
    try:
        got = await eventually(
            lambda: c.call("mem::memory", {"id": mid}, timeout=5), what="probe readable"
        )
        assert got["memory"]["content"] == PROBE
    finally:
        await c.nc.close()


@pytest.mark.skipif(
    importlib.util.find_spec("functions.search") is None, reason="retrieval not in the tree"
)
async def test_remembered_probe_is_found_by_smart_search_after_a_full_restart(
    nats_server: NatsServer, memory_worker: Any
) -> None:
    w = memory_worker(AGENTMEMORY_SEARCH="on")
    c = Client(await connect(nats_server.url))
    out = await c.call("mem::remember", {"content": PROBE, "project": "probe"}, timeout=10)
    mid = out["memory"]["id"]
    await c.nc.close()

    await _restart_everything(nats_server, w)
    memory_worker(AGENTMEMORY_SEARCH="on")
    c = Client(await connect(nats_server.url))

    async def found() -> bool:
        res = await c.call("mem::smart-search", {"query": "zebracorn deploy key"}, timeout=5)
        return any(mid in str(r) for r in res.get("results", []))

    try:
        await eventually(found, timeout=20, what="smart-search finds the probe")
    finally:
        await c.nc.close()
