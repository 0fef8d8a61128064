"""Upstream's whole surface on a fresh stack: every route of the installed package's route
table is served (no 404 / 405), nothing answers 500, and GET /agentmemory/mcp/tools names
every tool of its registry."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.upstream.stack import start, upstream_routes, upstream_tools

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")


async def test_every_upstream_route_answers_and_every_tool_is_listed(tmp_path: Path) -> None:
    routes = upstream_routes()
    tools = upstream_tools()
    assert len(routes) == 136 and len(tools) == 54  # the package read is the whole table
    stack = start(tmp_path)
    try:
        async with stack.http() as http:
            saved = await http.post(
                "/agentmemory/remember", json={"content": "route walk fixture memory"}
            )
            assert saved.status_code == 201, saved.text
            memory_id = saved.json()["memory"]["id"]
            answers: dict[str, tuple[int, str]] = {}
            for method, path in routes:
                concrete = path.replace(":id", memory_id)
                if method in ("GET", "DELETE"):
                    r = await http.request(method, concrete)
                else:
                    r = await http.request(method, concrete, json={})
                answers[f"{method} {path}"] = (r.status_code, r.text[:200])
            listed = {t["name"] for t in (await http.get("/agentmemory/mcp/tools")).json()["tools"]}
    finally:
        stack.stop()
    # A route that is not served answers 405, or 404 "no route for …"; a served one may
    # still answer 404 for a record or file it does not find (an empty request names none).
    missing = {
        r: a
        for r, a in answers.items()
        if (a[0] == 405 or (a[0] == 404 and "no route for" in a[1]))
    }
    assert missing == {}
    broken = {r: a for r, a in answers.items() if a[0] >= 500 and a[0] != 501}
    assert broken == {}
    assert answers["POST /agentmemory/vision-search"][0] == 400  # no query given
    assert set(tools) <= listed, sorted(set(tools) - listed)
