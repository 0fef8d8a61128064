"""Leases across hosts whose clocks disagree by seconds (libfaketime on the memory workers).

JetStream removes a lease key when its TTL runs out, by the server's clock; a lease's times
(`acquiredAt`, `expiresAt`) come from that clock too, so every host tells the same story,
and only the lease id under the action record's revision decides who may commit."""

from __future__ import annotations

import time
from typing import Any

import pytest

from engine import Client
from functions.kernel.clock import ms_of
from tests.faults.skew import MISSING, skewed
from tests.fixtures import eventually

pytestmark = pytest.mark.skipif(bool(MISSING), reason=MISSING or "ok")
SKEW = 6.0


async def _action(client: Client, title: str) -> str:
    out = await client.call("mem::action-create", {"title": title, "project": "skew"})
    return str(out["action"]["id"])


async def _call(client: Client, fn: str, body: dict[str, Any]) -> dict[str, Any]:
    return dict(await client.call(fn, body, timeout=10))


async def test_a_lease_from_a_slow_host_is_released_in_time_on_a_fast_one(
    client: Client, memory_worker: Any
) -> None:
    slow = memory_worker(**skewed(-SKEW))
    aid = await _action(client, "slow then fast")
    t0 = time.time()
    got = await _call(
        client, "mem::lease-acquire", {"actionId": aid, "agentId": "one", "ttlMs": 15_000}
    )
    lease = got["lease"]
    # Its times are the bus's, not the slow host's.
    assert abs(ms_of(lease["acquiredAt"]) / 1000 - t0) < 1.5, (lease, t0)
    assert ms_of(lease["expiresAt"]) - ms_of(lease["acquiredAt"]) == 15_000
    slow.terminate()
    slow.wait(10)
    memory_worker(**skewed(+SKEW))
    while time.time() < t0 + 5:  # 10 s of the lease left; the fast host thinks 4
        time.sleep(0.1)
    rel = await _call(
        client,
        "mem::lease-release",
        {"actionId": aid, "agentId": "one", "result": "done in time"},
    )
    assert rel.get("success") is True, rel
    a = await _call(client, "mem::action-get", {"actionId": aid})
    assert a["action"]["status"] == "done", a


async def test_a_holder_told_a_late_expiry_is_fenced_once_another_agent_took_over(
    client: Client, memory_worker: Any
) -> None:
    memory_worker(**skewed(+SKEW))
    aid = await _action(client, "fenced")
    t0 = time.time()
    first = await _call(
        client, "mem::lease-acquire", {"actionId": aid, "agentId": "early", "ttlMs": 2000}
    )
    # The holder is told when JetStream will drop its lease, not its host's idea of it.
    assert abs(ms_of(first["lease"]["expiresAt"]) / 1000 - (t0 + 2)) < 1.5, first

    async def taken() -> dict[str, Any]:
        got = await _call(client, "mem::lease-acquire", {"actionId": aid, "agentId": "late"})
        return got if got.get("success") else {}

    await eventually(taken, timeout=15, interval=0.2, what="the lease to expire and be taken")
    late = await _call(
        client, "mem::lease-release", {"actionId": aid, "agentId": "early", "result": "stale"}
    )
    assert late.get("success") is False, late
    renew = await _call(client, "mem::lease-renew", {"actionId": aid, "agentId": "early"})
    assert renew.get("success") is False, renew
    done = await _call(
        client, "mem::lease-release", {"actionId": aid, "agentId": "late", "result": "fresh"}
    )
    assert done.get("success") is True, done
    a = await _call(client, "mem::action-get", {"actionId": aid})
    assert (a["action"]["status"], a["action"]["result"]) == ("done", "fresh"), a
