"""Leases over REST against real memory workers: upstream's reply shapes, exactly one
holder across two replicas, release with a result completing the action, renewal, and
expiry by the lease key's JetStream TTL (handed back by the state trigger)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from engine import Client
from functions.coordination.records import LEASES_BUCKET
from tests.coordination.test_actions import make
from tests.fixtures import eventually, rest_client

A = "/agentmemory/"


async def test_acquire_conflict_release_in_upstreams_shapes(rest: httpx.AsyncClient) -> None:
    a = await make(rest, "fix the flaky test")
    r = await rest.post(A + "leases/acquire", json={"actionId": a["id"], "agentId": "one"})
    assert r.status_code == 200
    got = r.json()
    assert got["success"] is True and got["renewed"] is False
    lease = got["lease"]
    assert (lease["actionId"], lease["agentId"], lease["status"]) == (a["id"], "one", "active")

    again = await rest.post(A + "leases/acquire", json={"actionId": a["id"], "agentId": "one"})
    assert again.json()["message"] == "Already holding this lease"

    r = await rest.post(A + "leases/acquire", json={"actionId": a["id"], "agentId": "two"})
    assert r.status_code == 409
    assert r.json() == {
        "success": False,
        "error": "action already leased",
        "heldBy": "one",
        "expiresAt": lease["expiresAt"],
    }
    r = await rest.post(A + "leases/release", json={"actionId": a["id"], "agentId": "two"})
    assert r.status_code == 409
    assert r.json() == {"success": False, "error": "no active lease found for this agent"}

    r = await rest.post(
        A + "leases/release", json={"actionId": a["id"], "agentId": "one", "result": "fixed"}
    )
    assert r.status_code == 200
    body = r.json()
    assert body["success"] is True and body["released"] is True
    assert (body["action"]["status"], body["action"]["result"]) == ("done", "fixed")
    r = await rest.post(A + "leases/acquire", json={"actionId": a["id"], "agentId": "two"})
    assert r.status_code == 409 and r.json()["error"] == "action already completed"


async def test_release_without_result_hands_the_action_back(rest: httpx.AsyncClient) -> None:
    a = await make(rest, "investigate")
    await rest.post(A + "leases/acquire", json={"actionId": a["id"], "agentId": "one"})
    r = await rest.post(A + "leases/release", json={"actionId": a["id"], "agentId": "one"})
    assert r.json()["action"]["status"] == "pending"
    r = await rest.post(A + "leases/acquire", json={"actionId": a["id"], "agentId": "two"})
    assert r.status_code == 200


async def test_renew_extends_and_ttls_are_capped(rest: httpx.AsyncClient) -> None:
    from functions.kernel.clock import ms_of

    a = await make(rest, "long job")
    r = await rest.post(
        A + "leases/acquire", json={"actionId": a["id"], "agentId": "one", "ttlMs": 7_200_000}
    )
    lease = r.json()["lease"]
    held = ms_of(lease["expiresAt"]) - ms_of(lease["acquiredAt"])
    assert held == 3_600_000  # at most one hour
    r = await rest.post(
        A + "leases/renew", json={"actionId": a["id"], "agentId": "one", "ttlMs": 1500}
    )
    assert r.status_code == 200
    assert ms_of(r.json()["lease"]["expiresAt"]) >= ms_of(lease["expiresAt"])
    r = await rest.post(A + "leases/renew", json={"actionId": a["id"], "agentId": "two"})
    assert r.status_code == 409
    assert r.json()["error"] == "no active (non-expired) lease to renew"


async def test_one_holder_across_two_replicas(memory_worker: Any, http_trigger: Any) -> None:
    memory_worker()
    memory_worker()
    base = http_trigger()
    rest = await rest_client(base)
    try:
        ids = [(await make(rest, f"contended {i}"))["id"] for i in range(5)]

        async def grab(agent: str, aid: str) -> tuple[str, int]:
            async with httpx.AsyncClient(base_url=base, headers=rest.headers) as c:
                r = await c.post(A + "leases/acquire", json={"actionId": aid, "agentId": agent})
                return agent, r.status_code

        for aid in ids:
            results = await asyncio.gather(*(grab(f"agent-{n}", aid) for n in range(12)))
            winners = [agent for agent, status in results if status == 200]
            assert len(winners) == 1, results
            assert sum(1 for _a, s in results if s == 409) == 11
    finally:
        await rest.aclose()


async def test_a_dead_holders_lease_expires_by_its_ttl(
    rest: httpx.AsyncClient, client: Client
) -> None:
    a = await make(rest, "abandoned")
    r = await rest.post(
        A + "leases/acquire", json={"actionId": a["id"], "agentId": "dead", "ttlMs": 1000}
    )
    assert r.status_code == 200
    # Nobody releases it, and no trigger or sweep runs here: JetStream drops the key.
    leases = await client.bucket(LEASES_BUCKET)

    async def dropped() -> bool:
        return await leases.get(a["id"]) is None

    await eventually(dropped, timeout=5, what="JetStream to expire the lease key")
    r = await rest.post(A + "leases/acquire", json={"actionId": a["id"], "agentId": "alive"})
    assert r.status_code == 200, r.text
    audit = (await rest.get(A + "audit")).json()["entries"]
    expired = [e for e in audit if e["action"] == "lease-expire"]
    assert [e["details"]["agentId"] for e in expired] == ["dead"]
    assert expired[0]["details"]["by"] == "acquire"


async def test_the_state_trigger_hands_an_expired_action_back(
    rest: httpx.AsyncClient, spawn: Any
) -> None:
    spawn("workers.trigger_plugins", "state")
    a = await make(rest, "abandoned")
    r = await rest.post(
        A + "leases/acquire", json={"actionId": a["id"], "agentId": "dead", "ttlMs": 1000}
    )
    assert r.status_code == 200

    async def pending() -> bool:
        got = (await rest.get(A + "actions/get", params={"actionId": a["id"]})).json()
        return got["action"]["status"] == "pending" and got["action"]["assignedTo"] == ""

    await eventually(pending, timeout=10, what="the expiry to hand the action back")
    audit = (await rest.get(A + "audit")).json()["entries"]
    assert [e["details"].get("by") for e in audit if e["action"] == "lease-expire"] == ["expiry"]


async def test_the_sweep_hands_back_what_the_trigger_missed(
    rest: httpx.AsyncClient, client: Client
) -> None:
    a = await make(rest, "abandoned")
    await rest.post(
        A + "leases/acquire", json={"actionId": a["id"], "agentId": "dead", "ttlMs": 1000}
    )
    leases = await client.bucket(LEASES_BUCKET)

    async def dropped() -> bool:
        return await leases.get(a["id"]) is None

    await eventually(dropped, timeout=5, what="the lease key to expire")
    out = await client.call("mem::coord-sweep", {}, timeout=10)
    assert out["leasesHandedBack"] == 1
    got = (await rest.get(A + "actions/get", params={"actionId": a["id"]})).json()
    assert got["action"]["status"] == "pending"


async def test_the_memory_lease_tool_takes_an_operation(
    client: Client, rest: httpx.AsyncClient
) -> None:
    a = await make(rest, "via the tool")
    got = await client.call(
        "mem::lease", {"actionId": a["id"], "agentId": "m", "operation": "acquire"}, timeout=5
    )
    assert got["success"] is True
    got = await client.call(
        "mem::lease",
        {"actionId": a["id"], "agentId": "m", "operation": "release", "result": "ok"},
        timeout=5,
    )
    assert got["success"] is True and got["action"]["status"] == "done"
