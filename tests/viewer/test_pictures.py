"""The viewer's pictures and layouts in real headless Chromium: the graph page draws the
graph's nodes and edges (cytoscape's own counts, and pixels on its canvas), every chart
of the Trends page renders from data the test posted, no page overflows at a laptop's
1280x800, and a conflict of a shared memory is flagged and resolved from the page."""

from __future__ import annotations

import asyncio
import json
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tests.fixtures import Stack, needs_chromium, wait_until

pytestmark = needs_chromium
PAGES = ["activity", "trends", "memories", "sessions", "replay", "graph", "profile", "lessons",
         "audit", "actions", "health"]  # fmt: skip
INK = """(sel) => {
  const c = document.querySelector(sel);
  if (!c || !c.width || !c.height) return 0;
  const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
  let n = 0;
  for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++;
  return n;
}"""


def open_page(browser: Any, stack: Stack, width: int = 1400, height: int = 900) -> Any:
    ctx = browser.new_context(viewport={"width": width, "height": height})
    pg = ctx.new_page()
    pg.set_default_timeout(20000)
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.errors = errors
    pg.goto(stack.login_url())
    pg.locator('#live-status[data-state="live"]').wait_for()
    return pg


def trends(stack: Stack) -> dict[str, Any]:
    with stack.rest() as c:
        got: dict[str, Any] = c.get("/agentmemory/viewer/trends", params={"days": 14}).json()
    return got


def test_the_graph_page_draws_the_nodes_and_edges_it_lists(browser: Any, stack: Stack) -> None:
    stack.observe("graph-" + uuid.uuid4().hex[:6], 6, project="graph-demo")
    stack.digest()
    with stack.rest() as c:
        assert c.get("/agentmemory/graph/stats").json()["totalEdges"] > 0
    pg = open_page(browser, stack)
    pg.goto(f"{stack.viewer}/#graph?all=1")
    canvas = pg.locator('#graph-canvas[data-drawn="true"]')
    canvas.wait_for()
    nodes, edges = int(canvas.get_attribute("data-nodes")), int(canvas.get_attribute("data-edges"))
    assert nodes > 0 and edges > 0
    assert pg.locator("#graph-nodes tbody tr").count() == nodes  # the table lists what is drawn
    assert pg.evaluate(INK, "#graph-canvas canvas[data-id='layer2-node']") > 500
    # Picking a node shows its neighbours beside the graph.
    pg.locator(".graph-table summary").click()
    first = pg.locator("#graph-nodes tbody tr a").first
    name = first.text_content()
    first.click()
    pg.locator("#node-name").wait_for()
    assert pg.locator("#node-name").text_content() == name
    pg.locator('#graph-canvas[data-drawn="true"]').wait_for()
    assert pg.errors == []
    pg.context.close()


def test_each_chart_renders_from_the_data_posted(browser: Any, stack: Stack) -> None:
    before = trends(stack)
    stack.observe("trend-" + uuid.uuid4().hex[:6], 5, project="trend-demo")
    with stack.rest() as c:
        mem = c.post("/agentmemory/remember", json={"content": "charted " + uuid.uuid4().hex,
                                                    "project": "trend-demo"}).json()["memory"]  # fmt: skip
        assert c.post("/agentmemory/forget", json={"memoryId": mem["id"]}).json()["deleted"]
        for q in ("charted", "trend demo", "pytest"):
            assert c.post("/agentmemory/search", json={"query": q}).status_code == 200
        for _ in range(2):
            assert (
                c.post(
                    "/agentmemory/context", json={"sessionId": "x", "project": "trend-demo"}
                ).status_code
                == 200
            )
    after = trends(stack)
    assert after["observations"][-1] - before["observations"][-1] == 5
    assert after["memories"][-1] - before["memories"][-1] == 1
    assert after["removed"]["forget"][-1] - before.get("removed", {}).get("forget", [0])[-1] == 1
    assert after["searches"][-1] - before["searches"][-1] >= 3
    assert after["contexts"][-1] - before["contexts"][-1] >= 2
    assert after["tokensReturned"][-1] > before["tokensReturned"][-1]
    pg = open_page(browser, stack)
    pg.goto(f"{stack.viewer}/#trends?days=14")
    for chart in ("chart-growth", "chart-recall", "chart-tokens", "chart-lifecycle"):
        box = pg.locator(f'#{chart}[data-drawn="true"]')
        box.wait_for()
        shown = json.loads(box.get_attribute("data-series"))
        assert pg.evaluate(INK, f"#{chart} canvas") > 200, chart
        if chart == "chart-growth":
            assert shown["observations"][-1] >= after["observations"][-1]
            assert shown["memories"][-1] >= after["memories"][-1]
        if chart == "chart-recall":
            assert shown["searches"][-1] >= after["searches"][-1]
            assert shown["context blocks"][-1] >= after["contexts"][-1]
        if chart == "chart-lifecycle":
            assert shown["forgotten"][-1] >= after["removed"]["forget"][-1]
    # The numbers are there as text too.
    table = pg.locator("#chart-growth .chart-table")
    assert table.locator("tbody tr").count() == 14 and "observations" in table.text_content()
    assert pg.errors == []
    pg.context.close()


OVERFLOW = """() => {
  const w = window.innerWidth;
  const out = [];
  if (document.documentElement.scrollWidth > w) out.push("document " + document.documentElement.scrollWidth);
  for (const e of document.querySelectorAll("main *")) {
    const r = e.getBoundingClientRect();
    if (r.width && r.right > w + 1) out.push(`${e.tagName}#${e.id}.${e.className} right ${Math.round(r.right)}`);
  }
  for (const e of document.querySelectorAll("main .card, main .detail, main td, main .trend, main .chart")) {
    const cs = getComputedStyle(e);
    if (cs.overflowX === "visible" && e.scrollWidth > e.clientWidth + 2) out.push(`${e.tagName}#${e.id}.${e.className} inner ${e.scrollWidth}>${e.clientWidth}`);
  }
  return out.slice(0, 8);
}"""


def test_no_page_overflows_at_a_laptops_1280x800(browser: Any, stack: Stack) -> None:
    with stack.rest() as c:
        mid = c.post("/agentmemory/remember", json={
            "content": "A long path: " + "/".join(["deeply", "nested", "directory"] * 12) + "/file.py",
            "title": "A memory with a title long enough to wrap several times in a narrow list "
                     "column, which must not push the page sideways at all",
            "project": "viewer-demo"}).json()["memory"]["id"]  # fmt: skip
    pg = open_page(browser, stack, 1280, 800)
    for name in [*PAGES, f"memories/{mid}"]:
        pg.goto(f"{stack.viewer}/#{name}")
        pg.wait_for_timeout(900)
        assert pg.evaluate(OVERFLOW) == [], name
    assert pg.errors == []
    pg.context.close()


def apply_from_peer(stack: Stack, event: dict[str, Any], origin: str, record_id: str) -> str:
    """A peer's TEAM event through the real apply step, as the stream trigger hands it."""

    async def run() -> str:
        c = await stack.engine.client()
        try:
            got = await c.call(
                "mem::team-apply",
                json.dumps(event).encode(),
                headers={"Stream-Subject": f"team.log.{origin}.{record_id}", "Stream-Seq": "0"},
            )
            return str(got["outcome"])
        finally:
            await c.nc.close()

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, run()).result()


def test_a_conflict_is_flagged_and_resolved_on_the_page(browser: Any, stack: Stack) -> None:
    tag = uuid.uuid4().hex[:6]
    with stack.rest() as c:
        m1 = c.post("/agentmemory/remember", json={"content": f"Deploys run at 17:00 {tag}",
                    "title": f"Deploy window {tag}", "project": "viewer-demo"}).json()["memory"]  # fmt: skip
        assert (
            c.post(
                "/agentmemory/team/share", json={"itemId": m1["id"], "itemType": "memory"}
            ).status_code
            == 201
        )
        mine = c.post("/agentmemory/remember", json={"content": f"Deploys run at 16:00 {tag}",
                      "title": f"Deploy window {tag}", "project": "viewer-demo",
                      "supersedes": m1["id"]}).json()["memory"]  # fmt: skip

        def shared() -> bool:
            return (
                c.get("/agentmemory/team/chain", params={"memoryId": mine["id"]}).status_code == 200
            )

        wait_until(shared, timeout=20, what="the local edit shared")
    theirs = f"mem_{uuid.uuid4().hex[:23]}"
    when = "2030-01-01T00:00:00.000Z"  # later than the local edit: it is the head for now
    memory = {"id": theirs, "content": f"Deploys run at 18:00 {tag}", "title": f"Deploy window {tag}",
              "project": "viewer-demo", "created_at": when, "updated_at": when, "version": 2,
              "supersedes": m1["id"], "team": "default", "instance": "laptop"}  # fmt: skip
    item = {"id": theirs, "kind": "memory", "item_type": "memory", "team": "default",
            "origin": "laptop", "shared_by": "bob", "shared_at": when, "project": "viewer-demo",
            "root": m1["id"], "memory": memory}  # fmt: skip
    assert apply_from_peer(stack, {"type": "shared", "item": item}, "laptop", theirs) == "stored"
    with stack.rest() as c:
        chain = c.get("/agentmemory/team/chain", params={"memoryId": m1["id"]}).json()
    assert chain["conflict"] and sorted(chain["competing"]) == sorted([mine["id"], theirs])
    assert chain["head"] == theirs
    pg = open_page(browser, stack)
    pg.goto(f"{stack.viewer}/#memories?q={tag}")
    row = pg.locator(f'#memories-list tr[data-memory="{theirs}"]')
    row.wait_for()
    assert "conflict" in row.text_content() and "from laptop" in row.text_content()
    pg.goto(f"{stack.viewer}/#memories/{theirs}")
    banner = pg.locator("#memory-conflict")
    banner.wait_for()
    assert banner.locator("li[data-competing]").count() == 2
    assert "shared by bob from laptop" in pg.locator("#memory-origin").text_content()
    assert mine["id"] in [
        v.get_attribute("data-id") for v in pg.locator("#memory-versions li").all()
    ]
    banner.locator(f'button[data-keep="{mine["id"]}"]').click()
    pg.wait_for_url(f"**/#memories/{mine['id']}")
    with stack.rest() as c:
        after = c.get("/agentmemory/team/chain", params={"memoryId": m1["id"]}).json()
        kept = c.get(f"/agentmemory/memories/{mine['id']}").json()
    assert after["head"] == mine["id"] and after["conflict"] is False
    assert kept["memory"].get("supersededBy") is None and theirs in [
        v["id"] for v in kept["versions"]
    ]
    pg.locator("#memory-title").wait_for()
    assert pg.locator("#memory-conflict").count() == 0
    assert pg.errors == []
    pg.context.close()
