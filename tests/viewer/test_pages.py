"""The viewer in real headless Chromium (the Debian binary, driven by Playwright): no login
on loopback, live activity, forget, replay with the keyboard, empty states, deep links,
labels, and the browser's own enforcement of the Origin check and the CSP. A screenshot of
every page goes to artifacts/viewer/ (git-ignored; docs/screenshots/ holds the committed
ones, taken by this test with SCREENSHOTS=docs/screenshots)."""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from functions.kernel.store import MemoryStore
from functions.memory.remember import remember
from functions.memory.wire import RememberIn
from tests.fixtures import ROOT, Stack, needs_chromium, wait_until
from tests.viewer.transcripts import transcript

SHOTS = ROOT / os.environ.get("SCREENSHOTS", "artifacts/viewer")
PAGES = ["activity", "trends", "memories", "sessions", "replay", "graph", "profile", "lessons",
         "quarantine", "audit", "actions", "health"]  # fmt: skip

pytestmark = needs_chromium


@pytest.fixture
def page(browser: Any, stack: Stack) -> Iterator[Any]:
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    pg = ctx.new_page()
    pg.set_default_timeout(15000)
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(stack.login_url())  # as `agentmemory viewer` opens it: signs this browser in
    pg.goto("about:blank")  # so that each test's first goto is a page load of its own
    yield pg
    ctx.close()
    assert errors == []


def shot(pg: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(SHOTS / f"viewer-{name}.png"), full_page=False)


def open_live(pg: Any, stack: Stack, where: str = "activity") -> None:
    pg.goto(f"{stack.viewer}/#{where}")
    pg.locator('#live-status[data-state="live"]').wait_for()


def test_the_link_signs_the_browser_in_and_the_viewer_loads(page: Any, stack: Stack) -> None:
    resp = page.goto(f"{stack.viewer}/")  # the fixture opened the login link first
    assert resp.status == 200 and "content-security-policy" in resp.headers
    page.locator('#live-status[data-state="live"]').wait_for()
    assert page.locator("main h1").text_content() == "Activity"
    assert page.locator('#nav a[aria-current="page"]').text_content() == "Activity"
    assert "token" not in page.url and page.locator("input[type=password]").count() == 0


def test_an_observation_posted_after_load_appears_within_a_second(page: Any, stack: Stack) -> None:
    open_live(page, stack)
    sid = "live-" + uuid.uuid4().hex[:8]
    with stack.rest() as c:
        r = c.post("/agentmemory/observe", json={
            "hookType": "post_tool_use", "sessionId": sid, "project": "viewer-demo",
            "timestamp": "2026-11-21T08:00:00.000Z",
            "data": {"tool_name": "Edit", "tool_input": {"file_path": "src/live/feed.py"},
                     "tool_output": "updated"}})  # fmt: skip
        oid = r.json()["observationId"]
    posted = time.monotonic()
    item = page.locator(f'#activity-feed li[data-id="{oid}"]')
    item.wait_for(timeout=1000)  # the bound: on the page within 1 s, no reload
    assert time.monotonic() - posted < 1.0
    assert "Edited src/live/feed.py" in item.text_content()
    assert item.locator("a.title").get_attribute("href") == f"#sessions/{sid}?obs={oid}"


def test_activity_keeps_what_it_showed_after_navigating_away_and_back(
    page: Any, stack: Stack
) -> None:
    open_live(page, stack)
    with stack.rest() as c:
        first = c.post("/agentmemory/remember", json={
            "content": "Receipts are kept for 30 days.", "title": "Receipt retention",
            "project": "viewer-demo"}).json()["memory"]  # fmt: skip
        second = c.post("/agentmemory/remember", json={
            "content": "Receipts are kept for 90 days.", "title": "Receipt retention",
            "project": "viewer-demo", "supersedes": first["id"]}).json()["memory"]  # fmt: skip
        gone = c.post("/agentmemory/remember", json={"content": "Temporary note " + uuid.uuid4().hex,
                      "title": "Temporary note", "project": "viewer-demo"}).json()["memory"]  # fmt: skip
        assert c.post(
            "/agentmemory/forget", json={"memoryId": gone["id"], "reason": "done"}
        ).json()["deleted"]
    head = page.locator(f'#activity-feed li[data-id="{second["id"]}"]')
    head.wait_for()
    page.locator("#nav a[data-page=memories]").click()
    page.locator("#memories-list").wait_for()
    page.locator("#nav a[data-page=activity]").click()
    head.wait_for()  # heard live before the page changed, still there after
    # The two versions are one row, the newest, saying there is an earlier one.
    assert head.get_attribute("data-versions") == "2"
    assert page.locator(f'#activity-feed li[data-id="{first["id"]}"]').count() == 0
    # The removal names what it removed.
    removal = page.locator("#activity-feed li[data-kind=removed]").filter(has_text="Temporary note")
    assert removal.count() == 1
    assert "Forgotten: Temporary note" in removal.locator("a.title").text_content()
    assert "—" not in removal.locator("time").text_content()
    # One clock: down the feed, times never go forward.
    stamps = page.eval_on_selector_all(
        "#activity-feed li > time", "els => els.map((e) => Date.parse(e.getAttribute('datetime')))"
    )
    assert len(stamps) > 3 and stamps == sorted(stamps, reverse=True)
    # It offers older events exactly when there are some (viewer/activity pages back).
    more = page.evaluate(
        "() => fetch('/agentmemory/viewer/snapshot?limit=200').then((r) => r.json()).then((s) => s.more)"
    )
    assert page.locator("#activity-older").is_visible() == more


def test_forget_removes_a_memory_from_the_page(page: Any, stack: Stack) -> None:
    with stack.rest() as c:
        mem = c.post("/agentmemory/remember", json={
            "content": "Staging deploys need the VPN " + uuid.uuid4().hex[:6], "project": "viewer-demo",
            "type": "fact"}).json()["memory"]  # fmt: skip
    open_live(page, stack, "memories")
    row = page.locator(f'#memories-list tr[data-memory="{mem["id"]}"]')
    row.wait_for()
    row.locator("a").click()
    page.locator("#memory-title").wait_for()
    page.locator("#memory-forget").click()
    page.locator("#confirm-reason").fill("outdated")
    page.locator("#confirm-ok").click()
    row.wait_for(state="detached")
    page.wait_for_url("**/#memories")  # back on the list (the live removal may come first)
    assert page.locator(f'tr[data-memory="{mem["id"]}"]').count() == 0
    with stack.rest() as c:
        assert c.get(f"/agentmemory/memories/{mem['id']}").status_code == 404
        audit = c.get("/agentmemory/audit").json()["entries"]
        assert any(e["action"] == "forget" and mem["id"] in e["targetIds"] and e["reason"] == "outdated"
                   for e in audit)  # fmt: skip


def test_an_edit_saves_a_new_version_with_a_word_diff(page: Any, stack: Stack) -> None:
    with stack.rest() as c:
        mem = c.post("/agentmemory/remember", json={
            "content": "Invoices are archived after 30 days.", "project": "viewer-demo",
            "type": "decision"}).json()["memory"]  # fmt: skip
    open_live(page, stack, f"memories/{mem['id']}")
    page.locator("#memory-edit").click()
    page.locator("#edit-content").fill("Invoices are archived after 90 days.")
    page.locator("#memory-save").click()
    page.locator('#memory-versions li[data-version="2"]').wait_for()
    assert page.locator("#memory-content").text_content() == "Invoices are archived after 90 days."
    diff = page.locator('#memory-versions li[data-version="1"] .diff')
    assert diff.locator("del").all_text_contents() == ["30"]
    assert diff.locator("ins").all_text_contents() == ["90"]
    shot(page, "memory-detail")


def test_replay_plays_a_twenty_event_session_at_4x_and_the_keyboard_steps_it(
    page: Any, stack: Stack
) -> None:
    sid = "replay-" + uuid.uuid4().hex[:8]
    stack.observe(sid, 10)  # 10 tool observations: a call and a result each
    open_live(page, stack, f"replay/{sid}")
    player = page.locator("#replay-player")
    player.wait_for()
    assert page.locator("#replay-events li").count() == 20
    first = int(player.get_attribute("data-delay-ms"))
    page.locator("#replay-speed").select_option("4")
    assert int(player.get_attribute("data-delay-ms")) == round(first / 4)
    page.locator("#replay-player").focus()
    page.keyboard.press("Space")
    assert player.get_attribute("data-playing") == "true"
    wait_until(
        lambda: player.get_attribute("data-index") == "19", timeout=15, what="the last event"
    )
    wait_until(lambda: player.get_attribute("data-playing") == "false", timeout=5, what="a stop")
    assert page.locator("#replay-pos").text_content().startswith("20 / 20")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    assert player.get_attribute("data-index") == "17"
    page.keyboard.press("ArrowRight")
    assert player.get_attribute("data-index") == "18"
    assert page.locator("#replay-stage .stage-event").get_attribute("data-event").endswith(":call")
    page.keyboard.press("Home")
    assert player.get_attribute("data-index") == "0"
    page.keyboard.press("Space")
    assert page.locator("#replay-play").get_attribute("aria-pressed") == "true"
    page.keyboard.press("Space")
    assert page.locator("#replay-play").get_attribute("aria-pressed") == "false"
    shot(page, "replay")


def test_a_deep_link_opens_one_observation_of_a_session(page: Any, stack: Stack) -> None:
    sid = "deep-" + uuid.uuid4().hex[:8]
    stack.observe(sid, 3)
    with stack.rest() as c:
        obs = c.get("/agentmemory/observations", params={"sessionId": sid}).json()["observations"]
    target = obs[1]["id"]
    open_live(page, stack, f"sessions/{sid}?obs={target}")
    li = page.locator(f"#obs-{target}")
    li.wait_for()
    assert "sel" in li.get_attribute("class")
    assert li.locator("details").get_attribute("open") is not None
    assert (
        '"command": "pytest tests/test_step_1.py -q"' in li.locator("pre.tool-input").text_content()
    )


def test_a_foreign_page_cannot_use_the_viewer(browser: Any, stack: Stack) -> None:
    """A page of another origin (here: the REST port's) posts to the viewer and opens its
    live socket: the viewer refuses both, so nothing is saved and no event is heard."""
    ctx = browser.new_context()
    pg = ctx.new_page()
    pg.goto(f"{stack.url}/agentmemory/livez")
    marker = "foreign " + uuid.uuid4().hex
    outcome = pg.evaluate(
        """async ([viewer, marker]) => {
            await fetch(viewer + "/agentmemory/remember", {method: "POST", mode: "no-cors",
              headers: {"content-type": "text/plain"}, body: JSON.stringify({content: marker})});
            return await new Promise((resolve) => {
              const ws = new WebSocket(viewer.replace("http", "ws") + "/live");
              ws.onopen = () => resolve("open");
              ws.onclose = (e) => resolve("closed " + e.code);
            });
        }""",
        [stack.viewer, marker],
    )
    ctx.close()
    assert outcome.startswith("closed")
    with stack.rest() as c:
        memories = c.get("/agentmemory/memories", params={"limit": 10000}).json()["memories"]
        assert marker not in [m["content"] for m in memories]


def test_the_csp_blocks_inline_handlers(page: Any, stack: Stack) -> None:
    resp = page.goto(f"{stack.viewer}/#activity")
    csp = resp.headers["content-security-policy"]
    assert "script-src 'nonce-" in csp and "'unsafe-inline'" not in csp
    page.locator('#live-status[data-state="live"]').wait_for()
    ran = page.evaluate(
        """async () => {
            let violations = 0;
            document.addEventListener("securitypolicyviolation", () => violations++);
            const b = document.createElement("button");
            b.setAttribute("onclick", "window.__inline = 1");
            document.body.append(b);
            b.click();
            await new Promise((r) => setTimeout(r, 100));
            return [window.__inline === 1, violations];
        }"""
    )
    assert ran[0] is False and ran[1] >= 1


def _empty(route: Any, body: dict[str, Any], status: int = 200) -> None:
    route.fulfill(status=status, content_type="application/json", body=json.dumps(body))


def test_actions_show_the_coordination_routes_or_say_they_are_missing(
    page: Any, stack: Stack
) -> None:
    with stack.rest() as c:
        r = c.post("/agentmemory/actions", json={"title": "ship the viewer", "priority": 8})
        assert r.status_code == 201, r.text
        aid = r.json()["action"]["id"]
    open_live(page, stack, "actions")
    row = page.locator(f'#actions-list tr[data-action="{aid}"]')
    row.wait_for()
    assert "ship the viewer" in row.text_content() and "ready" in row.text_content()
    shot(page, "actions")
    missing = {"error": {"code": "NOT_FOUND", "message": "no route"}}
    page.route("**/agentmemory/actions*", lambda route, _req: _empty(route, missing, 404))
    page.reload()
    page.locator("#actions-unavailable").wait_for()
    assert "memory_action_create" in page.locator("#actions-unavailable").text_content()


def test_every_page_says_what_fills_it_when_empty(page: Any, stack: Stack) -> None:
    c = stack.viewed()
    snapshot = c.get("/agentmemory/viewer/snapshot").json()
    c.close()
    snapshot.update(activity=[], projects=[],
                    counts={"sessions": 0, "observations": 0, "memories": 0, "lessons": 0})  # fmt: skip
    empties = {
        "viewer/snapshot": snapshot, "memories": {"memories": []}, "sessions": {"sessions": []},
        "replay/sessions": {"success": True, "sessions": []}, "lessons/recall": {"lessons": []},
        "audit": {"entries": []}, "actions": {"success": True, "actions": []},
        "quarantine": {"records": [], "total": 0},
        "graph/query": {"nodes": [], "edges": [], "depth": 0,
        "totalNodes": 0, "totalEdges": 0, "truncated": False, "limit": 60, "offset": 0},
        "graph/stats": {"totalNodes": 0, "totalEdges": 0, "nodesByType": {}, "edgesByType": {},
        "expiredEdges": 0},
    }  # fmt: skip
    for path, body in empties.items():
        page.route(f"**/agentmemory/{path}*", lambda route, _req, body=body: _empty(route, body))
    expect = {
        "activity": ("#activity-empty", "agentmemory demo"),
        "memories": ("#memories-empty", "agentmemory remember"),
        "sessions": ("#sessions-empty", "agentmemory import-jsonl"),
        "replay": ("#replay-empty", "agentmemory import-jsonl"),
        "graph": ("#graph-empty", "agentmemory demo"),
        "profile": ("#profile-empty", "agentmemory connect"),
        "lessons": ("#lessons-empty", "agentmemory import-jsonl"),
        "audit": ("#audit-empty", "forget"),
        "quarantine": ("#quarantine-empty", "quarantine/hold"),
        "actions": ("#actions-empty", "memory_action_create"),
    }
    for name, (box, command) in expect.items():
        page.goto(f"{stack.viewer}/#{name}")
        page.reload()
        el = page.locator(box)
        el.wait_for()
        assert el.is_visible(), name
        assert command in el.text_content(), name


def test_controls_have_labels_and_text_has_contrast(page: Any, stack: Stack) -> None:
    stack.observe("labels-" + uuid.uuid4().hex[:6], 2)
    for name in PAGES:
        open_live(page, stack, name)
        page.wait_for_timeout(300)
        unlabelled = page.evaluate(
            """() => [...document.querySelectorAll("main input, main select, main textarea")]
                .filter((el) => !el.labels.length && !el.getAttribute("aria-label"))
                .map((el) => el.id || el.outerHTML.slice(0, 60))"""
        )
        assert unlabelled == [], name
    ratios = page.evaluate(
        """() => {
            const lum = (c) => {
              const [r, g, b] = c.match(/[\\d.]+/g).slice(0, 3).map(Number).map((v) => {
                v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
              return 0.2126 * r + 0.7152 * g + 0.0722 * b;
            };
            const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
            const bg = getComputedStyle(document.body).backgroundColor;
            const of = (sel) => getComputedStyle(document.querySelector(sel)).color;
            return { body: ratio(of("main"), bg), muted: ratio(of(".intro"), bg), link: ratio(of("#nav a"), bg) };
        }"""
    )
    assert ratios["body"] >= 7 and ratios["muted"] >= 4.5 and ratios["link"] >= 4.5, ratios


def test_screenshots_of_every_page(page: Any, stack: Stack) -> None:
    sid = str(uuid.uuid4())
    with stack.rest() as c:
        c.post("/agentmemory/replay/import-jsonl",
               json={"content": transcript(sid, "/home/dev/orders-api"), "name": "orders.jsonl"})  # fmt: skip
        c.post("/agentmemory/remember", json={"content": "The accounting import reads CSV columns by position: append new columns, never reorder.",
                                              "type": "decision", "project": "orders-api",
                                              "concepts": "csv, accounting"})  # fmt: skip
    stack.observe("shots-" + uuid.uuid4().hex[:6], 4, project="orders-api")
    stack.digest()  # the graph and the day records now, not at the lifecycle's next minute

    def counted() -> bool:  # sessions' counts are flushed every few seconds
        with stack.rest() as c:
            got = c.get("/agentmemory/viewer/snapshot").json()["counts"]["observations"]
        return int(got) >= 4

    wait_until(counted, timeout=30, what="the observations in the header's counts")
    for name in PAGES:
        open_live(page, stack, name)
        if name == "graph":
            page.locator('#graph-canvas[data-drawn="true"]').wait_for()
        if name == "memories":  # counted in words: "1 memory", "3 memories"
            page.locator("#memories-count:not(:empty)").wait_for()
            n, word = str(page.locator("#memories-count").text_content()).split()
            assert word == ("memory" if n == "1" else "memories"), (n, word)
        page.wait_for_timeout(600)
        shot(page, name)
    open_live(page, stack, f"sessions/{sid}")
    page.locator("#session-timeline").wait_for()
    shot(page, "session-detail")
    open_live(page, stack, f"replay/{sid}")
    page.locator("#replay-player").wait_for()
    page.keyboard.press("End")
    shot(page, "replay-imported")


# Last in this module: it restarts the viewer worker under the shared stack.
def test_a_dropped_stream_shows_stale_then_reconnects_and_resyncs(page: Any, stack: Stack) -> None:
    import signal

    console = f"http://127.0.0.1:{stack.engine.ports['console']}"
    auth = {"authorization": f"Bearer {stack.secret}"}

    def viewer_pid() -> int | None:
        """The process serving the viewer (in the default layout it hosts the console too)."""
        try:
            workers = httpx.get(f"{console}/api/workers", headers=auth, timeout=10).json()
        except httpx.HTTPError:
            return None
        for w in workers["workers"]:
            if w["supervised"] and "mem::viewer::snapshot" in w["functions"] and w["pid"]:
                return int(w["pid"]) if w["state"] == "running" else None
        return None

    open_live(page, stack)
    before = viewer_pid()
    assert before
    os.kill(before, signal.SIGKILL)
    status = page.locator("#live-status")
    page.locator('#live-status[data-state="stale"]').wait_for(timeout=5000)
    assert "stale" in status.text_content()
    detail = page.locator("#live-detail")
    wait_until(lambda: "reconnecting in" in detail.text_content(), timeout=5, what="the backoff")
    assert "last update" in detail.text_content()
    # While the page is away (it must come with the resync): the write path run from here,
    # as in the default layout the REST routes went down with the viewer's process.
    with ThreadPoolExecutor(1) as pool:  # a sync Playwright API holds this thread's loop
        mid = pool.submit(asyncio.run, _remember(stack, "said while the viewer was down")).result()
    page.locator('#live-status[data-state="live"]').wait_for(timeout=30000)
    page.locator(f'#activity-feed li[data-id="{mid}"]').wait_for(timeout=5000)
    wait_until(lambda: viewer_pid() not in (None, before), timeout=15, what="a new viewer")
    # the process was the stack's: the next tests of the shared stack need its routes back
    wait_until(stack.serving, timeout=120, interval=0.3, what="the product's routes again")


async def _remember(stack: Stack, content: str) -> str:
    """`remember` as the memory worker runs it, on the stack's bus; the memory's id."""
    client = await stack.engine.client()
    try:
        store = await MemoryStore(client).open()
        out = await remember(store, RememberIn(content=content))
        await store.close()
        return out.memory.id
    finally:
        await client.nc.close()
