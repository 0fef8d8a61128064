"""Checkpoints, sentinels, sketches and crystals against real workers. Sentinels fire from
the engine's triggers: a timer by a TTL key's expiry (state trigger), a pattern by the cron
that reads MEM_EVENTS, a checkpoint's resolution (state trigger)."""

from __future__ import annotations

from typing import Any

import httpx

from engine import Client
from tests.coordination.test_actions import make
from tests.fixtures import eventually

A = "/agentmemory/"


async def status_of(rest: httpx.AsyncClient, action_id: str) -> str:
    got = (await rest.get(A + "actions/get", params={"actionId": action_id})).json()
    return str(got["action"]["status"])


async def test_a_checkpoint_gates_actions_until_it_passes(rest: httpx.AsyncClient) -> None:
    deploy = await make(rest, "deploy")
    r = await rest.post(
        A + "checkpoints",
        json={"name": "CI green", "type": "ci", "linkedActionIds": [deploy["id"]]},
    )
    assert r.status_code == 201, r.text
    cp = r.json()["checkpoint"]
    assert cp["status"] == "pending" and await status_of(rest, deploy["id"]) == "blocked"
    r = await rest.post(A + "leases/acquire", json={"actionId": deploy["id"], "agentId": "a"})
    assert r.status_code == 409 and r.json()["blockers"] == [f"checkpoint:{cp['id']}:CI green"]

    r = await rest.post(
        A + "checkpoints/resolve", json={"checkpointId": cp["id"], "status": "passed"}
    )
    assert r.status_code == 200 and r.json()["unblockedCount"] == 1
    assert await status_of(rest, deploy["id"]) == "pending"
    r = await rest.post(
        A + "checkpoints/resolve", json={"checkpointId": cp["id"], "status": "failed"}
    )
    assert r.status_code == 409  # resolved once
    listed = (await rest.get(A + "checkpoints", params={"status": "passed"})).json()
    assert [c["id"] for c in listed["checkpoints"]] == [cp["id"]]


async def test_a_failed_checkpoint_keeps_its_actions_blocked(rest: httpx.AsyncClient) -> None:
    a = await make(rest, "release")
    cp = (
        await rest.post(A + "checkpoints", json={"name": "approval", "linkedActionIds": a["id"]})
    ).json()["checkpoint"]
    await rest.post(A + "checkpoints/resolve", json={"checkpointId": cp["id"], "status": "failed"})
    assert await status_of(rest, a["id"]) == "blocked"


async def test_an_external_sentinel_fires_once_and_unblocks(rest: httpx.AsyncClient) -> None:
    a = await make(rest, "merge")
    r = await rest.post(
        A + "sentinels",
        json={"name": "approved", "type": "approval", "linkedActionIds": a["id"]},
    )
    assert r.status_code == 201, r.text
    snl = r.json()["sentinel"]
    assert await status_of(rest, a["id"]) == "blocked"
    r = await rest.post(
        A + "sentinels/trigger", json={"sentinelId": snl["id"], "result": '{"by": "lead"}'}
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["sentinel"]["status"] == "triggered" and body["sentinel"]["result"] == {
        "by": "lead"
    }
    assert body["unblockedCount"] == 1 and await status_of(rest, a["id"]) == "pending"
    r = await rest.post(A + "sentinels/trigger", json={"sentinelId": snl["id"]})
    assert r.status_code == 409


async def test_sentinel_configs_are_checked(rest: httpx.AsyncClient) -> None:
    for body in [
        {"name": "t", "type": "timer", "config": {}},
        {"name": "t", "type": "pattern", "config": '{"pattern": "("}'},
        {"name": "t", "type": "threshold", "config": {"metric": "m", "operator": "ge", "value": 1}},
        {"name": "t", "type": "pattern", "config": "{not json"},
        {"name": "t", "type": "sometime"},
    ]:
        r = await rest.post(A + "sentinels", json=body)
        assert r.status_code in (400, 422), (body, r.text)  # malformed, or impossible
        assert r.json()["error"]["field"] in ("config", "type"), r.text


async def test_a_timer_sentinel_fires_by_a_ttl_key_expiring(
    rest: httpx.AsyncClient, spawn: Any
) -> None:
    spawn("workers.trigger_plugins", "state")
    a = await make(rest, "after the cool-down")
    r = await rest.post(
        A + "sentinels",
        json={
            "name": "cool-down",
            "type": "timer",
            "config": '{"durationMs": 1000}',
            "linkedActionIds": a["id"],
        },
    )
    snl = r.json()["sentinel"]
    assert snl["dueAt"] and await status_of(rest, a["id"]) == "blocked"

    async def fired() -> bool:
        listed = (await rest.get(A + "sentinels", params={"status": "triggered"})).json()
        return [s["id"] for s in listed["sentinels"]] == [snl["id"]]

    await eventually(fired, timeout=10, what="the timer to fire")
    assert await status_of(rest, a["id"]) == "pending"


async def _scan_armed(client: Client) -> bool:
    store = await client.bucket("engine_triggers", history=5)
    return await store.get("cron.sentinel-scan") is not None


async def test_a_pattern_sentinel_fires_on_a_stored_observation(
    rest: httpx.AsyncClient, spawn: Any, client: Client
) -> None:
    spawn("workers.trigger_plugins", "cron")
    # no pattern sentinel: no scan firing every two seconds (an idle install stays idle)
    assert not await _scan_armed(client)
    a = await make(rest, "fix the webhook")
    r = await rest.post(
        A + "sentinels",
        json={
            "name": "webhook failure seen",
            "type": "pattern",
            "config": {"pattern": "webhook.*timeout"},
            "linkedActionIds": [a["id"]],
        },
    )
    snl = r.json()["sentinel"]
    await eventually(lambda: _scan_armed(client), what="the scan's cron trigger armed")
    obs = {
        "hookType": "post_tool_failure",
        "sessionId": "s1",
        "timestamp": "2099-01-01T00:00:00.000Z",
        "project": "p",
        "data": {
            "tool_name": "Bash",
            "tool_input": {"command": "pytest tests/test_webhook.py"},
            "error": "webhook delivery failed: TimeoutError after 30s",
        },
    }

    r = await rest.post(A + "observe", json=obs)
    assert r.status_code == 201, r.text

    async def fired() -> bool:
        s = (await rest.get(A + "sentinels", params={"type": "pattern"})).json()["sentinels"][0]
        return bool(s["status"] == "triggered")

    await eventually(fired, timeout=15, interval=0.25, what="the pattern sentinel")
    s = (await rest.get(A + "sentinels", params={"type": "pattern"})).json()["sentinels"][0]
    assert s["id"] == snl["id"] and s["result"]["reason"] == "pattern_matched"
    assert await status_of(rest, a["id"]) == "pending"

    async def disarmed() -> bool:
        return not await _scan_armed(client)

    await eventually(disarmed, what="the scan's cron trigger removed once none watches")


async def test_a_pattern_sentinel_matches_only_what_is_stored_after_it(
    rest: httpx.AsyncClient,
) -> None:
    def failure(sid: str, text: str) -> dict[str, Any]:
        return {
            "hookType": "post_tool_failure",
            "sessionId": sid,
            "timestamp": "2099-01-01T00:00:00.000Z",
            "data": {"tool_name": "Bash", "error": text},
        }

    await rest.post(A + "observe", json=failure("s1", "killed: out of memory (old)"))
    r = await rest.post(
        A + "sentinels",
        json={"name": "oom", "type": "pattern", "config": {"pattern": "out of memory"}},
    )
    snl = r.json()["sentinel"]
    r = await rest.post(A + "sentinels/check")
    assert r.status_code == 200 and r.json()["triggered"] == []  # the old one does not count
    new = (await rest.post(A + "observe", json=failure("s2", "killed: out of memory again"))).json()
    r = await rest.post(A + "sentinels/check")
    assert r.json()["triggered"] == [snl["id"]]
    got = (await rest.get(A + "sentinels")).json()["sentinels"][0]
    assert got["result"]["matchedObservationId"] == new["observationId"]


async def test_a_checkpoint_sentinel_fires_when_the_checkpoint_resolves(
    rest: httpx.AsyncClient, spawn: Any
) -> None:
    spawn("workers.trigger_plugins", "state")
    cp = (await rest.post(A + "checkpoints", json={"name": "deploy ok", "type": "deploy"})).json()[
        "checkpoint"
    ]
    a = await make(rest, "announce")
    snl = (
        await rest.post(
            A + "sentinels",
            json={
                "name": "deployed",
                "type": "checkpoint",
                "config": {"checkpointId": cp["id"]},
                "linkedActionIds": a["id"],
            },
        )
    ).json()["sentinel"]
    await rest.post(A + "checkpoints/resolve", json={"checkpointId": cp["id"], "status": "passed"})

    async def fired() -> bool:
        got = (await rest.get(A + "sentinels", params={"type": "checkpoint"})).json()
        return bool(got["sentinels"][0]["status"] == "triggered")

    await eventually(fired, timeout=10, what="the checkpoint sentinel")
    assert (await rest.get(A + "sentinels")).json()["sentinels"][0]["id"] == snl["id"]
    assert await status_of(rest, a["id"]) == "pending"


async def test_sketches_add_promote_discard_and_expire(rest: httpx.AsyncClient, spawn: Any) -> None:
    spawn("workers.trigger_plugins", "state")
    sk = (await rest.post(A + "sketches", json={"title": "try a cache", "project": "p"})).json()[
        "sketch"
    ]
    one = (
        await rest.post(A + "sketches/add", json={"sketchId": sk["id"], "title": "measure"})
    ).json()
    two = (
        await rest.post(
            A + "sketches/add",
            json={"sketchId": sk["id"], "title": "add the cache", "dependsOn": one["action"]["id"]},
        )
    ).json()
    assert two["action"]["status"] == "blocked" and two["action"]["sketchId"] == sk["id"]
    front = (await rest.get(A + "frontier", params={"project": "p"})).json()
    assert front["frontier"] == []  # sketched work is not on the frontier
    r = await rest.post(A + "sketches/promote", json={"sketchId": sk["id"], "project": "q"})
    assert set(r.json()["promotedIds"]) == {one["action"]["id"], two["action"]["id"]}
    front = (await rest.get(A + "frontier", params={"project": "q"})).json()
    assert [i["action"]["id"] for i in front["frontier"]] == [one["action"]["id"]]
    r = await rest.post(A + "sketches/add", json={"sketchId": sk["id"], "title": "late"})
    assert r.status_code == 409

    gone = (await rest.post(A + "sketches", json={"title": "dead end"})).json()["sketch"]
    x = (await rest.post(A + "sketches/add", json={"sketchId": gone["id"], "title": "x"})).json()
    r = await rest.post(A + "sketches/discard", json={"sketchId": gone["id"]})
    assert r.json()["discardedCount"] == 1
    r = await rest.get(A + "actions/get", params={"actionId": x["action"]["id"]})
    assert r.status_code == 404

    brief = (await rest.post(A + "sketches", json={"title": "spike", "expiresInMs": 1000})).json()[
        "sketch"
    ]
    await rest.post(A + "sketches/add", json={"sketchId": brief["id"], "title": "y"})

    async def collected() -> bool:
        got = (await rest.get(A + "sketches", params={"status": "discarded"})).json()
        return brief["id"] in {s["id"] for s in got["sketches"]}

    await eventually(collected, timeout=10, what="the sketch's expiry")
    listed = (await rest.get(A + "sketches")).json()["sketches"]
    assert {s["id"]: s["actionCount"] for s in listed}[sk["id"]] == 2


async def test_a_crystal_digests_a_done_chain_into_a_memory(
    rest: httpx.AsyncClient, client: Client
) -> None:
    a = await make(rest, "profile the importer", tags="perf")
    b = await make(rest, "batch the inserts", requires=a["id"])
    for act, result in (
        (a, "found N+1 queries in src/importer.py"),
        (b, "batched inserts in src/db/bulk.py. Lesson: measure before caching"),
    ):
        await rest.post(A + "leases/acquire", json={"actionId": act["id"], "agentId": "w"})
        r = await rest.post(
            A + "leases/release", json={"actionId": act["id"], "agentId": "w", "result": result}
        )
        assert r.status_code == 200, r.text
    open_one = await make(rest, "not yet")
    r = await rest.post(A + "crystals/create", json={"actionIds": f"{a['id']},{open_one['id']}"})
    assert r.status_code == 409 and r.json()["error"]["field"] == "actionIds[1]"

    r = await rest.post(A + "crystals/create", json={"actionIds": f"{a['id']}, {b['id']}"})
    assert r.status_code == 201, r.text
    crystal = r.json()["crystal"]
    assert crystal["method"] == "synthetic"
    assert crystal["filesAffected"] == ["src/importer.py", "src/db/bulk.py"]
    assert crystal["lessons"] == ["measure before caching"]
    assert "profile the importer" in crystal["narrative"]
    memory = (await rest.get(A + f"memories/{crystal['memoryId']}")).json()["memory"]
    assert memory["type"] == "crystal" and "src/db/bulk.py" in memory["content"]
    got = (await rest.get(A + "actions/get", params={"actionId": b["id"]})).json()
    assert got["action"]["crystallizedInto"] == crystal["id"]
    listed = (await rest.get(A + "crystals", params={"project": "p"})).json()["crystals"]
    assert [c["id"] for c in listed] == [crystal["id"]]
    dry = (await rest.post(A + "crystals/auto", json={"olderThanDays": 0, "dryRun": True})).json()
    assert dry["groupCount"] == 0  # both already crystallized
