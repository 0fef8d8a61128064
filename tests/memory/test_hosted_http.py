"""The memory worker hosting the http trigger itself (ENGINE_TRIGGERS=http, as
config/engine.yaml runs it): observe is served in-process, replicas share the port."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx

from engine import Client
from engine.protocol import subject_for
from tests.fixtures import AUTH, SECRET, eventually, free_port, rest_client
from tests.memory.test_observe import payload


async def _hosting_replicas(memory_worker: Any, tmp_path: Path, n: int) -> tuple[str, list[Any]]:
    port = free_port()
    procs = [
        memory_worker(
            ENGINE_TRIGGERS="http",
            AGENTMEMORY_REST_PORT=str(port),
            AGENTMEMORY_SECRET=SECRET,
        )
        for _ in range(n)
    ]
    return f"http://127.0.0.1:{port}", procs


async def _post_fresh(base: str, body: dict[str, Any]) -> httpx.Response:
    # A new connection per request, so the kernel spreads them over the replicas' sockets.
    async with httpx.AsyncClient(base_url=base, timeout=15, headers=AUTH) as c:
        return await c.post("/agentmemory/observe", json=body)


async def test_observe_through_the_hosted_trigger_never_crosses_the_bus(
    client: Client, memory_worker: Any, tmp_path: Path
) -> None:
    base, _ = await _hosting_replicas(memory_worker, tmp_path, 2)
    rest = await rest_client(base)
    seen: list[object] = []

    async def spy(msg: object) -> None:
        seen.append(msg)

    await client.nc.subscribe(subject_for("mem::observe"), cb=spy)
    await client.nc.flush()
    replies = [
        await _post_fresh(base, payload(eventId=f"hosted-{i}", sessionId="hosted"))
        for i in range(20)
    ]
    assert [r.status_code for r in replies] == [201] * 20
    got = await rest.get("/agentmemory/observations", params={"sessionId": "hosted"})
    assert sorted(o["id"] for o in got.json()["observations"]) == sorted(
        r.json()["observationId"] for r in replies
    )
    await client.nc.flush()
    assert seen == []  # every observe ran in the process that accepted the request
    await rest.aclose()


async def test_one_hosting_replica_killed_the_other_keeps_serving(
    client: Client, memory_worker: Any, tmp_path: Path
) -> None:
    base, procs = await _hosting_replicas(memory_worker, tmp_path, 2)
    rest = await rest_client(base)
    procs[0].kill()
    await asyncio.to_thread(procs[0].wait, 10)
    statuses = [
        (await _post_fresh(base, payload(eventId=f"after-kill-{i}", sessionId="kill"))).status_code
        for i in range(10)
    ]
    assert statuses == [201] * 10
    got = await rest.get("/agentmemory/observations", params={"sessionId": "kill"})
    assert len(got.json()["observations"]) == 10
    await rest.aclose()


async def test_session_count_is_the_sum_over_replicas(
    client: Client, memory_worker: Any, tmp_path: Path
) -> None:
    # Observations of one session spread over two replicas by the queue group; the session
    # record ends up with their sum, not only the count of the replica that saw session-end.
    a, b = memory_worker(), memory_worker()
    for i in range(30):
        await client.call(
            "mem::observe", payload(eventId=f"count-{i}", sessionId="counted"), timeout=10
        )
    await client.call("mem::session-end", {"sessionId": "counted"}, timeout=5)

    async def summed() -> bool:
        sessions = await client.call("mem::sessions", {}, timeout=5)
        found = [s for s in sessions["sessions"] if s["id"] == "counted"]
        return bool(found) and found[0]["observationCount"] == 30

    await eventually(summed, timeout=15, what="session count summed over both replicas")
    assert a.poll() is None and b.poll() is None
