"""Git snapshots on the product stack: snapshot, change, restore gives the snapshot's state
(every bucket it holds, record for record, and what search finds); the repository's git log
has one commit per snapshot (none for a snapshot of an unchanged state); a diff says which
records changed; unknown snapshots are 404s naming the field."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from functions.snapshots import state
from tests.fixtures import eventually
from tests.team.mesh import Node, start_node, stop

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    n = start_node(tmp_path_factory.mktemp("snap"), "solo", None, [])
    try:
        yield n
    finally:
        stop(n)


def repo(node: Node) -> Path:
    return node.engine.data_dir / "snapshots"


def git(node: Node, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo(node), capture_output=True, text=True, check=True
    ).stdout


async def remember(node: Node, content: str) -> str:
    async with node.http() as h:
        r = await h.post("/agentmemory/remember", json={"content": content})
        assert r.status_code == 201, r.text
        return str(r.json()["memory"]["id"])


async def observe(node: Node, session: str, command: str) -> str:
    async with node.http() as h:
        r = await h.post(
            "/agentmemory/observe",
            json={
                "hookType": "post_tool_use",
                "sessionId": session,
                "timestamp": "2026-12-01T09:00:00Z",
                "project": "snap",
                "data": {"tool_name": "Bash", "tool_input": {"command": command}},
            },
        )
        assert r.status_code == 201, r.text
        oid = str(r.json()["observationId"])

    async def counted() -> bool:
        # The session's observation count is added a few seconds later (the memory worker's
        # flush): a snapshot before it would hold a session record that is about to change.
        async with node.http() as h:
            got = (await h.get("/agentmemory/sessions")).json()["sessions"]
        return any(s["id"] == session and s["observationCount"] >= 1 for s in got)

    await eventually(counted, timeout=30, what=f"the count of {session}")
    return oid


async def snapshot(node: Node, message: str = "") -> dict[str, Any]:
    async with node.http() as h:
        r = await h.post("/agentmemory/snapshot/create", json={"message": message})
        assert r.status_code == 201, r.text
        return r.json()  # type: ignore[no-any-return]


async def current(node: Node, bucket: str) -> state.Records:
    client = await node.engine.client()
    try:
        return await state.read(client, bucket)
    finally:
        await client.nc.close()


async def searched(node: Node, query: str) -> str:
    async with node.http() as h:
        return (await h.post("/agentmemory/search", json={"query": query, "limit": 50})).text


async def test_snapshot_change_restore_gives_the_snapshots_state(node: Node) -> None:
    m1 = await remember(node, "the nightly backup runs at two via borgmatic")
    m2 = await remember(node, "lint runs with ruff in strict mode")
    o1 = await observe(node, "snap-s1", "borgmatic --verbosity 1")
    first = await snapshot(node, "before the change")
    assert first["unchanged"] is False and first["snapshot"]["message"] == "before the change"
    s1 = first["snapshot"]["commitHash"]
    again = await snapshot(node)
    assert again["unchanged"] is True and again["snapshot"]["commitHash"] == s1

    async with node.http() as h:
        assert (await h.post("/agentmemory/forget", json={"memoryId": m1})).json()["deleted"]
    m3 = await remember(node, "deploys go out through argo rollouts canary")
    o2 = await observe(node, "snap-s2", "argo rollouts promote web")
    s2 = (await snapshot(node, "after the change"))["snapshot"]["commitHash"]
    assert s2 != s1

    async with node.http() as h:
        diff = (await h.get("/agentmemory/snapshot/diff", params={"to": s2, "from": s1})).json()
    mem = diff["buckets"]["mem_memories"]
    assert mem["addedIds"] == [m3] and mem["removedIds"] == [m1]
    assert diff["buckets"]["mem_observations"]["addedIds"] == [o2]

    async with node.http() as h:
        r = await h.post("/agentmemory/snapshot/restore", json={"commitHash": s1[:10]})
        assert r.status_code == 200, r.text
        assert r.json()["commitHash"] == s1
    for bucket in state.BUCKETS:
        shown = git(node, "show", f"{s1}:{state.file_of(bucket)}").encode()
        assert await current(node, bucket) == state.decode(shown), bucket
    async with node.http() as h:
        ids = {m["id"] for m in (await h.get("/agentmemory/memories")).json()["memories"]}
        assert {m1, m2} <= ids and m3 not in ids
        assert (await h.get(f"/agentmemory/observations/{o2}")).status_code == 404
        assert (await h.get(f"/agentmemory/observations/{o1}")).status_code == 200

    async def indexed() -> bool:
        text = await searched(node, "nightly backup borgmatic")
        return m1 in text and m3 not in await searched(node, "argo rollouts canary")

    await eventually(indexed, timeout=10, what="search following the restore")
    # One commit per snapshot taken; the list says the same, newest first.
    assert git(node, "rev-list", "--count", "HEAD").strip() == "2"
    async with node.http() as h:
        listed = (await h.get("/agentmemory/snapshots")).json()["snapshots"]
    assert [s["commitHash"] for s in listed] == [s2, s1]
    assert listed[1]["stats"]["memories"] == len(state.decode(
        git(node, "show", f"{s1}:mem_memories.jsonl").encode()
    ))  # fmt: skip
    assert msgspec.json.decode(git(node, "show", f"{s1}:meta.json"))["format"] == state.FORMAT


async def test_unknown_or_malformed_snapshots_are_refused_naming_the_field(node: Node) -> None:
    async with node.http() as h:
        r = await h.post("/agentmemory/snapshot/restore", json={"commitHash": "deadbeef"})
        assert r.status_code == 404 and r.json()["error"]["field"] == "commitHash"
        r = await h.post("/agentmemory/snapshot/restore", json={"commitHash": "not-a-hash"})
        assert r.status_code == 400 and "commitHash" in r.text
        r = await h.post("/agentmemory/snapshot/restore", json={})
        assert r.status_code == 400 and "commitHash" in r.text
        r = await h.get("/agentmemory/snapshot/diff", params={"to": "abcdef1"})
        assert r.status_code == 404 and r.json()["error"]["field"] == "to"
