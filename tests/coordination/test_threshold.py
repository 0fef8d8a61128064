"""Threshold sentinels, as upstream's mem::sentinel-check evaluates them: `{metric, operator,
value}` against the calls of the function `metric` names (here the workers' own counters,
read from `$SRV.STATS`); crossing fires with reason `threshold_crossed` and unblocks the
linked actions; a metric no worker serves has no figure and fires nothing."""

from __future__ import annotations

import httpx

from tests.coordination.test_actions import make
from tests.coordination.test_gates import status_of
from tests.fixtures import eventually

A = "/agentmemory/"


async def sentinel(rest: httpx.AsyncClient, name: str, config: dict[str, object],
                   linked: list[str] | None = None) -> str:  # fmt: skip
    r = await rest.post(A + "sentinels", json={
        "name": name, "type": "threshold", "config": config, "linkedActionIds": linked or [],
    })  # fmt: skip
    assert r.status_code == 201, r.text
    return str(r.json()["sentinel"]["id"])


async def observe(rest: httpx.AsyncClient, n: int) -> None:
    r = await rest.post(A + "observe", json={
        "hookType": "post_tool_use", "sessionId": "s1", "project": "p",
        "timestamp": f"2026-03-01T10:00:0{n}.000Z",
        "data": {"tool_name": "Bash", "tool_input": {"command": f"echo {n}"}},
    })  # fmt: skip
    assert r.status_code == 201, r.text


async def test_a_threshold_sentinel_fires_when_a_functions_calls_cross_it(
    rest: httpx.AsyncClient,
) -> None:
    ship = await make(rest, "ship after three observations")
    over = await sentinel(rest, "observe > 2",
                          {"metric": "mem::observe", "operator": "gt", "value": 2},
                          [ship["id"]])  # fmt: skip
    unknown = await sentinel(
        rest, "no such function", {"metric": "mem::no-such-function", "operator": "lt", "value": 5}
    )
    assert await status_of(rest, ship["id"]) == "blocked"

    two = await sentinel(
        rest, "observe == 2", {"metric": "mem::observe", "operator": "eq", "value": 2}
    )
    r = await rest.post(A + "sentinels/check")
    assert r.status_code == 200 and over not in r.json()["triggered"]
    await observe(rest, 0)
    await observe(rest, 1)

    async def fired(sid: str) -> bool:
        return sid in (await rest.post(A + "sentinels/check")).json()["triggered"]

    # two calls: equal to 2 fires, greater than 2 does not yet
    await eventually(lambda: fired(two), timeout=15, interval=0.3, what="the eq sentinel")
    assert await status_of(rest, ship["id"]) == "blocked"
    await observe(rest, 2)
    await eventually(lambda: fired(over), timeout=15, interval=0.3, what="the gt sentinel")
    listed = (await rest.get(A + "sentinels", params={"type": "threshold"})).json()["sentinels"]
    by_id = {s["id"]: s for s in listed}
    assert by_id[over]["status"] == "triggered"
    assert by_id[over]["result"] == {
        "reason": "threshold_crossed", "metric": "mem::observe", "currentValue": 3,
        "threshold": 2, "operator": "gt",
    }  # fmt: skip
    assert await status_of(rest, ship["id"]) == "pending"
    # a function no worker serves has no figure: never read as 0 < 5
    assert by_id[unknown]["status"] == "watching"


async def test_an_lt_threshold_fires_while_below(rest: httpx.AsyncClient) -> None:
    below = await sentinel(rest, "quiet", {"metric": "mem::observe", "operator": "lt", "value": 1})
    got = (await rest.post(A + "sentinels/check")).json()["triggered"]
    assert got == [below]  # no call yet: 0 < 1
