"""The MEMORY.md bridge and commit linkage on the product stack: an edit in MEMORY.md
becomes a new version of its memory and a new block a new memory, an edit of a memory
reaches the file, and syncing again changes nothing (no loop, no duplicate); a project's
`git log` is linked to the sessions that ran in it around each commit's time."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from functions.bridge import markdown
from tests.fixtures import git
from tests.team.mesh import Node, start_node, stop

pytestmark = pytest.mark.timeout(300)
PROJECT = "/work/acme-shop"


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    n = start_node(
        tmp_path_factory.mktemp("link"),
        "solo",
        None,
        [],
        CLAUDE_MEMORY_BRIDGE="true",
        CLAUDE_PROJECT_PATH=PROJECT,
    )
    try:
        yield n
    finally:
        stop(n)


def memory_md(node: Node) -> Path:
    return node.home / ".claude" / "projects" / "-work-acme-shop" / "memory" / "MEMORY.md"


async def remember(node: Node, content: str) -> str:
    async with node.http() as h:
        r = await h.post("/agentmemory/remember", json={"content": content})
        assert r.status_code == 201, r.text
        return str(r.json()["memory"]["id"])


async def sync(node: Node, **body: Any) -> dict[str, Any]:
    async with node.http() as h:
        r = await h.post("/agentmemory/claude-bridge/sync", json=body)
        assert r.status_code == 200, r.text
        return r.json()  # type: ignore[no-any-return]


async def memory(node: Node, mid: str) -> dict[str, Any]:
    async with node.http() as h:
        r = await h.get(f"/agentmemory/memories/{mid}")
        assert r.status_code == 200, r.text
        return r.json()["memory"]  # type: ignore[no-any-return]


async def test_memory_md_round_trips_edits_both_ways_without_loops(node: Node) -> None:
    m1 = await remember(node, "checkout totals are rounded half-even to the cent")
    m2 = await remember(node, "the product images are served from the cdn bucket shop-assets")
    first = await sync(node)
    path = memory_md(node)
    text = path.read_text()
    assert first["written"] >= 2 and str(path) == first["path"]
    assert markdown.mark(m1) in text and "rounded half-even" in text

    # Edits in the file: m1's text changes, a block is added, a section of notes is kept.
    edited = text.replace(
        "checkout totals are rounded half-even to the cent",
        "checkout totals are rounded half-up to the cent since the tax audit",
    )
    edited = edited.replace(
        "## Key Memories\n", "## Key Memories\n\n### Env tooling\nuse uv for virtualenvs\n", 1
    )
    edited += "\n## Notes\nask ops before touching the cdn\n"
    path.write_text(edited)
    second = await sync(node)
    assert (second["imported"], second["updated"]) == (1, 1)
    old = await memory(node, m1)
    assert old["supersededBy"]
    new = await memory(node, old["supersededBy"])
    assert new["content"] == "checkout totals are rounded half-up to the cent since the tax audit"
    assert new["version"] == old["version"] + 1 and new["supersedes"] == m1
    text = path.read_text()
    assert markdown.mark(new["id"]) in text and markdown.mark(m1) not in text
    assert "## Notes\nask ops before touching the cdn" in text
    added = [b for b in markdown.parse(text).blocks if b.content == "use uv for virtualenvs"]
    assert len(added) == 1 and added[0].id  # imported once, written back with its id

    # Nothing changed since: syncing again imports nothing and leaves the file as it is.
    before = path.read_text()
    third = await sync(node)
    assert (third["imported"], third["updated"]) == (0, 0) and path.read_text() == before

    # An edit of a memory reaches the file; the file's old block is not taken for an edit.
    async with node.http() as h:
        r = await h.post(
            "/agentmemory/remember",
            json={"content": "the product images are served from the cdn bucket shop-assets-eu"},
        )
        m2b = r.json()["memory"]["id"]
        assert r.json()["supersededId"] == m2
    fourth = await sync(node)
    assert (fourth["imported"], fourth["updated"]) == (0, 0)
    text = path.read_text()
    assert markdown.mark(m2b) in text and markdown.mark(m2) not in text
    async with node.http() as h:
        read = (await h.get("/agentmemory/claude-bridge/read")).json()
        assert read["content"] == text and "Notes" in read["sections"]
        assert read["imported"] == 0 and read["updated"] == 0
        ids = [m["id"] for m in (await h.get("/agentmemory/memories")).json()["memories"]]
        assert len(ids) == len(set(ids))
        contents = [m["content"] for m in (await h.get("/agentmemory/memories")).json()["memories"]]
        assert contents.count("use uv for virtualenvs") == 1
        tool = await h.post(
            "/agentmemory/mcp/call",
            json={"name": "memory_claude_bridge_sync", "arguments": {"direction": "write"}},
        )
        assert tool.status_code == 200 and "written" in tool.text


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
async def test_scanning_git_log_links_commits_to_the_sessions_behind_them(
    node: Node, tmp_path: Path
) -> None:
    repo = tmp_path / "shop"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "README.md").write_text("shop\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "long ago", when="2001-01-01T00:00:00Z")
    sid = f"scan-{int(time.time())}"
    async with node.http() as h:
        r = await h.post(
            "/agentmemory/session/start",
            json={"sessionId": sid, "project": "shop", "cwd": str(repo)},
        )
        assert r.status_code == 200, r.text
        obs = await h.post(
            "/agentmemory/observe",
            json={
                "hookType": "post_tool_use",
                "sessionId": sid,
                "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "project": "shop",
                "cwd": str(repo),
                "data": {
                    "tool_name": "Edit",
                    "tool_input": {"file_path": str(repo / "cart.py"), "new_string": "TOTAL"},
                },
            },
        )
        oid = obs.json()["observationId"]
    (repo / "cart.py").write_text("TOTAL = 0\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "cart: totals")
    sha = git(repo, "rev-parse", "HEAD")
    old = git(repo, "rev-parse", "HEAD~1")
    async with node.http() as h:
        r = await h.post("/agentmemory/commits/scan", json={"path": str(repo / "src-missing")})
        assert r.status_code == 404 and r.json()["error"]["field"] == "path"
        r = await h.post("/agentmemory/commits/scan", json={"path": str(tmp_path)})
        assert r.status_code == 404 and "git work tree" in r.text
        r = await h.post("/agentmemory/commits/scan", json={"path": str(repo)})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["scanned"] == 2 and body["linked"] == 1
        assert [c["sha"] for c in body["commits"]] == [sha]
        got = (await h.get("/agentmemory/session/by-commit", params={"sha": sha})).json()
        assert [s["id"] for s in got["sessions"]] == [sid]
        assert [o["id"] for o in got["observations"]] == [oid]
        assert got["commit"]["files"] == ["cart.py"] and got["commit"]["branch"] == "main"
        none = await h.get("/agentmemory/session/by-commit", params={"sha": old})
        assert none.status_code == 404


async def test_paths_and_times_that_cannot_be_used_are_refused_naming_the_field(
    node: Node,
) -> None:
    async with node.http() as h:
        for path in ("0" * 4096, "~no-such-user-zz/shop"):  # too long for the OS; no such home
            r = await h.post("/agentmemory/commits/scan", json={"path": path})
            assert r.status_code == 404 and r.json()["error"]["field"] == "path", r.text
        r = await h.post("/agentmemory/claude-bridge/sync", json={"projectPath": "x" * 300})
        assert r.status_code == 422 and r.json()["error"]["field"] == "projectPath", r.text
        r = await h.get("/agentmemory/claude-bridge/read", params={"projectPath": ".."})
        assert r.status_code == 422 and r.json()["error"]["field"] == "projectPath", r.text
        blocked = node.home / ".claude" / "projects" / "-blocked"
        (blocked / "memory" / "MEMORY.md").mkdir(parents=True)  # a directory, not a file
        r = await h.post("/agentmemory/claude-bridge/sync", json={"projectPath": "/blocked"})
        assert r.status_code == 422 and "cannot read" in r.text, r.text
        r = await h.get("/agentmemory/mesh/export", params={"since": ""})
        assert r.status_code == 400 and r.json()["error"]["field"] == "since", r.text
        r = await h.get("/agentmemory/mesh/export", params={"since": "2001-01-01T00:00:00Z"})
        assert r.status_code == 200 and r.json()["origin"] == "local", r.text
