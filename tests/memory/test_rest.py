"""The REST surface through real processes: upstream paths, payloads and status codes."""

from __future__ import annotations

import httpx

from tests.memory.test_observe import payload


async def test_livez_and_health_are_public_with_the_upstream_shape(rest: httpx.AsyncClient) -> None:
    r = await rest.get("/agentmemory/livez", headers={"Authorization": ""})
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "ok" and body["service"] == "agentmemory"
    assert "viewerPort" in body or body.get("viewerSkipped")
    assert isinstance(body["streamsPort"], int)
    h = await rest.get("/agentmemory/health", headers={"Authorization": ""})
    assert h.status_code == 200 and h.json()["bootId"] == body["bootId"]


async def test_protected_routes_need_the_bearer(rest: httpx.AsyncClient) -> None:
    r = await rest.get("/agentmemory/sessions", headers={"Authorization": "Bearer wrong"})
    assert r.status_code == 401
    assert r.json()["error"]["code"] == "UNAUTHORIZED"  # the shape of every other error


async def test_observe_replies_201_then_200_for_a_replay_with_boot_id(
    rest: httpx.AsyncClient,
) -> None:
    p = payload(eventId="toolu_rest_1")
    first = await rest.post("/agentmemory/observe", json=p)
    again = await rest.post("/agentmemory/observe", json=p)
    assert (first.status_code, again.status_code) == (201, 200)
    a, b = first.json(), again.json()
    for body in (a, b):
        assert {"bootId", "acceptedAt", "durableAfterMs", "observationId"} <= body.keys()
    assert a["observationId"] == b["observationId"]
    got = await rest.get("/agentmemory/observations", params={"sessionId": "s1"})
    assert [o["id"] for o in got.json()["observations"]] == [a["observationId"]]
    assert got.json()["observations"][0]["sessionId"] == "s1"


async def test_observe_rejections_name_the_field(rest: httpx.AsyncClient) -> None:
    r = await rest.post("/agentmemory/observe", json=payload(hookType="bogus"))
    assert r.status_code == 400 and r.json()["error"]["field"] == "hookType"
    r = await rest.post("/agentmemory/observe", json=payload(timestamp="later"))
    assert r.status_code == 422 and r.json()["error"]["field"] == "timestamp"
    r = await rest.post("/agentmemory/observe", content=b"{}")
    assert r.status_code == 400 and r.json()["error"]["field"] in (
        "hookType",
        "sessionId",
        "timestamp",
        "data",
    )


async def test_writes_need_json_content_type(rest: httpx.AsyncClient) -> None:
    r = await rest.post(
        "/agentmemory/remember", content=b"{}", headers={"Content-Type": "text/plain"}
    )
    assert r.status_code == 415


async def test_session_start_returns_session_and_context_and_end_is_idempotent(
    rest: httpx.AsyncClient,
) -> None:
    r = await rest.post(
        "/agentmemory/session/start", json={"sessionId": "S", "project": "p", "cwd": "/w"}
    )
    assert r.status_code == 200
    body = r.json()
    assert body["session"]["id"] == "S" and body["session"]["status"] == "active"
    assert isinstance(body["context"], str)
    # upstream 0.9.30's shape: the first end ends it, the next say so and write nothing
    ends = [
        (e.status_code, e.json())
        for e in [
            await rest.post("/agentmemory/session/end", json={"sessionId": "S"}) for _ in range(3)
        ]
    ]
    assert ends == [
        (200, {"success": True, "ended": True}),
        *[(200, {"success": True, "ended": False, "reason": "already_completed"})] * 2,
    ]
    unknown = await rest.post("/agentmemory/session/end", json={"sessionId": "never-seen"})
    assert unknown.json() == {"success": True, "ended": False, "reason": "not_found"}
    sessions = (await rest.get("/agentmemory/sessions", params={"limit": 5})).json()["sessions"]
    assert [(s["id"], s["status"]) for s in sessions] == [("S", "ended")]


async def test_remember_supersedes_a_near_duplicate_and_hints_a_similar_one(
    rest: httpx.AsyncClient,
) -> None:
    base = {"type": "fact", "concepts": ["db"], "files": [], "project": "p"}
    one = await rest.post(
        "/agentmemory/remember",
        json={**base, "content": "The staging database runs on port 5433 behind pgbouncer"},
    )
    assert one.status_code == 201
    old_id = one.json()["memory"]["id"]
    two = await rest.post(
        "/agentmemory/remember",
        json={**base, "content": "The staging database runs on port 5434 behind pgbouncer"},
    )
    body = two.json()
    assert body["supersededId"] == old_id
    assert body["memory"]["version"] == 2 and body["memory"]["supersedes"] == old_id
    three = await rest.post(
        "/agentmemory/remember",
        json={
            **base,
            "content": "The staging database pgbouncer runs with pool size 20 on port 5434",
        },
    )
    assert [s["id"] for s in three.json()["similarTo"]] == [body["memory"]["id"]]
    current = (await rest.get("/agentmemory/memories", params={"project": "p"})).json()["memories"]
    assert old_id not in [m["id"] for m in current]
    chain = (await rest.get(f"/agentmemory/memories/{body['memory']['id']}")).json()
    assert [v["id"] for v in chain["versions"]] == [old_id]
    audit = (await rest.get("/agentmemory/audit", params={"limit": 10})).json()["entries"]
    assert audit[0]["action"] == "supersede"


async def test_forget_removes_the_memory_and_writes_an_audit_entry(rest: httpx.AsyncClient) -> None:
    m = (await rest.post("/agentmemory/remember", json={"content": "forget me please"})).json()[
        "memory"
    ]
    r = await rest.post("/agentmemory/forget", json={"memoryId": m["id"], "reason": "test"})
    assert r.json()["deleted"] == 1
    assert (await rest.get(f"/agentmemory/memories/{m['id']}")).status_code == 404
    audit = (await rest.get("/agentmemory/audit")).json()["entries"]
    assert (audit[0]["action"], audit[0]["targetIds"]) == ("forget", [m["id"]])
    empty = await rest.post("/agentmemory/forget", json={})
    assert empty.status_code == 400 and empty.json()["error"]["field"] == "memoryId"


async def test_forgotten_observation_is_not_resurrected_by_a_replay(
    rest: httpx.AsyncClient,
) -> None:
    p = payload(eventId="toolu_forget")
    oid = (await rest.post("/agentmemory/observe", json=p)).json()["observationId"]
    await rest.post("/agentmemory/forget", json={"observationIds": [oid]})
    again = await rest.post("/agentmemory/observe", json=p)
    assert again.status_code == 200
    assert (await rest.get(f"/agentmemory/observations/{oid}")).status_code == 404


async def test_forget_a_session_removes_its_observations_and_record(
    rest: httpx.AsyncClient,
) -> None:
    await rest.post("/agentmemory/session/start", json={"sessionId": "gone", "project": "p"})
    for i in range(3):
        await rest.post("/agentmemory/observe", json=payload(sessionId="gone", eventId=f"g{i}"))
    r = await rest.post("/agentmemory/forget", json={"sessionId": "gone"})
    assert r.json()["deleted"] == 4
    assert (await rest.get("/agentmemory/observations", params={"sessionId": "gone"})).json()[
        "observations"
    ] == []


async def test_export_then_import_with_each_strategy(rest: httpx.AsyncClient) -> None:
    for i in range(3):
        await rest.post("/agentmemory/observe", json=payload(sessionId=f"x{i}", eventId=f"e{i}"))
    await rest.post("/agentmemory/remember", json={"content": "exported memory", "project": "p"})
    page = (await rest.get("/agentmemory/export", params={"maxSessions": 2, "offset": 0})).json()
    assert len(page["sessions"]) == 2 and page["nextOffset"] == 2 and page["totalSessions"] == 3
    full = (await rest.get("/agentmemory/export")).json()
    assert sum(len(v) for v in full["observations"].values()) == 3 and len(full["memories"]) == 1

    full["memories"][0]["content"] = "changed in the file"
    skip = (await rest.post("/agentmemory/import", json={"strategy": "skip", "data": full})).json()
    assert skip["skipped"] == 3 + 3 + 1
    kept = (await rest.get("/agentmemory/memories")).json()["memories"]
    assert kept[0]["content"] == "exported memory"
    await rest.post("/agentmemory/import", json={"strategy": "merge", "exportData": full})
    merged = (await rest.get("/agentmemory/memories")).json()["memories"]
    assert merged[0]["content"] == "changed in the file"

    small = {
        "sessions": [],
        "observations": {},
        "memories": [{"id": "mem_only", "content": "only me"}],
    }
    rep = await rest.post("/agentmemory/import", json={"strategy": "replace", "data": small})
    assert rep.status_code == 200, rep.text
    assert [m["id"] for m in (await rest.get("/agentmemory/memories")).json()["memories"]] == [
        "mem_only"
    ]
    assert (await rest.get("/agentmemory/sessions")).json()["sessions"] == []
    audit = (await rest.get("/agentmemory/audit")).json()["entries"]
    assert any(a["action"] == "import-replace" for a in audit)
    bad = await rest.post("/agentmemory/import", json={"strategy": "wipe", "data": small})
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "strategy"


async def test_capture_lists_empty_inbox_and_status_reports_checks(rest: httpx.AsyncClient) -> None:
    cap = (await rest.get("/agentmemory/capture")).json()
    assert cap["items"] == [] and cap["total"] == 0
    assert cap["capture"]["inbox"] == {
        "pending": 0, "retrying": 0, "dead": 0, "oldestAcceptedAt": None,
        "nextAttemptAt": None, "lastError": None,
    }  # fmt: skip
    st = (await rest.get("/agentmemory/status")).json()
    names = {c["name"]: c for c in st["checks"]}
    assert names["events"]["ok"] and names["inbox"]["ok"]
    html = await rest.get("/agentmemory/status", headers={"Accept": "text/html"})
    assert html.headers["content-type"].startswith("text/html") and "<table>" in html.text


async def test_openapi_document_lists_the_memory_routes(rest: httpx.AsyncClient) -> None:
    doc = (await rest.get("/agentmemory/openapi.json")).json()
    for path in ("/agentmemory/observe", "/agentmemory/session/start", "/agentmemory/import"):
        assert path in doc["paths"]
    assert "requestBody" in doc["paths"]["/agentmemory/observe"]["post"]
