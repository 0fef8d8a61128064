"""The console's JSON API against a real engine: workers, functions, invoke with traces,
triggers, KV, streams, queues, logs, and who may use it."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import httpx

from tests.console.conftest import Console
from tests.fixtures import wait_until


def _invoke(c: httpx.Client, fn: str, payload: Any = None) -> dict[str, Any]:
    r = c.post("/api/invoke", json={"function_id": fn, "payload": payload})
    assert r.status_code == 200, r.text
    out: dict[str, Any] = r.json()
    return out


def _trace(c: httpx.Client, trace_id: str, at_least: int) -> dict[str, Any]:
    def probe() -> dict[str, Any] | None:
        r = c.get(f"/api/traces/{trace_id}")
        if r.status_code == 200 and len(r.json()["spans"]) >= at_least:
            return r.json()  # type: ignore[no-any-return]
        return None

    return wait_until(probe, timeout=15, what=f"{at_least} spans of trace {trace_id}")


# ---- access ------------------------------------------------------------------------------
def test_api_refuses_callers_without_the_secret(console: Console) -> None:
    r = httpx.get(f"{console.url}/api/workers")
    assert r.status_code == 401
    assert r.json()["error"]["field"] == "secret"
    r = httpx.get(f"{console.url}/api/workers", headers={"authorization": "Bearer nope"})
    assert r.status_code == 401
    with console.api() as c:
        assert c.get("/api/workers").status_code == 200


def test_foreign_origins_and_hosts_are_rejected_even_with_the_secret(console: Console) -> None:
    with console.api() as c:
        r = c.post(
            "/api/invoke",
            json={"function_id": "example::echo", "payload": {}},
            headers={"origin": "http://evil.example"},
        )
        assert r.status_code == 403
        assert r.json()["error"]["field"] == "Origin"
        r = c.get("/api/workers", headers={"host": "evil.example:3114"})
        assert r.status_code == 403
        assert r.json()["error"]["field"] == "Host"
        ok = c.get("/api/workers", headers={"origin": console.url})
        assert ok.status_code == 200


def test_token_in_url_sets_a_strict_httponly_cookie_that_is_not_the_secret(
    console: Console,
) -> None:
    r = httpx.get(f"{console.url}/?token={console.secret}", follow_redirects=False)
    assert r.status_code == 303
    assert r.headers["location"] == "/"
    cookie = r.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert console.secret not in cookie
    value = cookie.split(";")[0].split("=", 1)[1]
    r = httpx.get(f"{console.url}/api/workers", cookies={"am_console": value})
    assert r.status_code == 200
    bad = httpx.get(f"{console.url}/?token=wrong", follow_redirects=False)
    assert bad.status_code == 401
    sneaky = httpx.get(
        f"{console.url}//evil.example/x?token={console.secret}", follow_redirects=False
    )
    assert sneaky.status_code == 303 and sneaky.headers["location"] == "/"


def test_login_form_accepts_only_the_secret(console: Console) -> None:
    page = httpx.get(f"{console.url}/", follow_redirects=False)
    assert page.status_code == 303 and page.headers["location"] == "/login"
    wrong = httpx.post(f"{console.url}/login", data={"secret": "guess"})
    assert wrong.status_code == 401
    right = httpx.post(
        f"{console.url}/login", data={"secret": console.secret}, follow_redirects=False
    )
    assert right.status_code == 303 and "am_console=" in right.headers["set-cookie"]


def test_console_listens_on_loopback_only(console: Console) -> None:
    port = console.engine.anchor + 3
    listening = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not Path(table).exists():
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            addr, hexport = local.split(":")
            if int(hexport, 16) == port and state == "0A":  # LISTEN
                listening.append(addr)
    assert listening == ["0100007F"], listening  # 127.0.0.1, and nothing else


# ---- workers and functions ---------------------------------------------------------------
def test_workers_lists_each_running_worker_with_pid_and_functions(console: Console) -> None:
    with console.api() as c:
        who = _invoke(c, "example::whoami")["result"]["pid"]
        workers = {w["name"]: w for w in c.get("/api/workers").json()["workers"]}
    assert {"example", "triggers", "console"} <= set(workers)
    ex = workers["example"]
    assert ex["state"] == "running" and ex["pid"] == who and ex["restarts"] == 0
    assert "example::relay" in ex["functions"]
    assert ex["instances"] == 1 and ex["last_seen"] is not None
    assert ex["rss_mb"] > 5 and ex["cpu_s"] >= 0  # the supervisor's per-worker metrics
    # The trigger host names its service differently; it is still matched to its worker.
    assert workers["triggers"]["instances"] == 1
    assert "engine::cron-fire" in workers["triggers"]["functions"]
    # The supervisor is on the bus too, with its own pid.
    assert workers["engine"]["state"] == "supervisor" and workers["engine"]["pid"] > 0


def test_functions_show_schemas_and_call_counts(console: Console) -> None:
    with console.api() as c:
        for _ in range(3):
            _invoke(c, "example::echo", {"text": "x"})
        fns = {f["function_id"]: f for f in c.get("/api/functions").json()["functions"]}
    echo = fns["example::echo"]
    assert echo["description"] == "Echo the text back."
    assert echo["workers"] == ["example"]
    schema = echo["request_schema"]
    assert "text" in str(schema)
    assert echo["num_requests"] >= 3
    # its declaration, as the worker published it
    assert (echo["http"]["method"], echo["http"]["path"]) == ("POST", "/example/echo")
    assert echo["tool"] is None  # not an MCP tool
    assert "engine::dlq-list" in fns


# ---- invoke and traces -------------------------------------------------------------------
def test_invoke_returns_the_result_and_a_trace_across_processes(console: Console) -> None:
    with console.api() as c:
        out = _invoke(c, "example::relay", {"text": "hi"})
        assert out["ok"] and out["result"] == {"text": "relayed:hi"}
        trace = _trace(c, out["trace_id"], 5)
    spans = trace["spans"]
    names = [(v["depth"], v["span"]["name"], v["span"]["service"]) for v in spans]
    assert names[:5] == [
        (0, "console invoke example::relay", "console"),
        (1, "call example::relay", "console"),
        (2, "example::relay", "example"),
        (3, "call example::echo", "example"),
        (4, "example::echo", "example"),
    ]
    for v in spans:
        assert 0 <= v["offset_ms"] <= trace["duration_ms"]


def test_failed_invoke_reports_the_error_and_its_trace_is_an_error(console: Console) -> None:
    with console.api() as c:
        out = _invoke(c, "example::fail", {"code": "NOT_FOUND", "message": "nothing here"})
        assert not out["ok"]
        assert out["error"]["code"] == "NOT_FOUND"
        _trace(c, out["trace_id"], 3)
        found = c.get("/api/traces", params={"function": "example::fail", "status": "ERROR"})
        ids = [t["trace_id"] for t in found.json()["traces"]]
        assert out["trace_id"] in ids
        ok_only = c.get("/api/traces", params={"function": "example::fail", "status": "OK"})
        assert out["trace_id"] not in [t["trace_id"] for t in ok_only.json()["traces"]]


def test_invoke_bad_input_names_the_field(console: Console) -> None:
    with console.api() as c:
        cases = [
            ({"payload": {}}, "function_id"),
            ({"function_id": "Not An Id"}, "function_id"),
            ({"function_id": "example::echo", "timeout": 1000}, "timeout"),
            ({"function_id": "example::echo", "timeout": "soon"}, "timeout"),
        ]
        for body, field in cases:
            r = c.post("/api/invoke", json=body)
            assert r.status_code == 400, (body, r.text)
            assert r.json()["error"]["field"] == field
        r = c.post("/api/invoke", content=b"{nope", headers={"content-type": "application/json"})
        assert r.status_code == 400 and r.json()["error"]["code"] == "BAD_REQUEST"
        r = c.get("/api/traces", params={"min_ms": "slow"})
        assert r.status_code == 400 and r.json()["error"]["field"] == "min_ms"
        r = c.get("/api/traces/not-a-trace")
        assert r.status_code == 400 and r.json()["error"]["field"] == "trace_id"
        r = c.get("/api/nothing-here")
        assert r.status_code == 404 and r.json()["error"]["code"] == "NOT_FOUND"


def test_trace_search_filters_by_duration(console: Console) -> None:
    with console.api() as c:
        slow = _invoke(c, "example::sleep", {"seconds": 0.3})
        fast = _invoke(c, "example::echo", {"text": "quick"})
        _trace(c, slow["trace_id"], 3)
        _trace(c, fast["trace_id"], 3)
        found = c.get("/api/traces", params={"min_ms": 250}).json()["traces"]
        ids = {t["trace_id"] for t in found}
        assert slow["trace_id"] in ids and fast["trace_id"] not in ids
        by_fn = c.get("/api/traces", params={"function": "example::sleep"}).json()["traces"]
        assert {t["trace_id"] for t in by_fn} >= {slow["trace_id"]}
        assert fast["trace_id"] not in {t["trace_id"] for t in by_fn}


# ---- triggers ----------------------------------------------------------------------------
def test_triggers_list_and_cron_fire_now_runs_the_function(console: Console) -> None:
    with console.api() as c:
        kinds = {t["id"]: t["kind"] for t in c.get("/api/triggers").json()["triggers"]}
        mine = {"yearly-count": "cron", "example-echo": "http", "failing-queue": "queue"}
        assert {k: kinds.get(k) for k in mine} == mine
        assert kinds["mem-observe"] == "http"  # and the memory worker's routes
        before = _invoke(c, "example::count", {"key": "cron-hits", "by": 0})["result"]["value"]
        fired = c.post("/api/triggers/cron/yearly-count/fire").json()
        assert fired["ok"], fired

        def counted() -> bool:
            r = _invoke(c, "example::count", {"key": "cron-hits", "by": 0})
            return bool(r["result"]["value"] == before + 1)

        wait_until(counted, timeout=15, what="the cron firing to count")


def test_http_test_request_goes_through_the_rest_route_with_the_secret(
    console: Console,
) -> None:
    with console.api() as c:
        r = c.post(
            "/api/triggers/http-test",
            json={"method": "POST", "path": "/example/echo", "body": {"text": "through rest"}},
        )
        assert r.status_code == 200, r.text
        out = r.json()
        assert out["status"] == 200 and '"through rest"' in out["body"]
        bad = c.post("/api/triggers/http-test", json={"path": "http://evil.example/"})
        assert bad.status_code == 400 and bad.json()["error"]["field"] == "path"


# ---- KV ----------------------------------------------------------------------------------
def test_kv_browser_edits_with_the_revision_and_deletes(console: Console) -> None:
    with console.api() as c:
        _invoke(c, "example::count", {"key": "kv-test", "by": 5})
        buckets = [b["bucket"] for b in c.get("/api/kv").json()["buckets"]]
        assert "example" in buckets
        assert "kv-test" in c.get("/api/kv/example").json()["keys"]
        e = c.get("/api/kv/example/kv-test").json()
        assert e["value"] == "5" and e["is_json"]
        rev = e["revision"]
        stale = c.put("/api/kv/example/kv-test", json={"value": "1", "revision": rev - 1})
        assert stale.status_code == 409 and stale.json()["error"]["field"] == "revision"
        notjson = c.put("/api/kv/example/kv-test", json={"value": "{x", "revision": rev})
        assert notjson.status_code == 400 and notjson.json()["error"]["field"] == "value"
        ok = c.put("/api/kv/example/kv-test", json={"value": "41", "revision": rev})
        assert ok.status_code == 200 and ok.json()["revision"] > rev
        # The function sees the operator's edit.
        assert _invoke(c, "example::count", {"key": "kv-test"})["result"]["value"] == 42
        e2 = c.get("/api/kv/example/kv-test").json()
        assert [h["revision"] for h in e2["history"]][:1] == [e2["revision"]]
        gone = c.delete("/api/kv/example/kv-test", params={"revision": e2["revision"]})
        assert gone.status_code == 200
        assert c.get("/api/kv/example/kv-test").status_code == 404
        assert c.get("/api/kv/no-such-bucket").status_code == 404


# ---- streams, queues, logs ---------------------------------------------------------------
def test_stream_live_tail_delivers_new_messages(console: Console) -> None:
    with console.api() as c:
        streams = {s["name"] for s in c.get("/api/streams").json()["streams"]}
        assert {"ENGINE_TRACES", "ENGINE_LOGS"} <= streams
        _invoke(c, "example::count", {"key": "tail-warmup"})
        with c.stream("GET", "/api/streams/KV_example/tail", params={"backlog": 0}) as r:
            assert r.headers["content-type"].startswith("text/event-stream")
            lines = r.iter_lines()
            assert next(lines).startswith(": tail of KV_example")
            with console.api() as other:
                _invoke(other, "example::count", {"key": "tail-live", "by": 7})
            for line in lines:
                if line.startswith("data: "):
                    msg = json.loads(line[6:])
                    if msg["subject"].endswith("tail-live"):
                        assert msg["data"] == "7"
                        break
        recent = c.get("/api/streams/KV_example/messages", params={"last": 5}).json()
        assert any(m["subject"].endswith("tail-live") for m in recent["messages"])


def test_dead_letters_are_listed_redriven_and_discarded(console: Console) -> None:
    with console.api() as c:
        enq = _invoke(
            c, "engine::enqueue", {"queue": "failing", "payload": {"message": "to the dlq"}}
        )
        assert enq["ok"], enq

        def dead() -> list[dict[str, Any]]:
            items: list[dict[str, Any]] = c.get(
                "/api/queues/dead", params={"queue": "failing"}
            ).json()["items"]
            return items

        first = wait_until(dead, timeout=15, what="a dead letter")
        assert first[0]["payload"] == {"message": "to the dlq"}
        queues = {q["queue"]: q for q in c.get("/api/queues").json()["queues"]}
        assert queues["failing"]["dead"] >= 1
        seq = first[0]["seq"]
        r = c.post("/api/queues/dead/redrive", json={"seq": seq})
        assert r.status_code == 200 and r.json()["result"]["seqs"] == [seq]
        # example::fail fails again, so the redriven letter comes back with a new seq.
        wait_until(lambda: any(d["seq"] > seq for d in dead()), timeout=15, what="the letter back")
        r = c.post("/api/queues/dead/discard", json={"queue": "failing"})
        assert r.status_code == 200 and r.json()["result"]["count"] >= 1
        assert dead() == []
        bad = c.post("/api/queues/dead/discard", json={})
        assert bad.status_code == 400 and bad.json()["error"]["field"] == "seq"


def test_logs_are_filtered_by_trace_id(console: Console) -> None:
    trace_id = os.urandom(16).hex()

    async def fire() -> None:
        client = await console.engine.client()
        try:
            # A fire-and-forget call that fails is logged by the worker inside its span.
            await client.fire(
                "example::fail",
                {"code": "BAD_REQUEST", "message": "logged"},
                headers={"traceparent": f"00-{trace_id}-{os.urandom(8).hex()}-01"},
            )
            await client.nc.flush()
        finally:
            await client.nc.close()

    asyncio.run(fire())
    with console.api() as c:

        def logs() -> list[dict[str, Any]]:
            out: list[dict[str, Any]] = c.get("/api/logs", params={"trace_id": trace_id}).json()[
                "logs"
            ]
            return out

        found = wait_until(logs, timeout=15, what="the worker's log line of that trace")
        assert all(r["trace_id"] == trace_id for r in found)
        assert any(r["service"] == "example" and "example::fail" in r["message"] for r in found)
        other = c.get("/api/logs", params={"trace_id": "0" * 32}).json()["logs"]
        assert other == []


# Last in this module: it restarts the example worker under the shared engine.
def test_workers_page_data_shows_a_restart_after_a_crash(console: Console) -> None:
    import signal

    with console.api() as c:
        before = {w["name"]: w for w in c.get("/api/workers").json()["workers"]}["example"]
        os.kill(before["pid"], signal.SIGKILL)

        def restarted() -> dict[str, Any] | None:
            w = {w["name"]: w for w in c.get("/api/workers").json()["workers"]}["example"]
            ok = w["restarts"] == before["restarts"] + 1 and w["state"] == "running"
            return w if ok and w["pid"] not in (None, before["pid"]) else None

        after = wait_until(restarted, timeout=15, what="the example worker back, counted")
        assert after["last_exit"] == -signal.SIGKILL


def test_the_ready_line_counts_the_functions_the_console_lists(console: Console) -> None:
    import re

    ready = next(line for line in console.engine.lines if line.startswith("engine ready"))
    m = re.search(r"(\d+) functions", ready)
    assert m is not None
    with console.api() as c:
        listed = c.get("/api/functions").json()["functions"]
    assert int(m.group(1)) == len(listed)
    assert "engine::status" in {f["function_id"] for f in listed}


# ---- the memory domain's records ---------------------------------------------------------
def test_memory_records_are_read_only_in_the_kv_browser_and_forgotten_audited(
    console: Console,
) -> None:
    with console.api() as c:
        mem = _invoke(c, "mem::remember", {"content": "console read-only probe"})["result"]
        mid = mem["memory"]["id"]
        e = c.get(f"/api/kv/mem_memories/{mid}").json()
        assert e["read_only"] and "mem::forget" in e["read_only"]
        assert e["viewer_url"].endswith(f"/#memories/{mid}")
        assert e["forget_field"] == "memoryIds"
        put = c.put(f"/api/kv/mem_memories/{mid}", json={"value": "{}", "revision": e["revision"]})
        assert put.status_code == 403 and put.json()["error"]["field"] == "bucket"
        gone = c.delete(f"/api/kv/mem_memories/{mid}", params={"revision": e["revision"]})
        assert gone.status_code == 403
        assert c.get(f"/api/kv/mem_memories/{mid}").status_code == 200  # still there
        # What the page's "Forget (audited)" does: mem::forget, which audits and reindexes.
        out = _invoke(c, "mem::forget", {e["forget_field"]: [mid], "reason": "console test"})
        assert out["result"]["deleted"] == 1
        assert c.get(f"/api/kv/mem_memories/{mid}").status_code == 404
        audit = _invoke(c, "mem::audit", {})["result"]["entries"]
        assert any(a["action"] == "forget" and mid in a["targetIds"] for a in audit)
        assert c.get("/api/kv/example/does-not-exist").status_code == 404  # others still open


def test_kv_history_says_when_each_revision_was_stored(console: Console) -> None:
    from datetime import UTC, datetime

    with console.api() as c:
        _invoke(c, "example::count", {"key": "when-probe"})
        e = c.get("/api/kv/example/when-probe").json()
    stored = e["history"][0]["created"]
    assert stored.endswith("Z")
    age = datetime.now(UTC) - datetime.fromisoformat(stored.replace("Z", "+00:00"))
    assert 0 <= age.total_seconds() < 120


def test_a_search_trace_shows_each_retrieval_stream_and_the_fusion(console: Console) -> None:
    with console.api() as c:
        _invoke(c, "mem::remember", {"content": "the rate limiter uses a token bucket per IP"})
        out = _invoke(c, "mem::search", {"query": "token bucket rate limiter"})
        assert out["ok"], out
        spans = [v["span"] for v in _trace(c, out["trace_id"], 6)["spans"]]
    by_name = {s["name"]: s for s in spans}
    for stream in ("search.bm25", "search.graph", "search.vectors", "search.fusion"):
        assert stream in by_name, sorted(by_name)
    assert by_name["search.bm25"]["attributes"]["search.results"] >= 1
    assert "embeddings off" in by_name["search.vectors"]["attributes"]["search.skipped"]
    assert by_name["search.fusion"]["attributes"]["search.streams"].startswith("bm25")
    root = by_name["mem::search"]
    assert by_name["search.bm25"]["parent_id"] == root["span_id"]
