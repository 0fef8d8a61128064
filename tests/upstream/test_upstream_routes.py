"""The routes upstream added after 0.9.29 and the shapes 0.9.30 changed, on the product
stack, each checked against the shape read from upstream's source (the file and commit are
named in each test; the facts are gathered in the issue's research notes). Upstream's
repository is rohitg00/agentmemory; `api.ts` is src/triggers/api.ts @48c1bb0c."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from functions.memory.locate import MAX_IDS_CHARS
from tests.fixtures import Stack, eventually, start_stack
from tests.upstream.stack import ensure_packages

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")


def _routes_serving(stack: Stack) -> bool:
    """Every worker's routes, and the new ones these tests call first."""
    if not stack.serving():
        return False
    with stack.rest() as h:
        rs = [h.get("/agentmemory/counts"), h.get("/agentmemory/consolidation/status")]
        return all(r.status_code == 200 for r in rs)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    ensure_packages()
    started = start_stack(tmp_path_factory.mktemp("routes"), ready=_routes_serving)
    try:
        yield started
    finally:
        started.stop()


def observe(sid: str, n: int, **data: Any) -> dict[str, Any]:
    return {
        "hookType": "post_tool_use",
        "sessionId": sid,
        "project": "routes",
        "cwd": "/work/routes",
        "timestamp": f"2026-11-29T10:00:{n:02d}.000Z",
        "eventId": f"toolu_{sid}_{n}",
        "data": {"tool_name": "Edit", "tool_input": {"file_path": "src/billing.py"},
                 "tool_output": f"refund rule {n} applied", **data},
    }  # fmt: skip


def has(doc: dict[str, Any], *keys: str) -> None:
    missing = [k for k in keys if k not in doc]
    assert not missing, (missing, sorted(doc))


async def test_status_is_upstreams_status_report(stack: Stack) -> None:
    # Shape: src/functions/status.ts @0617edf (StatusReport) via api.ts @48c1bb0c.
    async with stack.http() as http:
        r = await http.get("/agentmemory/status")
        assert r.status_code == 200, r.text
        doc = r.json()
        has(doc, "status", "headline", "checkedAt", "service", "health", "provider", "index",
            "indexPersistence", "graph", "graphCompaction", "capture", "observeDedup",
            "functions", "flags", "problems")  # fmt: skip
        assert doc["status"] in ("ok", "info", "warn", "error")
        has(doc["service"], "version", "engineVersion", "uptimeSeconds", "stateBackend",
            "stateStore", "ports")  # fmt: skip
        assert doc["service"]["stateStore"]["ok"] is True
        assert set(doc["service"]["ports"]) == {"rest", "streams", "viewer"}
        has(doc["provider"], "llm", "embeddings", "circuitBreaker", "offWithoutLlm", "usage")
        assert doc["provider"]["llm"] == "noop"  # keyless
        has(doc["index"], "bm25Documents", "vectorDocuments", "observationsIndexed",
            "pendingVectorBackfill", "vectorBackfillState", "bm25Incomplete")  # fmt: skip
        # keyless: the backfill waits for an embedding provider, and says which setting
        assert doc["index"]["vectorBackfillState"] == "waiting-for-opt-in"
        assert "EMBEDDING_PROVIDER" in doc["index"]["vectorBackfillReason"]
        for p in doc["problems"]:
            has(p, "level", "code", "message")
            assert p["level"] in ("info", "warn", "error")
        assert any(p["code"] == "no-llm-provider" for p in doc["problems"])
        assert all(
            {"key", "label", "enabled", "needsLlm", "enableHow"} <= set(f) for f in doc["flags"]
        )
        page = await http.get("/agentmemory/status", headers={"Accept": "text/html"})
        assert page.headers["content-type"].startswith("text/html")
        assert page.headers["cache-control"] == "no-store"


async def test_capture_lists_the_inbox_in_upstreams_shape(stack: Stack) -> None:
    # Shape: src/functions/capture.ts @224adb40 (CaptureStatus, inbox items) via api.ts @48c1bb0c.
    async with stack.http() as http:
        r = await http.get("/agentmemory/capture", params={"status": "dead", "limit": 5})
        assert r.status_code == 200, r.text
        doc = r.json()
        assert set(doc) == {"capture", "total", "items"} and doc["items"] == []
        cap = doc["capture"]
        has(cap, "policy", "inbox", "sinceStart", "lastSweepAt", "lastPruneAt",
            "lastBootDrain", "spool")  # fmt: skip
        has(cap["policy"], "maxAttempts", "retryIntervalMs", "dedupRetentionHours",
            "inboxMax", "deadMax", "eventsMax")  # fmt: skip
        has(cap["inbox"], "pending", "retrying", "dead", "oldestAcceptedAt", "nextAttemptAt",
            "lastError")  # fmt: skip
        has(cap["sinceStart"], "accepted", "completed", "duplicates", "retried", "recovered",
            "deadLettered", "rejected", "pruned")  # fmt: skip


async def test_capture_retry_needs_an_event_or_all(stack: Stack) -> None:
    # Shape: api.ts @48c1bb0c: {eventId} | {all: true} -> {matched, recovered, dead, waiting}.
    async with stack.http() as http:
        none = await http.post("/agentmemory/capture/retry", json={})
        assert none.status_code == 400 and none.json()["error"]["field"] == "eventId"
        assert "all: true" in none.json()["error"]["message"]
        for blank in ({"eventId": " "}, {"ids": ["", " "]}, {"all": False}):  # name nothing
            refused = await http.post("/agentmemory/capture/retry", json=blank)
            assert refused.status_code == 400, (blank, refused.text)
        r = await http.post("/agentmemory/capture/retry", json={"all": True})
        assert r.status_code == 200, r.text
        assert r.json() == {"matched": 0, "recovered": 0, "dead": 0, "waiting": 0}


async def test_capture_drain_answers_one_result_per_spool(stack: Stack) -> None:
    # Shape: api.ts @48c1bb0c, src/functions/capture.ts @224adb40: {results: [DrainResult]}.
    async with stack.http() as http:
        r = await http.post("/agentmemory/capture/drain", json={})
        assert r.status_code == 200, r.text
        (res,) = r.json()["results"]
        has(res, "claimed", "delivered", "duplicates", "rejected", "expired", "corrupt",
            "remaining")  # fmt: skip
        assert res["skipped"] == "empty" and res["remaining"] == 0


async def test_counts_and_viewer_snapshot(stack: Stack) -> None:
    # Shape: src/triggers/viewer-streams.ts @28e5e03e and src/state/viewer-counts.ts @e21fa59.
    sid = f"counts-{uuid.uuid4().hex[:6]}"
    async with stack.http() as http:
        assert (await http.post("/agentmemory/observe", json=observe(sid, 1))).status_code == 201
        first = (await http.post("/agentmemory/remember", json={"content": "Counts need two versions of one note"})).json()  # fmt: skip
        await http.post("/agentmemory/remember", json={"content": "Counts need three versions now",
                                                       "supersedes": first["memory"]["id"]})  # fmt: skip
        r = await http.get("/agentmemory/counts")
        assert r.status_code == 200, r.text
        counts = r.json()["counts"]
        assert set(counts) == {"sessions", "activeSessions", "observations", "memories",
                               "latestMemories", "lessons", "actions", "crystals", "semantic",
                               "procedural", "graphNodes", "graphEdges", "updatedAt"}  # fmt: skip
        assert counts["memories"] >= counts["latestMemories"] + 1  # every version vs current
        snap = (await http.get("/agentmemory/viewer/snapshot")).json()
        has(snap, "version", "service", "viewerPort", "viewerSkipped", "streamsPort", "restPort",
            "provider", "embeddingProvider", "flags", "graph", "consolidation", "status",
            "health", "circuitBreaker", "functionMetrics", "counts", "indexes", "report",
            "generatedAt")  # fmt: skip
        assert snap["service"] == "agentmemory" and snap["status"] in (
            "healthy",
            "degraded",
            "critical",
        )
        assert set(snap["counts"]) == set(counts)
        has(snap["consolidation"], "lastRun", "status")
        assert snap["report"]["headline"]


async def test_graph_node_describes_a_node_and_its_provenance(stack: Stack) -> None:
    # Shape: src/functions/graph-node.ts @038b573e (describeGraphNode) via api.ts @48c1bb0c.
    sid = f"graph-{uuid.uuid4().hex[:6]}"
    async with stack.http() as http:
        for n in range(3):
            await http.post("/agentmemory/observe", json=observe(sid, n))
        assert (await http.post("/agentmemory/graph/build", json={})).status_code == 200

        async def node() -> dict[str, Any] | None:
            q = await http.post("/agentmemory/graph/query", json={"query": "billing.py"})
            nodes = [n for n in q.json()["nodes"] if n["name"].endswith("billing.py")]
            return nodes[0] if nodes else None

        found = await eventually(node, timeout=30, what="the file's node")
        r = await http.get("/agentmemory/graph/node", params={"id": found["id"]})
        assert r.status_code == 200, r.text
        doc = r.json()
        has(doc, "node", "degree", "relations", "relationsTotal", "provenance")
        has(doc["node"], "id", "type", "name", "properties", "sourceObservationIds", "createdAt")
        for rel in doc["relations"]:
            has(rel, "edgeId", "type", "direction", "weight", "observationCount", "neighbor")
        prov = doc["provenance"]
        has(
            prov, "observationIds", "observations", "sessions", "projects", "memories", "structural"
        )
        assert sid in {s["id"] for s in prov["sessions"]} and "routes" in prov["projects"]
        assert {"id", "sessionId"} <= set(prov["observations"][0])
        missing = await http.get("/agentmemory/graph/node", params={"id": "gn_nope"})
        assert missing.status_code == 404
        no_id = await http.get("/agentmemory/graph/node")
        assert no_id.status_code == 400 and no_id.json()["error"]["field"] == "id"


async def test_observations_locate_maps_ids_to_sessions(stack: Stack) -> None:
    # Shape: api.ts @48c1bb0c: ?ids=a,b -> {sessions: {obsId: sessionId}}; no ids -> 400.
    sid = f"locate-{uuid.uuid4().hex[:6]}"
    async with stack.http() as http:
        oid = (await http.post("/agentmemory/observe", json=observe(sid, 1))).json()[
            "observationId"
        ]
        r = await http.get(
            "/agentmemory/observations/locate", params={"ids": f"{oid},obs_nope,mem_x"}
        )
        assert r.status_code == 200, r.text
        assert r.json() == {"sessions": {oid: sid}}
        missing = await http.get("/agentmemory/observations/locate")
        assert missing.status_code == 400 and missing.json()["error"]["field"] == "ids"
        # the longest ids the schema allows still fit the HTTP server's URL limit
        widest = await http.get(
            "/agentmemory/observations/locate", params={"ids": "a" * MAX_IDS_CHARS}
        )
        assert widest.status_code == 200 and widest.json() == {"sessions": {}}
        wider = await http.get(
            "/agentmemory/observations/locate", params={"ids": "a" * (MAX_IDS_CHARS + 1)}
        )
        assert wider.status_code == 400 and wider.json()["error"]["field"] == "ids"


async def test_consolidation_status_reports_the_last_run(stack: Stack) -> None:
    # Shape: src/functions/consolidation-status.ts @28e5e03e via api.ts @48c1bb0c.
    async with stack.http() as http:
        assert (await http.post("/agentmemory/consolidate", json={})).status_code == 200
        r = await http.get("/agentmemory/consolidation/status")
        assert r.status_code == 200, r.text
        doc = r.json()
        has(doc, "enabled", "llmConfigured", "lastRunAt", "lastRun", "summaries",
            "recurringPatterns", "schedule", "thresholds", "tiers")  # fmt: skip
        assert doc["lastRunAt"] and doc["lastRun"]["at"] == doc["lastRunAt"]
        has(doc["schedule"], "intervalMs", "cooldownMs", "decayDays")
        has(doc["thresholds"], "semanticMinSummaries", "proceduralMinPatterns",
            "proceduralMinSessionsPerPattern")  # fmt: skip
        assert [t["id"] for t in doc["tiers"]] == ["semantic", "procedural", "relations"]
        for t in doc["tiers"]:
            has(t, "id", "label", "from", "count", "state", "detail")
            assert t["state"] in ("off", "waiting", "ready", "ran", "error")


async def test_graph_compact_takes_upstreams_body(stack: Stack) -> None:
    # Shape: api.ts @48c1bb0c: {scope?, offset?, limit?}; a bad one is a 400 naming it.
    async with stack.http() as http:
        r = await http.post("/agentmemory/graph/compact", json={"scope": "edges", "limit": 10})
        assert r.status_code == 200, r.text
        assert r.json()["success"] is True and "edgesDeleted" in r.json()
        for body, field in (({"scope": "all"}, "scope"), ({"offset": -1}, "offset"),
                            ({"limit": 0}, "limit")):  # fmt: skip
            bad = await http.post("/agentmemory/graph/compact", json=body)
            assert bad.status_code == 400 and bad.json()["error"]["field"] == field


async def test_metrics_reset_clears_the_function_counters(stack: Stack) -> None:
    # Upstream 0.9.34 release notes (#1794): "POST metrics/reset clears function counters";
    # the counters are status.functions (src/functions/status.ts @0617edf).
    async with stack.http() as http:
        for _ in range(3):
            await http.get("/agentmemory/sessions")

        async def counted() -> dict[str, Any] | None:
            fns = (await http.get("/agentmemory/status")).json()["functions"]
            return next((f for f in fns if f["functionId"] == "mem::sessions"), None)

        before = await eventually(counted, timeout=10, what="mem::sessions counted")
        has(before, "functionId", "totalCalls", "successCount", "failureCount", "avgLatencyMs",
            "failureRate", "offWithoutLlm")  # fmt: skip
        assert before["totalCalls"] >= 3
        r = await http.post("/agentmemory/metrics/reset", json={})
        assert r.status_code == 200, r.text
        assert r.json()["success"] is True and r.json()["cleared"] >= 1
        after = await counted()
        assert after is None or after["totalCalls"] < before["totalCalls"]


async def test_audit_has_upstreams_envelope_and_entry_names(stack: Stack) -> None:
    # Shape: api.ts @48c1bb0c and src/types.ts @038b573e (AuditQueryResult, AuditEntry).
    async with stack.http() as http:
        m = (await http.post("/agentmemory/remember", json={"content": "audit me soon"})).json()
        await http.post("/agentmemory/forget", json={"memoryId": m["memory"]["id"]})
        r = await http.get("/agentmemory/audit", params={"operation": "forget", "limit": 5})
        assert r.status_code == 200, r.text
        doc = r.json()
        assert doc["success"] is True and doc["legacyFrozen"] is False
        assert "legacyFrozenBytes" not in doc  # upstream omits it unless frozen
        e = doc["entries"][0]
        has(e, "id", "timestamp", "operation", "functionId", "targetIds", "details")
        assert (e["operation"], e["functionId"]) == ("forget", "mem::forget")
        assert m["memory"]["id"] in e["targetIds"]
        bad = await http.get("/agentmemory/audit", params={"dateFrom": "yesterday"})
        assert bad.status_code == 400 and bad.json()["error"]["message"] == "invalid date: dateFrom"


async def test_memories_are_newest_first_with_a_keyset_cursor(stack: Stack) -> None:
    # Shape: api.ts @48c1bb0c and src/state/list-query.ts @bb598f29.
    project = f"pages-{uuid.uuid4().hex[:6]}"
    async with stack.http() as http:
        ids = []
        for word in ("alpha", "bravo", "charlie", "delta", "echo"):
            r = await http.post("/agentmemory/remember",
                                json={"content": f"{word} is a distinct note", "project": project})  # fmt: skip
            ids.append(r.json()["memory"]["id"])
        seen: list[str] = []
        cursor = ""
        while True:
            params: dict[str, Any] = {"project": project, "limit": 2}
            if cursor:
                params["cursor"] = cursor
            page = (await http.get("/agentmemory/memories", params=params)).json()
            has(page, "memories", "total", "offset", "limit", "nextCursor")
            assert page["total"] == 5
            seen += [m["id"] for m in page["memories"]]
            cursor = page["nextCursor"]
            if cursor is None:
                break
        assert seen == list(reversed(ids))  # newest first, each once
        count = (await http.get("/agentmemory/memories", params={"project": project, "count": "true"})).json()  # fmt: skip
        assert count == {"total": 5, "latestCount": 5}


async def test_forget_and_governance_say_what_was_not_found(stack: Stack) -> None:
    # Shape: src/functions/governance.ts @0ad7f75 (governance-delete) and mem::forget (#1449).
    async with stack.http() as http:
        m = (await http.post("/agentmemory/remember", json={"content": "governed note"})).json()
        mid = m["memory"]["id"]
        r = await http.request("DELETE", "/agentmemory/governance/memories",
                               json={"memoryIds": [mid, "mem_missing"], "reason": "test"})  # fmt: skip
        assert r.status_code == 200, r.text
        doc = r.json()
        assert (doc["success"], doc["deleted"], doc["total"]) == (True, 1, 2)
        assert doc["notFound"] == ["mem_missing"] and doc["failed"] == 0
        assert "failures" not in doc
        again = (await http.post("/agentmemory/forget", json={"memoryId": mid})).json()
        assert (again["deleted"], again["notFound"], again["failed"]) == (0, [mid], 0)


async def test_export_over_the_limit_answers_413(stack: Stack) -> None:
    # Shape: src/functions/export-import.ts @0219906 (SAFE_PAYLOAD_BYTES = 15 MiB, the
    # oversize body) via api.ts @48c1bb0c.
    words = [uuid.uuid4().hex for _ in range(12_000)]
    for batch in range(3):
        memories = [
            {"id": f"mem_big{batch}_{i}", "content": " ".join(words[i:] + words[:i]),
             "project": "big"}
            for i in range(16)
        ]  # fmt: skip
        async with stack.http() as http:
            r = await http.post("/agentmemory/import", json={"strategy": "merge", "data": {"memories": memories}})  # fmt: skip
            assert r.status_code == 200, r.text
    async with stack.http() as http:
        r = await http.get("/agentmemory/export")
        assert r.status_code == 413, r.text[:300]
        doc = r.json()
        assert doc["success"] is False and doc["oversized"] is True
        assert doc["limitBytes"] == 15 * 1024 * 1024 and doc["bytes"] > doc["limitBytes"]
        assert doc["stoppedAt"] == "memories" and "maxSessions" in doc["error"]
        small = await http.get("/agentmemory/export", params={"project": "routes"})
        assert small.status_code == 200 and small.json()["pagination"]["total"] >= 1


async def test_graph_import_reads_only_under_the_allowed_roots(
    stack: Stack, tmp_path: Path
) -> None:
    # Upstream 0.9.30, src/functions/path-guard.ts @0219906: a refusal is the function's
    # {success: false, error} (200), the error naming the path and the variable.
    outside = tmp_path / "graphify-out"
    outside.mkdir()
    (outside / "graph.json").write_text('{"nodes": [{"id": "a", "label": "outside"}]}')
    inside = stack.home / ".agentmemory" / "proj" / "graphify-out"
    inside.mkdir(parents=True)
    (inside / "graph.json").write_text('{"nodes": [{"id": "a", "label": "inside"}], "links": []}')
    async with stack.http() as http:
        r = await http.post("/agentmemory/graph/import-graphify", json={"cwd": str(tmp_path)})
        assert r.status_code == 200, r.text
        assert r.json()["success"] is False and str(outside) in r.json()["error"]
        assert "AGENTMEMORY_IMPORT_ROOT" in r.json()["error"]
        ok = await http.post("/agentmemory/graph/import-graphify", json={"cwd": str(inside.parent)})
        assert ok.json()["success"] is True and ok.json()["nodes"] == 1, ok.text
