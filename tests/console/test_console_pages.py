"""The console pages in real headless Chromium (the Debian binary, driven by Playwright).
One screenshot per page goes to artifacts/console/ (git-ignored; with
SCREENSHOTS=docs/screenshots they go there, named console-<page>.png)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.console.conftest import Console
from tests.fixtures import ROOT, needs_chromium, wait_until

SHOTS = os.environ.get("SCREENSHOTS")
ARTIFACTS = ROOT / SHOTS if SHOTS else ROOT / "artifacts" / "console"
PREFIX = "console-" if SHOTS else ""

pytestmark = needs_chromium


@pytest.fixture
def page(browser: object, console: Console) -> Iterator[object]:
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})  # type: ignore[attr-defined]
    pg = ctx.new_page()
    pg.set_default_timeout(15000)
    # The token once; the console answers with its cookie and drops the token from the URL.
    pg.goto(f"{console.url}/?token={console.secret}#/workers")
    assert "token" not in pg.url
    yield pg
    ctx.close()


def shot(pg: object, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(ARTIFACTS / f"{PREFIX}{name}.png"), full_page=not SHOTS)  # type: ignore[attr-defined]


def test_workers_page_lists_the_running_workers(page: object, console: Console) -> None:
    pg: object = page
    row = pg.locator('tr[data-worker="example"]')  # type: ignore[attr-defined]
    row.wait_for()
    cells = row.locator("td").all_text_contents()
    assert cells[0] == "example" and cells[2] == "running"
    assert cells[3].isdigit()  # pid
    for name in ("triggers", "console"):
        pg.locator(f'tr[data-worker="{name}"]').wait_for()  # type: ignore[attr-defined]
    shot(pg, "workers")


def test_invoking_a_function_from_the_page_shows_its_result_and_trace(
    page: object, console: Console
) -> None:
    pg: object = page
    pg.goto(f"{console.url}/#/functions/example::relay")  # type: ignore[attr-defined]
    pg.locator("#invoke-payload").fill('{"text": "from the browser"}')  # type: ignore[attr-defined]
    pg.locator("#invoke-btn").click()  # type: ignore[attr-defined]
    result = pg.locator("#invoke-result")  # type: ignore[attr-defined]
    result.wait_for()
    assert '"relayed:from the browser"' in result.text_content()
    assert pg.locator("#invoke-status").text_content() == "ok"  # type: ignore[attr-defined]
    shot(pg, "functions")

    pg.locator("#invoke-trace").click()  # type: ignore[attr-defined]
    rows = pg.locator("#waterfall .span-row")  # type: ignore[attr-defined]
    rows.nth(4).wait_for()
    names = [n.strip() for n in pg.locator("#waterfall .span-name").all_text_contents()]  # type: ignore[attr-defined]
    assert names[0].startswith("console invoke example::relay")
    assert any(n.startswith("example::echo") for n in names)
    # Bars are laid out on the trace's time axis: the root spans (nearly) all of it.
    root_width = rows.nth(0).locator(".span-bar").evaluate("e => e.style.width")
    assert float(root_width.rstrip("%")) > 90
    nested = rows.nth(4).locator(".span-name").evaluate("e => e.style.paddingLeft")
    assert nested != "0em"
    rows.nth(2).click()
    assert '"service": "example"' in pg.locator("#span-detail").text_content()  # type: ignore[attr-defined]
    shot(pg, "trace-waterfall")


def test_the_function_list_filters_and_each_function_has_an_example_payload(
    page: object, console: Console
) -> None:
    import json

    import jsonschema

    pg: Any = page
    pg.goto(f"{console.url}/#/functions")
    links = pg.locator("#function-list a")
    links.first.wait_for()
    total = links.count()
    pg.locator("#function-filter").fill("relay")
    wait_until(lambda: links.count() < total, timeout=5, what="the filter")
    shown = links.all_text_contents()
    assert shown and all("relay" in t for t in shown)
    assert pg.locator("#function-count").text_content() == f"{len(shown)} of {total} functions"
    assert "q=relay" in pg.url
    links.first.click()
    payload = pg.locator("#invoke-payload")
    payload.wait_for()
    with console.api() as c:
        functions = {f["function_id"]: f for f in c.get("/api/functions").json()["functions"]}
    schema = functions["example::relay"]["request_schema"]
    jsonschema.validate(json.loads(payload.input_value()), schema)
    pg.locator("#invoke-btn").click()
    pg.locator("#invoke-result").wait_for()
    assert pg.locator("#invoke-status").text_content() == "ok"
    # Every function's example is valid for its own request schema.
    bad = {}
    for fid, f in functions.items():
        if not f["request_schema"]:
            continue
        example = json.loads(pg.evaluate("(s) => examplePayload(s)", f["request_schema"]))
        try:
            jsonschema.validate(example, f["request_schema"])
        except jsonschema.ValidationError as err:
            bad[fid] = err.message
    assert bad == {}
    assert len(functions) > 20


def test_traces_page_searches_by_function_and_status(page: object, console: Console) -> None:
    with console.api() as c:
        c.post("/api/invoke", json={"function_id": "example::fail", "payload": {}})
    pg: object = page
    pg.goto(f"{console.url}/#/traces")  # type: ignore[attr-defined]
    pg.locator("#trace-function").fill("example::fail")  # type: ignore[attr-defined]
    pg.locator("#trace-status").select_option("ERROR")  # type: ignore[attr-defined]

    def found() -> bool:
        pg.locator("#trace-search").click()  # type: ignore[attr-defined]
        pg.wait_for_timeout(300)  # type: ignore[attr-defined]
        return pg.locator("#traces-table tbody tr").count() > 0  # type: ignore[attr-defined, no-any-return]

    from tests.fixtures import wait_until

    wait_until(found, timeout=15, what="an error trace of example::fail")
    statuses = pg.locator("#traces-table tbody tr td:last-child").all_text_contents()  # type: ignore[attr-defined]
    assert set(statuses) == {"ERROR"}
    shot(pg, "traces")


def test_kv_streams_queues_triggers_and_logs_pages_render(page: object, console: Console) -> None:
    with console.api() as c:
        c.post("/api/invoke", json={"function_id": "example::count", "payload": {"key": "ui"}})
    pg: object = page
    go = pg.goto  # type: ignore[attr-defined]
    loc = pg.locator  # type: ignore[attr-defined]

    go(f"{console.url}/#/triggers")
    loc('tr[data-trigger="yearly-count"]').wait_for()
    assert loc('tr[data-trigger="example-echo"] td').first.text_content() == "http"
    # One line per trigger says what fires it; declarations and schemas stay folded.
    observe = loc("section[data-kind=http] tr", has_text="mem::observe").first
    assert "POST /agentmemory/observe" in observe.locator(".fires").text_content()
    assert '"mode"' not in observe.inner_text()
    observe.locator("details.config > summary").click()
    assert '"mode": "body"' in observe.inner_text()
    documented = loc('tr[data-trigger="echo-documented"]')
    assert "POST /example/echo-documented" in documented.locator(".fires").text_content()
    documented.locator("details.config > summary").click()
    assert "body schema" in documented.inner_text()
    assert "properties" not in documented.inner_text()  # each schema folded again
    documented.locator("details.schema > summary").first.click()
    assert "properties" in documented.inner_text()
    shot(pg, "triggers")
    loc("#trigger-filter").fill("yearly")
    assert loc("#trigger-sections tr[data-trigger]").count() == 1
    assert "null" not in loc("#trigger-sections").inner_text()

    go(f"{console.url}/#/kv/example/ui")
    loc("#kv-value").wait_for()
    assert loc("#kv-value").input_value().strip() == "1"
    assert re.match(r"revision \d+", loc("#kv-revision").text_content())
    stored = loc("#kv-history .kv-created").first.text_content()
    assert "Invalid" not in stored and re.search(r"\d{1,2}:\d{2}", stored), stored
    shot(pg, "kv")

    go(f"{console.url}/#/streams/KV_example")
    loc('tr[data-stream="ENGINE_TRACES"]').wait_for()
    loc("#tail .tail-line").first.wait_for()
    shot(pg, "streams")

    go(f"{console.url}/#/queues")
    loc('tr[data-queue="failing"]').wait_for()
    shot(pg, "queues")

    go(f"{console.url}/#/logs")
    loc("#logs-table").wait_for()
    shot(pg, "logs")


def test_login_form_lets_the_secret_holder_in(browser: object, console: Console) -> None:
    ctx = browser.new_context()  # type: ignore[attr-defined]
    pg = ctx.new_page()
    pg.goto(f"{console.url}/")
    assert pg.url.endswith("/login")
    pg.locator("#secret").fill("wrong")
    pg.locator("button[type=submit]").click()
    assert "wrong secret" in pg.locator("#login-error").text_content()
    shot(pg, "login")
    pg.locator("#secret").fill(console.secret)
    pg.locator("button[type=submit]").click()
    pg.locator('tr[data-worker="example"]').wait_for(timeout=15000)
    cookies = {c["name"]: c for c in ctx.cookies()}
    assert cookies["am_console"]["httpOnly"] and cookies["am_console"]["sameSite"] == "Strict"
    ctx.close()
    assert httpx.get(f"{console.url}/healthz").status_code == 200


def test_an_observe_trace_shows_the_kv_write_and_the_stream_publish(
    page: object, console: Console
) -> None:
    """Durability made visible: the record's KV create and its MEM_EVENTS append are spans
    of the observe call, under the REST request's trace."""
    with console.api() as c:
        r = c.post(
            "/api/triggers/http-test",
            json={
                "method": "POST",
                "path": "/agentmemory/observe",
                "body": {
                    "hookType": "post_tool_use",
                    "sessionId": "console-trace",
                    "timestamp": "2026-12-01T10:00:00.000Z",
                    "data": {
                        "tool_name": "Bash",
                        "tool_input": {"command": "ls"},
                        "tool_output": "a",
                    },
                },
            },
        )
        assert r.json()["status"] == 201, r.text
        trace_id = r.json()["trace_id"]
    pg: object = page
    pg.goto(f"{console.url}/#/traces/{trace_id}")  # type: ignore[attr-defined]
    names = pg.locator("#waterfall .span-name")  # type: ignore[attr-defined]

    def spans() -> list[str]:
        return [n.strip() for n in names.all_text_contents()]

    from tests.fixtures import wait_until

    wait_until(
        lambda: any(n.startswith("publish MEM_EVENTS") for n in spans()),
        timeout=15,
        what="the publish span on the page",
    )
    got = spans()
    assert any(n.startswith("POST /agentmemory/observe") for n in got)
    assert any(n.startswith("mem::observe") for n in got)
    # the observation is its MEM_EVENTS message; the session's row is a KV create
    assert any(n.startswith("kv.create mem_sessions") for n in got), got
    assert any(n.startswith("publish MEM_EVENTS") and "producer" in n for n in got), got
    kv = pg.locator("#waterfall .span-row", has_text="kv.create mem_sessions").first  # type: ignore[attr-defined]
    kv.click()
    assert '"db.collection.name": "mem_sessions"' in pg.locator("#span-detail").text_content()  # type: ignore[attr-defined]
    shot(pg, "trace-observe")


def test_a_memory_record_in_the_kv_browser_links_to_the_viewer_and_forgets_audited(
    page: object, console: Console
) -> None:
    with console.api() as c:
        out = c.post(
            "/api/invoke",
            json={"function_id": "mem::remember", "payload": {"content": "kv page probe memory"}},
        ).json()
    mid = out["result"]["memory"]["id"]
    pg: object = page
    loc = pg.locator  # type: ignore[attr-defined]
    pg.goto(f"{console.url}/#/kv/mem_memories/{mid}")  # type: ignore[attr-defined]
    loc("#kv-readonly").wait_for()
    assert loc("#kv-value").get_attribute("readonly") is not None
    assert loc("#kv-save").count() == 0
    assert loc("#kv-viewer-link").get_attribute("href").endswith(f"/#memories/{mid}")
    assert loc("#viewer-link").get_attribute("href").startswith("http://127.0.0.1:")
    shot(pg, "kv-memory")
    pg.once("dialog", lambda d: d.accept("console page test"))  # type: ignore[attr-defined]
    loc("#kv-forget").click()
    loc("#waterfall .span-row").first.wait_for()
    with console.api() as c:
        assert c.get(f"/api/kv/mem_memories/{mid}").status_code == 404


def test_a_search_trace_shows_its_streams_on_the_page(page: object, console: Console) -> None:
    with console.api() as c:
        c.post(
            "/api/invoke",
            json={"function_id": "mem::remember", "payload": {"content": "retries use backoff"}},
        )
        out = c.post(
            "/api/invoke", json={"function_id": "mem::search", "payload": {"query": "backoff"}}
        ).json()
    pg: object = page
    pg.goto(f"{console.url}/#/traces/{out['trace_id']}")  # type: ignore[attr-defined]
    pg.locator("#waterfall .span-row", has_text="search.fusion").wait_for()  # type: ignore[attr-defined]
    names = [n.strip() for n in pg.locator("#waterfall .span-name").all_text_contents()]  # type: ignore[attr-defined]
    for stream in ("search.bm25", "search.vectors", "search.graph", "search.fusion"):
        assert any(n.startswith(stream) for n in names), names
    shot(pg, "trace-search")
