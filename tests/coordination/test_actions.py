"""Actions over REST against a real memory worker: edges, statuses, the frontier, `next`,
and refusals that name the field."""

from __future__ import annotations

import asyncio

import httpx

A = "/agentmemory/"


async def make(rest: httpx.AsyncClient, title: str, **kw: object) -> dict[str, object]:
    r = await rest.post(A + "actions", json={"title": title, "project": "p", **kw})
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["success"] is True
    return body["action"]  # type: ignore[no-any-return]


async def test_a_dependency_blocks_until_done_then_unblocks(rest: httpx.AsyncClient) -> None:
    parse = await make(rest, "write the parser", tags="parser, core")
    assert parse["tags"] == ["parser", "core"]  # upstream's tools send comma-separated lists
    test = await make(rest, "test the parser", requires=parse["id"])
    assert test["status"] == "blocked"
    front = (await rest.get(A + "frontier", params={"project": "p"})).json()
    assert [i["action"]["id"] for i in front["frontier"]] == [parse["id"]]
    assert front["totalActions"] == 2 and front["totalUnblocked"] == 1

    r = await rest.post(A + "actions/update", json={"actionId": parse["id"], "status": "done"})
    assert r.status_code == 200 and r.json()["action"]["status"] == "done"
    got = (await rest.get(A + "actions/get", params={"actionId": test["id"]})).json()
    assert got["action"]["status"] == "pending"  # cascaded when its dependency completed
    assert [e["type"] for e in got["edges"]] == ["requires"]
    nxt = (await rest.get(A + "next", params={"project": "p", "agentId": "a1"})).json()
    assert nxt["suggestion"]["actionId"] == test["id"]


async def test_frontier_ranks_by_priority_and_skips_closed_and_other_projects(
    rest: httpx.AsyncClient,
) -> None:
    low = await make(rest, "low", priority=2)
    high = await make(rest, "high", priority=9)
    mid = await make(rest, "mid", priority=5)
    closed = await make(rest, "closed", priority=10)
    await rest.post(A + "actions/update", json={"actionId": closed["id"], "status": "cancelled"})
    await rest.post(A + "actions", json={"title": "elsewhere", "project": "q", "priority": 10})
    front = (await rest.get(A + "frontier", params={"project": "p", "limit": "10"})).json()
    assert [i["action"]["id"] for i in front["frontier"]] == [high["id"], mid["id"], low["id"]]
    assert front["frontier"][0]["score"] > front["frontier"][1]["score"]


async def test_next_spreads_equally_good_work_over_agents(rest: httpx.AsyncClient) -> None:
    ids = {(await make(rest, f"task {i}"))["id"] for i in range(8)}
    picks = {
        (await rest.get(A + "next", params={"project": "p", "agentId": f"agent-{n}"})).json()[
            "suggestion"
        ]["actionId"]
        for n in range(8)
    }
    assert picks <= ids and len(picks) >= 3  # not all eight agents sent to one action


async def test_leased_actions_leave_other_agents_frontier(rest: httpx.AsyncClient) -> None:
    a = await make(rest, "a", priority=9)
    b = await make(rest, "b", priority=1)
    r = await rest.post(A + "leases/acquire", json={"actionId": a["id"], "agentId": "one"})
    assert r.status_code == 200
    mine = (await rest.get(A + "frontier", params={"project": "p", "agentId": "one"})).json()
    theirs = (await rest.get(A + "frontier", params={"project": "p", "agentId": "two"})).json()
    assert [i["action"]["id"] for i in mine["frontier"]] == [a["id"], b["id"]]
    assert mine["frontier"][0]["leased"] is True
    assert [i["action"]["id"] for i in theirs["frontier"]] == [b["id"]]


async def test_edges_blocks_conflicts_and_cycles(rest: httpx.AsyncClient) -> None:
    a = await make(rest, "migrate the schema")
    b = await make(rest, "deploy")
    r = await rest.post(
        A + "actions/edges",
        json={"sourceActionId": a["id"], "targetActionId": b["id"], "type": "blocks"},
    )
    assert r.status_code == 201, r.text
    edge = r.json()["edge"]  # a blocks b: stored as b requires a
    assert (edge["type"], edge["sourceActionId"], edge["targetActionId"]) == (
        "requires",
        b["id"],
        a["id"],
    )
    got = (await rest.get(A + "actions/get", params={"actionId": b["id"]})).json()
    assert got["action"]["status"] == "blocked"
    r = await rest.post(
        A + "actions/edges",
        json={"sourceActionId": a["id"], "targetActionId": b["id"], "type": "requires"},
    )
    assert r.status_code == 409 and "cycle" in r.json()["error"]["message"]

    c = await make(rest, "rewrite the same module")
    r = await rest.post(
        A + "actions/edges",
        json={"sourceActionId": c["id"], "targetActionId": a["id"], "type": "conflicts_with"},
    )
    assert r.status_code == 201
    await rest.post(A + "leases/acquire", json={"actionId": a["id"], "agentId": "x"})
    r = await rest.post(A + "leases/acquire", json={"actionId": c["id"], "agentId": "y"})
    assert r.status_code == 409
    assert r.json()["blockers"] == [f"conflict:{a['id']}:migrate the schema"]


async def test_parent_and_children(rest: httpx.AsyncClient) -> None:
    epic = await make(rest, "epic")
    kids = [await make(rest, f"child {i}", parentId=epic["id"]) for i in range(2)]
    got = (await rest.get(A + "actions/get", params={"actionId": epic["id"]})).json()
    assert [c["id"] for c in got["children"]] == [k["id"] for k in kids]
    listed = (await rest.get(A + "actions", params={"parentId": epic["id"]})).json()["actions"]
    assert {x["id"] for x in listed} == {k["id"] for k in kids}


async def test_bad_input_gets_a_4xx_naming_the_field(rest: httpx.AsyncClient) -> None:
    cases = [
        (A + "actions", {"project": "p"}, 400, "title"),
        (A + "actions", {"title": "   "}, 400, "title"),
        (A + "actions", {"title": "t", "priority": 11}, 400, "priority"),
        (A + "actions", {"title": "t", "requires": "act_nope"}, 404, "requires"),
        (A + "actions", {"title": "t", "parentId": "act_nope"}, 404, "parentId"),
        (A + "actions/update", {"actionId": "act_nope", "status": "done"}, 404, "actionId"),
        (A + "actions/update", {"actionId": "x", "status": "finished"}, 400, "status"),
        (A + "leases/acquire", {"actionId": "act_nope", "agentId": "a"}, 404, "actionId"),
        (A + "leases/acquire", {"actionId": "a"}, 400, "agentId"),
        (A + "leases/acquire", {"actionId": "a", "agentId": "b", "ttlMs": -5}, 400, "ttlMs"),
    ]
    for path, body, status, field in cases:
        r = await rest.post(path, json=body)
        assert r.status_code == status, (path, body, r.text)
        assert r.json()["error"]["field"] == field, (path, body, r.text)


async def test_secrets_in_actions_never_reach_storage(rest: httpx.AsyncClient) -> None:
    key = "sk-ant-api03-" + "a" * 90
    a = await make(rest, "rotate the key", description=f"old key {key}")
    assert key not in str(a)
    got = (await rest.get(A + "actions/get", params={"actionId": a["id"]})).json()
    assert key not in str(got)


async def test_concurrent_edges_on_one_action_are_all_kept(rest: httpx.AsyncClient) -> None:
    hub = await make(rest, "hub")
    deps = [await make(rest, f"dep {i}") for i in range(6)]
    await asyncio.gather(
        *(
            rest.post(
                A + "actions/edges",
                json={"sourceActionId": hub["id"], "targetActionId": d["id"], "type": "requires"},
            )
            for d in deps
        )
    )
    got = (await rest.get(A + "actions/get", params={"actionId": hub["id"]})).json()
    assert len([e for e in got["edges"] if e["sourceActionId"] == hub["id"]]) == 6
    assert got["action"]["status"] == "blocked"
