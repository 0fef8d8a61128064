"""The viewer's server and the operations behind it, over HTTP and its WebSocket: who may
use it, what it forwards, the snapshot and live events, replay and transcript imports."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.fixtures import Stack
from tests.viewer.transcripts import transcript

STATIC = Path(__file__).resolve().parents[2] / "workers" / "viewer" / "static"


# ---- who may use it ------------------------------------------------------------------------
def _nonce(csp: str) -> str:
    m = re.search(r"script-src 'nonce-([^']+)' 'strict-dynamic'", csp)
    assert m, csp
    return m.group(1)


def test_every_page_load_gets_a_csp_with_its_own_nonce(stack: Stack, viewer: httpx.Client) -> None:
    first, second = viewer.get("/"), viewer.get("/")
    assert first.status_code == 200
    csp = first.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    n1, n2 = _nonce(csp), _nonce(second.headers["content-security-policy"])
    assert n1 != n2
    assert f'<script type="module" src="/static/app.js" nonce="{n1}">' in first.text
    assert first.headers["x-content-type-options"] == "nosniff"
    assert viewer.get("/static/app.js").headers["content-security-policy"]


@pytest.mark.unit
def test_the_page_has_no_inline_script_or_handler() -> None:
    html = (STATIC / "index.html").read_text()
    assert not re.search(r"<script(?![^>]*\bsrc=)", html)
    for f in [STATIC / "index.html", *STATIC.rglob("*.js")]:
        text = f.read_text()
        assert not re.search(r"\son[a-z]+\s*=\s*[\"']", text), f
        assert not re.search(
            r"\.(innerHTML|outerHTML)\s*=|insertAdjacentHTML|document\.write", text
        ), f


def test_a_foreign_origin_or_host_is_refused(stack: Stack, viewer: httpx.Client) -> None:
    body = {"content": "should never be saved " + uuid.uuid4().hex}
    for origin in ("http://evil.example", "http://127.0.0.1:5173", "null"):
        r = viewer.post("/agentmemory/remember", json=body, headers={"origin": origin})
        assert r.status_code == 403, origin
        assert r.json()["error"]["field"] == "Origin"
    r = viewer.get("/", headers={"host": "evil.example"})
    assert r.status_code == 403 and r.json()["error"]["field"] == "Host"
    own = viewer.get("/agentmemory/sessions", headers={"origin": stack.viewer})
    assert own.status_code == 200
    with stack.rest() as c:
        memories = c.get("/agentmemory/memories", params={"limit": 10000}).json()["memories"]
        assert body["content"] not in [m["content"] for m in memories]


async def test_the_live_socket_refuses_foreign_origins_and_hosts(
    stack: Stack, viewer: httpx.Client
) -> None:
    ws = stack.viewer.replace("http", "ws") + "/live"
    cookie = stack.cookie(viewer)
    for headers in ({"Origin": "http://evil.example"}, {"Host": "evil.example"}):
        with pytest.raises(InvalidStatus):
            async with connect(ws, additional_headers={**headers, **cookie}) as conn:
                await conn.recv()
    async with connect(ws, origin=stack.viewer, additional_headers=cookie) as conn:  # type: ignore[arg-type]
        hello = json.loads(await asyncio.wait_for(conn.recv(), 5))
        assert hello["type"] == "hello"


def test_the_viewer_forwards_the_secret_and_only_the_writes_its_pages_make(
    stack: Stack, viewer: httpx.Client
) -> None:
    assert httpx.get(stack.url + "/agentmemory/sessions").status_code == 401
    assert viewer.get("/agentmemory/sessions").status_code == 200
    refused = viewer.post("/agentmemory/import", json={"data": {}})
    assert refused.status_code == 405 and refused.json()["error"]["field"] == "method"
    assert viewer.delete("/agentmemory/governance/memories").status_code == 405
    bad = viewer.post("/agentmemory/remember", json={"content": ""})
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "content"


def test_the_rest_port_sends_a_browser_to_the_viewer_and_livez_names_its_port(
    stack: Stack,
) -> None:
    r = httpx.get(stack.url + "/agentmemory/viewer", follow_redirects=False)
    assert r.status_code == 302
    assert r.headers["location"] == f"http://127.0.0.1:{stack.engine.ports['viewer']}/"
    live = httpx.get(stack.url + "/agentmemory/livez").json()
    assert live["viewerPort"] == stack.engine.ports["viewer"] and "viewerSkipped" not in live
    doc = httpx.get(stack.url + "/agentmemory/openapi.json").json()
    assert set(doc["paths"]["/agentmemory/viewer"]["get"]["responses"]) >= {"302"}
    for path in ("/agentmemory/viewer/snapshot", "/agentmemory/replay/sessions",
                 "/agentmemory/replay/load", "/agentmemory/replay/import-jsonl"):  # fmt: skip
        assert path in doc["paths"], path


# ---- snapshot and live events ---------------------------------------------------------------
def test_the_snapshot_holds_recent_activity_and_the_sequence_it_covers(stack: Stack) -> None:
    sid = "snap-" + uuid.uuid4().hex[:8]
    stack.observe(sid, 2)
    with stack.rest() as c:
        snap = c.get("/agentmemory/viewer/snapshot", params={"limit": 50}).json()
        mine = [a for a in snap["activity"] if a.get("sessionId") == sid]
        assert [a["kind"] for a in mine] == ["observation", "observation"]
        assert mine[0]["seq"] > mine[1]["seq"]  # newest first
        assert snap["seq"] >= mine[0]["seq"]
        assert "viewer-demo" in snap["projects"]
        assert snap["health"]["status"] in ("ok", "degraded")
        assert c.get("/agentmemory/viewer/snapshot", params={"limit": 0}).status_code == 400


def test_older_activity_pages_back_from_a_sequence(stack: Stack) -> None:
    stack.observe("older-" + uuid.uuid4().hex[:6], 6)
    with stack.rest() as c:
        snap = c.get("/agentmemory/viewer/snapshot", params={"limit": 3}).json()
        assert len(snap["activity"]) == 3 and snap["more"] is True
        oldest = snap["activity"][-1]["seq"]
        page = c.get("/agentmemory/viewer/activity", params={"before": oldest, "limit": 4}).json()
        seqs = [a["seq"] for a in page["activity"]]
        assert seqs == sorted(seqs, reverse=True) and all(s < oldest for s in seqs)
        assert 0 < len(seqs) <= 4 and all(a["at"] for a in page["activity"])
        assert c.get("/agentmemory/viewer/activity", params={"before": 0}).status_code == 400


async def test_the_live_socket_sends_what_happens_after_the_snapshot(
    stack: Stack, viewer: httpx.Client
) -> None:
    cookie = stack.cookie(viewer)
    async with httpx.AsyncClient(base_url=stack.viewer, timeout=30, headers=cookie) as c:
        seq = (await c.get("/agentmemory/viewer/snapshot")).json()["seq"]
        ws_url = stack.viewer.replace("http", "ws") + f"/live?after={seq}"
        async with connect(ws_url, origin=stack.viewer, additional_headers=cookie) as ws:  # type: ignore[arg-type]
            assert json.loads(await ws.recv())["type"] == "hello"
            sid = "live-" + uuid.uuid4().hex[:8]
            r = await c.post("/agentmemory/remember", json={"content": f"live memory {sid}"})
            mid = r.json()["memory"]["id"]
            await asyncio.to_thread(stack.observe, sid, 1)
            seen: dict[str, dict[str, object]] = {}
            while not ({"memory", "observation"} <= set(seen)):
                msg = json.loads(await asyncio.wait_for(ws.recv(), 10))
                if msg["type"] == "event" and msg["item"]["id"] == mid:
                    seen["memory"] = msg["item"]
                if msg["type"] == "event" and msg["item"].get("sessionId") == sid:
                    seen["observation"] = msg["item"]
            assert seen["observation"]["seq"] > seq  # type: ignore[operator]


# ---- memories: edit = a new version, type filter --------------------------------------------
def test_an_edit_is_a_new_version_of_the_memory_it_names(stack: Stack) -> None:
    with stack.rest() as c:
        first = c.post("/agentmemory/remember", json={"content": "The nightly build runs at 02:00 UTC.",
                                                      "type": "decision", "project": "edits"})  # fmt: skip
        old = first.json()["memory"]["id"]
        edit = c.post("/agentmemory/remember", json={"content": "Builds run hourly now.",
                                                     "type": "decision", "supersedes": old})  # fmt: skip
        assert edit.status_code == 201, edit.text
        new = edit.json()["memory"]
        assert new["version"] == 2 and new["supersedes"] == old and new["project"] == "edits"
        assert edit.json()["supersededId"] == old
        doc = c.get(f"/agentmemory/memories/{new['id']}").json()
        assert [v["id"] for v in doc["versions"]] == [old]
        again = c.post("/agentmemory/remember", json={"content": "x y z", "supersedes": old})
        assert again.status_code == 409 and again.json()["error"]["field"] == "supersedes"
        missing = c.post("/agentmemory/remember", json={"content": "x", "supersedes": "mem_nope"})
        assert missing.status_code == 404 and missing.json()["error"]["field"] == "supersedes"
        listed = c.get("/agentmemory/memories", params={"project": "edits", "type": "decision"})
        assert [m["id"] for m in listed.json()["memories"]] == [new["id"]]
        none = c.get("/agentmemory/memories", params={"project": "edits", "type": "fact"})
        assert none.json()["memories"] == []


# ---- replay ----------------------------------------------------------------------------------
def test_replay_load_makes_a_tool_observation_a_call_and_its_result(stack: Stack) -> None:
    sid = "replay-" + uuid.uuid4().hex[:8]
    stack.observe(sid, 10)
    with stack.rest() as c:
        r = c.get("/agentmemory/replay/load", params={"sessionId": sid})
        assert r.status_code == 200
        tl = r.json()["timeline"]
        assert tl["eventCount"] == 20 and tl["sessionId"] == sid
        kinds = [e["kind"] for e in tl["events"]]
        assert kinds == ["tool_call", "tool_result"] * 10
        call, result = tl["events"][0], tl["events"][1]
        assert call["toolName"] == "Bash" and call["toolInput"] == {
            "command": "pytest tests/test_step_0.py -q"
        }
        assert result["toolOutput"] == "1 passed"
        offsets = [e["offsetMs"] for e in tl["events"]]
        assert offsets == sorted(offsets) and all(e["durationMs"] >= 300 for e in tl["events"])
        listed = c.get("/agentmemory/replay/sessions").json()
        assert listed["success"] and sid in [s["id"] for s in listed["sessions"]]
        missing = c.get("/agentmemory/replay/load", params={"sessionId": "no-such-session"})
        assert missing.status_code == 404 and missing.json()["error"]["field"] == "sessionId"
        assert c.get("/agentmemory/replay/load").status_code == 400


def _write_transcript(stack: Stack, sid: str) -> Path:
    folder = stack.home / ".claude" / "projects" / "-home-dev-orders-api"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{sid}.jsonl"
    path.write_text(transcript(sid, "/home/dev/orders-api"))
    return path


def test_an_imported_transcript_is_indexed_marked_import_and_teaches_lessons(
    stack: Stack,
) -> None:
    sid = str(uuid.uuid4())
    path = _write_transcript(stack, sid)
    with stack.rest() as c:
        r = c.post("/agentmemory/replay/import-jsonl", json={"path": str(path)})
        assert r.status_code == 202, r.text
        out = r.json()
        # a prompt, then per turn a response and a tool call with its result
        assert (out["imported"], out["sessionIds"], out["observations"]) == (1, [sid], 7)
        assert out["stored"] == 7 and out["duplicates"] == 0 and out["lessons"] >= 2
        session = next(
            s for s in c.get("/agentmemory/replay/sessions").json()["sessions"] if s["id"] == sid
        )
        assert session["origin"] == "import" and session["project"] == "orders-api"
        obs = c.get("/agentmemory/observations", params={"sessionId": sid}).json()["observations"]
        assert {o["origin"] for o in obs} == {"import"}
        kinds = [
            e["kind"]
            for e in c.get("/agentmemory/replay/load", params={"sessionId": sid}).json()[
                "timeline"
            ]["events"]
        ]
        assert kinds[:4] == ["prompt", "response", "tool_call", "tool_result"]
        hits = c.post(
            "/agentmemory/search", json={"query": "accounting import column order"}
        ).json()
        assert sid in json.dumps(hits)
        lessons = c.post("/agentmemory/lessons/recall", json={"query": "reorder columns"}).json()
        assert any(
            "Never reorder the existing columns" in les["content"] for les in lessons["lessons"]
        )
        audit = c.get("/agentmemory/audit").json()["entries"]
        assert any(e["action"] == "import" and sid in e["targetIds"] for e in audit)
        again = c.post("/agentmemory/replay/import-jsonl", json={"path": str(path)}).json()
        assert (again["stored"], again["duplicates"], again["lessons"]) == (0, 7, 0)
        assert len(c.get("/agentmemory/observations", params={"sessionId": sid}).json()["observations"]) == 7  # fmt: skip


def test_a_transcript_can_be_uploaded_and_a_server_path_is_checked(stack: Stack) -> None:
    sid = str(uuid.uuid4())
    mine = stack.home / ".agentmemory"  # an allowed root (with the data dir, ~/.claude/projects)
    mine.mkdir(exist_ok=True)
    (mine / "notes.txt").write_text("x")
    link = mine / "link.jsonl"
    if not link.is_symlink():
        link.symlink_to(mine / "notes.txt")
    with stack.rest() as c:
        up = c.post("/agentmemory/replay/import-jsonl",
                    json={"content": transcript(sid, "/home/dev/billing", turns=1), "name": "t.jsonl"})  # fmt: skip
        assert up.status_code == 202 and up.json()["sessionIds"] == [sid]
        default = c.post("/agentmemory/replay/import-jsonl", json={})
        assert default.status_code == 202  # ~/.claude/projects of the server's HOME
        for body, status, field in (
            ({"path": str(mine / ".ssh")}, 403, "path"),  # secret-looking
            ({"path": str(link)}, 403, "path"),  # a symlink
            ({"path": str(mine / "nowhere")}, 404, "path"),
            ({"path": str(mine / "notes.txt")}, 404, "path"),  # not a transcript
            ({"path": str(mine)}, 202, None),
            ({"maxFiles": 0}, 400, "maxFiles"),
            ({"path": 7}, 400, "path"),
            ({"path": "x\u0000y"}, 400, "path"),
            ({"path": "0" * 4000}, 404, "path"),  # longer than any file name
        ):
            r = c.post("/agentmemory/replay/import-jsonl", json=body)
            assert r.status_code == status, (body, r.text)
            if field:
                assert r.json()["error"]["field"] == field
        # outside the allowed roots: upstream's answer (0.9.30), success false naming the way in
        for outside in (stack.home / "nowhere", stack.home):
            r = c.post("/agentmemory/replay/import-jsonl", json={"path": str(outside)})
            assert r.status_code == 202 and r.json()["success"] is False, (outside, r.text)
            assert "AGENTMEMORY_IMPORT_ROOT" in r.json()["error"]
