"""Each family of the surface driven by upstream's own clients (the @agentmemory/mcp shim
and the plugin's hook scripts, unmodified) against the product stack, checking the effect:
slots open the next session's context, a facet query finds the tagged record, verify flags
a memory whose observation was forgotten, the post-commit hook links a session to its
commit, lessons, insights, relations, diagnose/heal, timeline, vision, tool sets,
resources and prompts, and a 3 MiB hook event."""

from __future__ import annotations

import contextlib
import json
import shutil
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from engine import Client, connect, discover
from tests.fixtures import Stack, eventually, git
from tests.upstream.stack import (
    PKG,
    base_tools,
    essential_tools,
    node_env,
    run_script,
    start,
)
from workers.mcp.catalog import tool_defs, visible

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")


def node_env_of(stack: Stack, **extra: str) -> dict[str, str]:
    return node_env(stack.url, stack.home, **extra)


@contextlib.asynccontextmanager
async def shim(stack: Stack) -> AsyncIterator[ClientSession]:
    """Upstream's MCP shim (@agentmemory/mcp, unmodified) as an agent runs it."""
    params = StdioServerParameters(
        command="node", args=[str(PKG / "mcp" / "bin.mjs")], env=node_env_of(stack)
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        yield s


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    st = start(tmp_path_factory.mktemp("surface"))
    yield st
    st.stop()


def text_of(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


def doc_of(result: Any) -> Any:
    assert not result.is_error, text_of(result)
    return json.loads(result.content[0].text)


def hook_base(sid: str, cwd: Path) -> dict[str, Any]:
    return {"session_id": sid, "cwd": str(cwd), "transcript_path": "", "permission_mode": "default"}


def post_tool(stack: Stack, sid: str, cwd: Path, tool: str, tool_input: Any, output: Any) -> None:
    payload = {**hook_base(sid, cwd), "hook_event_name": "PostToolUse", "tool_name": tool,
               "tool_input": tool_input, "tool_response": output}  # fmt: skip
    run_script("post-tool-use.mjs", payload, node_env_of(stack), cwd)


async def observations(stack: Stack, sid: str, n: int = 1) -> list[dict[str, Any]]:
    async with stack.http() as http:

        async def got() -> list[dict[str, Any]]:
            r = await http.get("/agentmemory/observations", params={"sessionId": sid})
            items: list[dict[str, Any]] = r.json()["observations"]
            return items if len(items) >= n else []

        return await eventually(got, timeout=20, what=f"{n} observations of {sid}")


async def test_a_slot_made_through_the_shim_opens_the_next_session_context(
    stack: Stack, tmp_path: Path
) -> None:
    async with shim(stack) as s:
        made = doc_of(await s.call_tool("memory_slot_create", {
            "label": "house_rules", "content": "Run make lint before every commit",
            "pinned": "true", "sizeLimit": 500}))  # fmt: skip
        assert made["slot"]["label"] == "house_rules"
        listed = doc_of(await s.call_tool("memory_slot_list", {}))
        assert "house_rules" in {x["label"] for x in listed["slots"]}
        appended = doc_of(await s.call_tool("memory_slot_append", {
            "label": "house_rules", "text": "Never push to main"}))  # fmt: skip
        assert appended["size"] > 30
        over = await s.call_tool("memory_slot_append", {"label": "house_rules", "text": "x" * 600})
        # the shim passes a refusal's text on (it drops isError): the reason, not a slot
        assert "exceed sizeLimit" in text_of(over) and '"slot"' not in text_of(over)
    out = run_script(
        "session-start.mjs",
        {**hook_base("slot-next-session", tmp_path), "hook_event_name": "SessionStart",
         "source": "startup"},
        node_env_of(stack, AGENTMEMORY_INJECT_CONTEXT="true"),
        tmp_path,
    )  # fmt: skip
    assert "Run make lint before every commit" in out and "Never push to main" in out
    assert "agentmemory pinned slots" in out


async def test_a_facet_query_finds_the_tagged_memory(stack: Stack) -> None:
    async with shim(stack) as s:
        saved = doc_of(await s.call_tool("memory_save", {
            "content": "Refunds go through the ledger service, never straight to Stripe",
            "type": "architecture", "concepts": "refunds, ledger"}))  # fmt: skip
        mid = saved["memory"]["id"]
        assert saved["memory"]["concepts"] == ["refunds", "ledger"]
        for dim, val in (("team", "payments"), ("priority", "high")):
            tag = await s.call_tool("memory_facet_tag", {
                "targetId": mid, "targetType": "memory", "dimension": dim, "value": val})  # fmt: skip
            assert not tag.is_error, text_of(tag)
        found = doc_of(await s.call_tool("memory_facet_query", {
            "matchAll": "team:payments,priority:high"}))  # fmt: skip
        assert [r["targetId"] for r in found["results"]] == [mid]
        assert "ledger service" in found["results"][0]["record"]["content"]
        none = doc_of(await s.call_tool("memory_facet_query", {"matchAll": "team:search"}))
        assert none["results"] == []
        bad = await s.call_tool("memory_facet_tag", {
            "targetId": "mem_nope", "targetType": "memory", "dimension": "a", "value": "b"})  # fmt: skip
        assert "no memory mem_nope" in text_of(bad)
    async with stack.http() as http:
        stats = (await http.get("/agentmemory/facets/stats")).json()
        assert {"dimension": "team", "values": [{"value": "payments", "count": 1}]} in stats[
            "dimensions"
        ]


async def test_verify_flags_a_memory_whose_observation_was_forgotten(
    stack: Stack, tmp_path: Path
) -> None:
    sid = "verify-session"
    post_tool(stack, sid, tmp_path, "Bash", {"command": "alembic upgrade head"},
              {"stdout": "Running upgrade 3f2a -> 9c1b, add invoices table"})  # fmt: skip
    (obs,) = await observations(stack, sid)
    async with stack.http() as http:
        saved = await http.post("/agentmemory/remember", json={
            "content": "Invoices table added in migration 9c1b",
            "sourceObservationIds": [obs["id"]]})  # fmt: skip
        mid = saved.json()["memory"]["id"]
        async with shim(stack) as s:
            ok = doc_of(await s.call_tool("memory_verify", {"id": mid}))
            assert ok["verdict"] == "verified" and ok["citations"][0]["status"] == "present"
            r = await http.post("/agentmemory/forget", json={"observationIds": [obs["id"]]})
            assert r.json()["deleted"] == 1
            broken = doc_of(await s.call_tool("memory_verify", {"id": mid}))
    assert broken["verdict"] == "broken" and broken["verified"] is False
    assert broken["broken"] == [obs["id"]] and broken["citations"][0]["status"] == "forgotten"


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
async def test_the_post_commit_hook_links_a_session_and_by_commit_finds_it(
    stack: Stack, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "billing.py").write_text("TAX = 0.2\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "initial")
    (repo / "billing.py").write_text("TAX = 0.2\nROUND = 2\n")
    git(repo, "commit", "-q", "-am", "billing: flat tax rate")
    sha = git(repo, "rev-parse", "HEAD")
    sid = "commit-session"
    base = hook_base(sid, repo)
    run_script(
        "session-start.mjs", {**base, "hook_event_name": "SessionStart"}, node_env_of(stack), repo
    )
    async with stack.http() as http:

        async def started() -> bool:
            r = await http.get("/agentmemory/sessions")
            return any(x["id"] == sid for x in r.json()["sessions"])

        await eventually(started, timeout=10, what="the session")
        post_tool(stack, sid, repo, "Edit", {"file_path": str(repo / "billing.py"),
                  "old_string": "TAX = 0.2", "new_string": "TAX = 0.2\nROUND = 2"}, "ok")  # fmt: skip
        [edit] = await observations(stack, sid)
        run_script(
            "post-commit.mjs", {"session_id": sid, "cwd": str(repo)}, node_env_of(stack), repo
        )
        r = await http.get("/agentmemory/session/by-commit", params={"sha": sha})
        assert r.status_code == 200, r.text
        body = r.json()
        assert [x["id"] for x in body["sessions"]] == [sid]
        # The observation behind it: the session's edit of the commit's file.
        assert [o["id"] for o in body["observations"]] == [edit["id"]]
        listed = (await http.get("/agentmemory/commits", params={"branch": "main"})).json()
        assert sha in [c["sha"] for c in listed["commits"]]
        other = (await http.get("/agentmemory/commits", params={"branch": "nope"})).json()
        assert other == {"commits": []}
        assert body["commit"]["files"] == ["billing.py"] and body["commit"]["branch"] == "main"
        assert body["commit"]["message"] == "billing: flat tax rate"
        assert body["sessions"][0]["commitShas"] == [sha]
        short = await http.get("/agentmemory/session/by-commit", params={"sha": sha[:8]})
        assert short.json()["commit"]["sha"] == sha
        unknown = await http.get("/agentmemory/session/by-commit", params={"sha": "abcdef12"})
        assert unknown.status_code == 404
    async with shim(stack) as s:
        found = doc_of(await s.call_tool("memory_commit_lookup", {"sha": sha}))
        assert found["sessions"][0]["id"] == sid
        assert [o["id"] for o in found["observations"]] == [edit["id"]]
        none = doc_of(await s.call_tool("memory_commit_lookup", {"sha": "0" * 40}))
        assert none == {"commit": None, "sessions": [], "observations": []}
        commits = doc_of(await s.call_tool("memory_commits", {"repo": "", "limit": 5}))
        assert sha in [c["sha"] for c in commits["commits"]]


async def test_team_snapshot_mesh_and_bridge_tools_through_the_shim(stack: Stack) -> None:
    async with stack.http() as http:
        r = await http.post("/agentmemory/remember", json={"content": "deploys go out on tuesdays"})
        mid = r.json()["memory"]["id"]
    async with shim(stack) as s:
        shared = doc_of(
            await s.call_tool("memory_team_share", {"itemId": mid, "itemType": "memory"})
        )
        assert shared["sharedItem"]["itemId"] == mid and shared["alreadyShared"] is False
        feed = doc_of(await s.call_tool("memory_team_feed", {"limit": 5}))
        assert [i["itemId"] for i in feed["items"]] == [mid]
        # One instance, no peers: converged at once, nothing to report.
        synced = doc_of(await s.call_tool("memory_mesh_sync", {"direction": "both"}))
        assert synced == {"success": True, "converged": True, "results": []}
        snap = doc_of(await s.call_tool("memory_snapshot_create", {"message": "from the shim"}))
        assert snap["snapshot"]["message"] == "from the shim"
        assert snap["snapshot"]["stats"]["memories"] >= 1
        off = await s.call_tool("memory_claude_bridge_sync", {"direction": "write"})
        assert "CLAUDE_MEMORY_BRIDGE" in text_of(off)
    async with stack.http() as http:
        listed = (await http.get("/agentmemory/snapshots")).json()["snapshots"]
        assert snap["snapshot"]["commitHash"] in [x["commitHash"] for x in listed]
        res = await http.post(
            "/agentmemory/mcp/resources/read", json={"uri": "agentmemory://team/default/profile"}
        )
        profile = json.loads(res.json()["contents"][0]["text"])
        assert profile["teamId"] == "default" and profile["sharedItems"] == 1


async def test_lessons_save_strengthen_recall_and_delete(stack: Stack) -> None:
    lesson = "Run database migrations before deploying the API pods"
    async with shim(stack) as s:
        first = doc_of(await s.call_tool("memory_lesson_save", {
            "content": lesson, "tags": "deploy,migrations", "confidence": 0.6,
            "context": "k8s rollout"}))  # fmt: skip
        assert first["action"] == "created" and first["lesson"]["tags"] == ["deploy", "migrations"]
        again = doc_of(await s.call_tool("memory_lesson_save", {"content": lesson}))
        assert again["action"] == "strengthened" and again["lesson"]["strength"] > 0.6
        lid = first["lesson"]["id"]
        recalled = doc_of(await s.call_tool("memory_lesson_recall", {
            "query": "deploying migrations", "minConfidence": 0.1}))  # fmt: skip
        assert [x["id"] for x in recalled["lessons"]] == [lid]
        async with stack.http() as http:
            r = await http.post("/agentmemory/lessons/strengthen", json={"lessonId": lid})
            assert r.json()["lesson"]["reinforcements"] == 2
            listed = (await http.get("/agentmemory/lessons")).json()["lessons"]
            assert lid in [x["id"] for x in listed]
        gone = doc_of(await s.call_tool("memory_lesson_delete", {"lessonId": lid}))
        assert gone["lesson"]["deleted"] is True
        after = doc_of(await s.call_tool("memory_lesson_recall", {"query": "deploying migrations"}))
        assert after["lessons"] == []


async def test_patterns_and_reflect_find_what_recurred_across_sessions(
    stack: Stack, tmp_path: Path
) -> None:
    for i in range(3):
        sid = f"reflect-{i}"
        for f in ("src/billing/invoice.py", "src/billing/tax_rules.py"):
            post_tool(stack, sid, tmp_path, "Edit",
                      {"file_path": f, "old_string": f"rounding {i}", "new_string": "quantize"},
                      {"filePath": f, "success": True})  # fmt: skip
        await observations(stack, sid, 2)
    async with shim(stack) as s:
        pats = doc_of(await s.call_tool("memory_patterns", {"project": "surface-demo"}))
        co = [p for p in pats["patterns"] if p["type"] == "co_change"]
        assert co and set(co[0]["files"]) == {"src/billing/invoice.py", "src/billing/tax_rules.py"}
        assert co[0]["frequency"] == 3
        out = doc_of(await s.call_tool("memory_reflect", {"project": "surface-demo"}))
        assert out["newInsights"] >= 1, out
        listed = doc_of(await s.call_tool("memory_insight_list", {"project": "surface-demo"}))
        assert any(i["sessions"] == 3 for i in listed["insights"])
        again = doc_of(await s.call_tool("memory_reflect", {"project": "surface-demo"}))
        assert again["newInsights"] == 0 and again["reinforced"] >= 1
    async with stack.http() as http:
        hits = (await http.post("/agentmemory/insights/search", json={
            "query": "quantize", "project": "surface-demo"})).json()["insights"]  # fmt: skip
        assert hits and "3 sessions" in hits[0]["content"]
        rules = (await http.post("/agentmemory/generate-rules", json={
            "project": "surface-demo"})).json()  # fmt: skip
        assert any("src/billing/invoice.py" in r and "tax_rules.py" in r for r in rules["rules"])


async def test_relations_link_memories_and_the_shim_walks_them(stack: Stack) -> None:
    async with stack.http() as http:
        a = (await http.post("/agentmemory/remember", json={
            "content": "Search uses BM25 with stemming"})).json()["memory"]["id"]  # fmt: skip
        b = (await http.post("/agentmemory/remember", json={
            "content": "Stemming is PyStemmer's english stemmer"})).json()["memory"]["id"]  # fmt: skip
        r = await http.post("/agentmemory/relations", json={"sourceId": a, "targetId": b,
                                                            "type": "extends"})  # fmt: skip
        assert r.status_code == 201 and r.json()["created"] is True
        again = await http.post("/agentmemory/relations", json={"sourceId": a, "targetId": b,
                                                                "type": "extends"})  # fmt: skip
        assert again.json()["created"] is False
        evolved = (await http.post("/agentmemory/evolve", json={
            "memoryId": b, "newContent": "Stemming is PyStemmer's english (porter2) stemmer"})).json()  # fmt: skip
    async with shim(stack) as s:
        related = doc_of(await s.call_tool("memory_relations", {"memoryId": a, "maxHops": 2}))
    reached = {h["memory"]["id"]: h for h in related["results"]}
    assert reached[b]["hop"] == 1 and reached[b]["via"] == "extends"
    assert reached[evolved["memory"]["id"]]["hop"] == 2


async def test_diagnose_finds_an_orphan_facet_and_heal_removes_it(stack: Stack) -> None:
    async with stack.http() as http:
        mid = (await http.post("/agentmemory/remember", json={
            "content": "Temporary note about the flaky CI runner"})).json()["memory"]["id"]  # fmt: skip
        await http.post("/agentmemory/facets", json={"targetId": mid, "targetType": "memory",
                                                     "dimension": "status", "value": "stale"})  # fmt: skip
        await http.post("/agentmemory/forget", json={"memoryId": mid})
    async with shim(stack) as s:
        diag = doc_of(await s.call_tool("memory_diagnose", {"categories": "facets,index"}))
        names = {c["name"]: c for c in diag["checks"]}
        orphan = [n for n in names if n.startswith("orphan-facet:")]
        assert len(orphan) == 1 and names[orphan[0]]["fixable"] is True
        assert diag["summary"]["fail"] >= 1
        dry = doc_of(await s.call_tool("memory_heal", {"categories": "facets", "dryRun": "true"}))
        assert dry["dryRun"] is True and dry["fixed"] == 1
        healed = doc_of(await s.call_tool("memory_heal", {"categories": "facets"}))
        assert healed["fixed"] == 1 and healed["success"] is True
        clean = doc_of(await s.call_tool("memory_diagnose", {"categories": "facets"}))
    assert [c["name"] for c in clean["checks"]] == ["facets-ok"]


async def test_timeline_takes_upstreams_anchor_and_counts(stack: Stack, tmp_path: Path) -> None:
    sid = "timeline-session"
    for i, word in enumerate(("alpha", "bravo", "charlie", "delta", "echo")):
        post_tool(stack, sid, tmp_path, "Bash", {"command": f"echo step-{word}"},
                  {"stdout": f"{word} done {i}"})  # fmt: skip
        time.sleep(0.01)
    await observations(stack, sid, 5)
    async with shim(stack) as s:
        got = doc_of(await s.call_tool("memory_timeline", {
            "anchor": "charlie", "before": 1, "after": 1, "project": "surface-demo"}))  # fmt: skip
    titles = [e["title"] for e in got["entries"]]
    assert [e["relativePosition"] for e in got["entries"]] == [-1, 0, 1]
    assert "charlie" in titles[1] and "bravo" in titles[0] and "delta" in titles[2]


async def test_vision_answers_501_naming_the_setting(stack: Stack) -> None:
    async with stack.http() as http:
        r = await http.post("/agentmemory/vision-search", json={"queryText": "login form"})
        assert r.status_code == 501
        assert r.json()["error"]["field"] == "AGENTMEMORY_IMAGE_EMBEDDINGS"
        e = await http.post("/agentmemory/vision-embed", json={"imageRef": "/tmp/x.png"})
        assert e.status_code == 501
    async with shim(stack) as s:
        v = await s.call_tool("memory_vision_search", {"queryText": "login form"})
    assert "AGENTMEMORY_IMAGE_EMBEDDINGS" in text_of(v) and "results" not in text_of(v)


async def test_tool_sets_are_upstreams_core_and_basic(stack: Stack) -> None:
    nc = await connect(stack.engine.nats_url, stack.engine.credentials)
    try:
        defs = tool_defs(await discover(Client(nc)))
    finally:
        await nc.close()
    core = {t.name for t in visible(defs, "core")}
    basic = {t.name for t in visible(defs, "basic")}
    assert core == essential_tools() and len(core) == 8
    assert basic == base_tools() and len(base_tools()) == 14
    assert len(visible(defs, "all")) == len(defs)


async def test_resources_and_prompts_are_upstreams(stack: Stack) -> None:
    async with stack.http() as http:
        res = (await http.get("/agentmemory/mcp/resources")).json()["resources"]
        assert {r["uri"] for r in res} == {
            "agentmemory://status", "agentmemory://project/{name}/profile",
            "agentmemory://project/{name}/recent", "agentmemory://memories/latest",
            "agentmemory://graph/stats", "agentmemory://team/{id}/profile",
        }  # fmt: skip
        status = (await http.post("/agentmemory/mcp/resources/read", json={
            "uri": "agentmemory://status"})).json()  # fmt: skip
        assert json.loads(status["contents"][0]["text"])["memoryCount"] >= 1
        graph = (await http.post("/agentmemory/mcp/resources/read", json={
            "uri": "agentmemory://graph/stats"})).json()  # fmt: skip
        assert "totalNodes" in json.loads(graph["contents"][0]["text"])
        bad = await http.post("/agentmemory/mcp/resources/read", json={"uri": "agentmemory://x"})
        assert bad.status_code == 404
        prompts = (await http.get("/agentmemory/mcp/prompts")).json()["prompts"]
        assert {p["name"] for p in prompts} == {"recall_context", "session_handoff",
                                                 "detect_patterns"}  # fmt: skip
        got = (await http.post("/agentmemory/mcp/prompts/get", json={
            "name": "recall_context", "arguments": {"task_description": "fix refunds"}})).json()  # fmt: skip
        assert "fix refunds" in got["messages"][0]["content"]["text"]
        missing = await http.post("/agentmemory/mcp/prompts/get", json={"name": "recall_context"})
        assert missing.status_code == 400


async def test_a_3_mib_post_tool_use_event_is_stored_truncated_and_found(
    stack: Stack, tmp_path: Path
) -> None:
    sid = "huge-event-session"
    content = "zebrafish migration notes for the lab\n" + "lorem ipsum dolor " * 175_000
    assert len(content) > 3 * 1024 * 1024
    post_tool(stack, sid, tmp_path, "Write", {"file_path": "docs/lab.md", "content": content},
              {"type": "create", "filePath": "docs/lab.md"})  # fmt: skip
    (obs,) = await observations(stack, sid)
    assert obs["truncated"] == [f"data.tool_input.content ({len(content)} chars)"]
    assert any(f.startswith("truncated: data.tool_input.content") for f in obs["facts"])
    assert "zebrafish migration notes" in obs["raw"][:200]
    assert len(json.dumps(obs)) < 64 * 1024  # what is stored and streamed is bounded
    async with stack.http() as http:
        hits = (await http.post("/agentmemory/smart-search", json={
            "query": "zebrafish migration notes"})).json()["results"]  # fmt: skip
    assert hits and hits[0]["obsId"] == obs["id"]


async def test_heal_drops_orphan_index_entries_and_reindexes_lost_records(
    stack: Stack, tmp_path: Path
) -> None:
    from functions.kernel.observation_records import ObservationRecords
    from functions.kernel.records import MEMORIES_BUCKET, Memory
    from functions.kernel.store import events_stream

    sid = "index-heal-session"
    post_tool(stack, sid, tmp_path, "Bash", {"command": "terraform plan -out quokka.plan"},
              {"stdout": "Plan: 3 to add, quokka bucket"})  # fmt: skip
    (obs,) = await observations(stack, sid)
    client = await stack.engine.client()
    try:
        # An observation gone from the store without its removal event (the index still
        # holds it), and a memory in KV whose event never reached the stream (the index
        # lacks it).
        records = await ObservationRecords(client, events_stream(client)).open()
        seq = (await records.locate([obs["id"]]))[obs["id"]]
        await records.events.delete_message(seq)
        lost = Memory(id="mem_lostevent01", content="Wombat deploys run on Fridays only",
                      created_at="2026-11-01T00:00:00Z", updated_at="2026-11-01T00:00:00Z")  # fmt: skip
        await (await client.bucket(MEMORIES_BUCKET)).put(lost.id, lost)
    finally:
        await client.nc.close()
    async with shim(stack) as s:
        diag = doc_of(await s.call_tool("memory_diagnose", {"categories": "index"}))
        names = {c["name"] for c in diag["checks"]}
        assert {"index-orphans", "index-unindexed"} <= names, diag
        healed = doc_of(await s.call_tool("memory_heal", {"categories": "index"}))
        assert healed["fixed"] == 2, healed

        async def clean() -> bool:
            got = doc_of(await s.call_tool("memory_diagnose", {"categories": "index"}))
            return [c["name"] for c in got["checks"]] == ["index-ok"]

        await eventually(clean, timeout=15, what="a clean index")
    async with stack.http() as http:
        found = (
            await http.post("/agentmemory/smart-search", json={"query": "wombat fridays"})
        ).json()
        gone = (await http.post("/agentmemory/smart-search", json={"query": "quokka"})).json()
    assert [h["obsId"] for h in found["results"]][:1] == [lost.id]
    assert obs["id"] not in [h["obsId"] for h in gone["results"]]
