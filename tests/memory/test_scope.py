"""AGENTMEMORY_AGENT_SCOPE=isolated: every read path is filtered by agent, export included."""

from __future__ import annotations

from typing import Any

from tests.fixtures import rest_client
from tests.memory.test_observe import payload


async def test_isolated_scope_filters_every_read_by_agent(
    memory_worker: Any, http_trigger: Any
) -> None:
    memory_worker(AGENTMEMORY_AGENT_SCOPE="isolated")
    rest = await rest_client(http_trigger())
    try:
        for agent in ("alice", "bob"):
            await rest.post(
                "/agentmemory/remember", json={"content": f"{agent} likes tabs", "agentId": agent}
            )
            await rest.post(
                "/agentmemory/observe",
                json=payload(sessionId=f"s-{agent}", eventId=f"e-{agent}", agentId=agent),
            )
            await rest.post(
                "/agentmemory/session/start", json={"sessionId": f"s-{agent}", "agentId": agent}
            )
        as_alice = {"x-agent-id": "alice"}
        mems = (await rest.get("/agentmemory/memories", headers=as_alice)).json()["memories"]
        assert [m["content"] for m in mems] == ["alice likes tabs"]
        obs = (await rest.get("/agentmemory/observations", headers=as_alice)).json()["observations"]
        assert {o["agentId"] for o in obs} == {"alice"}
        sessions = (await rest.get("/agentmemory/sessions", params={"agentId": "bob"})).json()[
            "sessions"
        ]
        assert [s["id"] for s in sessions] == ["s-bob"]
        exp = (await rest.get("/agentmemory/export", params={"agentId": "bob"})).json()
        assert [m["content"] for m in exp["memories"]] == ["bob likes tabs"]
        assert list(exp["observations"]) == ["s-bob"]
        bob_mem = exp["memories"][0]["id"]
        # alice can neither read nor forget bob's memory
        assert (
            await rest.get(f"/agentmemory/memories/{bob_mem}", headers=as_alice)
        ).status_code == 404
        r = await rest.post("/agentmemory/forget", json={"memoryId": bob_mem}, headers=as_alice)
        assert r.json()["deleted"] == 0
        r = await rest.post("/agentmemory/forget", json={"memoryId": bob_mem, "agentId": "bob"})
        assert r.json()["deleted"] == 1
        nobody = (await rest.get("/agentmemory/memories")).json()["memories"]
        assert nobody == []
    finally:
        await rest.aclose()


async def test_shared_scope_reads_everything(memory_worker: Any, http_trigger: Any) -> None:
    memory_worker()
    rest = await rest_client(http_trigger())
    try:
        for agent in ("alice", "bob"):
            await rest.post(
                "/agentmemory/remember", json={"content": f"{agent} likes tabs", "agentId": agent}
            )
        mems = (await rest.get("/agentmemory/memories", headers={"x-agent-id": "alice"})).json()
        assert len(mems["memories"]) == 2
    finally:
        await rest.aclose()
