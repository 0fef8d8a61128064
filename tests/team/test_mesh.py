"""Two instances on loopback, each its own data dir, NATS server and JetStream domain, joined
by one leaf link (through a relay the tests cut): what is shared on one is searchable on the
other within 2 s; a private record never reaches the other's storage; cut the link, write,
edit and forget on both sides, restore it, and both hold the same team records, with no
loss and no duplicate; a peer that was stopped catches up; replaying the log changes
nothing."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ops.tcp_relay import Relay
from tests.fixtures import eventually
from tests.team.mesh import Node, converged, start_hub, start_node, start_spoke, stop

pytestmark = pytest.mark.timeout(300)


class Mesh:
    def __init__(self, a: Node, b: Node, relay: Relay, leaf_port: int) -> None:
        self.a, self.b, self.relay, self.leaf_port = a, b, relay, leaf_port


@pytest.fixture(scope="module")
def mesh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mesh]:
    tmp = tmp_path_factory.mktemp("mesh")
    a, leaf_port = start_hub(tmp, ["b"])
    relay = Relay(leaf_port).start()
    # b also takes scheduled snapshots (cron), every 2 s while its state changes.
    b = start_spoke(tmp, "b", a, relay, ["a"], SNAPSHOT_ENABLED="true", SNAPSHOT_INTERVAL="2")
    try:
        yield Mesh(a, b, relay, leaf_port)
    finally:
        relay.close()
        stop(b, a)


async def remember(node: Node, content: str, **extra: Any) -> str:
    async with node.http() as h:
        r = await h.post("/agentmemory/remember", json={"content": content, **extra})
        assert r.status_code == 201, r.text
        return str(r.json()["memory"]["id"])


async def share(node: Node, item_id: str, item_type: str = "memory") -> dict[str, Any]:
    async with node.http() as h:
        r = await h.post("/agentmemory/team/share", json={"itemId": item_id, "itemType": item_type})
        assert r.status_code == 201, r.text
        return r.json()["sharedItem"]  # type: ignore[no-any-return]


async def found(node: Node, query: str, record_id: str) -> bool:
    async with node.http() as h:
        r = await h.post("/agentmemory/search", json={"query": query, "limit": 20})
        return r.status_code == 200 and record_id in r.text


async def team_state(node: Node) -> tuple[list[str], list[str]]:
    """(ids of the live shared memories, ids of the team feed), each sorted."""
    async with node.http() as h:
        mems = (await h.get("/agentmemory/memories", params={"limit": 10_000})).json()
        feed = (await h.get("/agentmemory/team/feed", params={"limit": 500})).json()
    live = sorted(m["id"] for m in mems["memories"] if m["team"])
    items = [i["itemId"] for i in feed["items"]]
    assert len(items) == len(set(items)) == feed["total"]  # one item per record
    return live, sorted(items)


async def test_a_shared_record_is_searchable_on_the_peer_within_two_seconds(mesh: Mesh) -> None:
    await converged(mesh.a, mesh.b)
    word = "zq" + secrets.token_hex(4)
    mid = await remember(mesh.a, f"the release checklist lives in docs/release {word}")
    item = await share(mesh.a, mid)
    assert item["origin"] == "a" and item["sharedBy"] == "dev-a" and item["team"] == "dev-team"
    await eventually(lambda: found(mesh.b, word, mid), timeout=2.0, interval=0.02, what="on b")
    async with mesh.b.http() as h:
        got = (await h.get(f"/agentmemory/memories/{mid}")).json()["memory"]
        feed = (await h.get("/agentmemory/team/feed")).json()
        profile = (await h.get("/agentmemory/team/profile")).json()
    assert got["instance"] == "a" and got["team"] == "dev-team"
    assert mid in [i["itemId"] for i in feed["items"]]
    assert "dev-a" in profile["members"] and profile["teamId"] == "dev-team"
    # Sharing again is the same item.
    async with mesh.a.http() as h:
        again = await h.post("/agentmemory/team/share", json={"itemId": mid, "itemType": "memory"})
    assert again.json()["alreadyShared"] is True


def _grep(root: Path, needle: bytes) -> list[str]:
    hits = []
    for p in root.rglob("*"):
        if p.is_file():
            try:
                if needle in p.read_bytes():
                    hits.append(str(p.relative_to(root)))
            except OSError:
                continue
    return hits


async def test_a_private_record_is_absent_from_the_peers_raw_storage(mesh: Mesh) -> None:
    secret_word = "privzz" + secrets.token_hex(6)
    shared_word = "sharedzz" + secrets.token_hex(6)
    await remember(mesh.a, f"private note about the payroll export {secret_word}")
    async with mesh.a.http() as h:
        obs = await h.post(
            "/agentmemory/observe",
            json={
                "hookType": "post_tool_use",
                "sessionId": "private-session",
                "timestamp": "2026-12-01T10:00:00Z",
                "project": "payroll",
                "data": {"tool_name": "Bash", "tool_input": {"command": f"echo {secret_word}"}},
            },
        )
        assert obs.status_code in (200, 201), obs.text
    mid = await remember(mesh.a, f"shared note on the build cache {shared_word}")
    await share(mesh.a, mid)
    await eventually(lambda: found(mesh.b, shared_word, mid), timeout=10, what="the shared note")
    await converged(mesh.a, mesh.b)

    async def on_disk() -> bool:  # the shared one reached B's files: the grep can see
        return bool(_grep(mesh.b.engine.data_dir, shared_word.encode()))

    await eventually(on_disk, timeout=15, interval=0.5, what="the shared note on b's disk")
    assert _grep(mesh.a.engine.data_dir, secret_word.encode())  # it is stored, on a
    assert _grep(mesh.b.engine.data_dir, secret_word.encode()) == []
    assert _grep(mesh.b.home, secret_word.encode()) == []


async def test_after_a_partition_both_sides_converge_without_loss_or_duplicates(
    mesh: Mesh,
) -> None:
    a, b = mesh.a, mesh.b
    tag = secrets.token_hex(3)
    base = f"the deploy key rotates every friday through vault policy {tag}"
    m1 = await remember(a, base)
    m2 = await remember(a, f"feature flags are read from consul at boot {tag}")
    m3 = await remember(b, f"integration tests need the fake smtp server {tag}")
    m4 = await remember(b, f"the api gateway strips x-debug headers {tag}")
    for node, mid in ((a, m1), (a, m2), (b, m3), (b, m4)):
        await share(node, mid)
    await converged(a, b)
    assert await team_state(a) == await team_state(b)

    mesh.relay.cut()
    try:
        # Each side writes, edits the same shared memory (a conflict), and forgets one of
        # the other side's records.
        m5 = await remember(a, f"release notes are drafted in linear {tag}")
        await share(a, m5)
        m1a = await remember(a, base + " weekly")
        m6 = await remember(b, f"pagerduty rotation changes on mondays {tag}")
        await share(b, m6)
        m1b = await remember(b, base + " always")
        async with a.http() as h:
            assert (await h.post("/agentmemory/forget", json={"memoryId": m3})).json()["deleted"]
        async with b.http() as h:
            assert (await h.post("/agentmemory/forget", json={"memoryId": m2})).json()["deleted"]
        async with b.http() as h:
            obs = await h.post(
                "/agentmemory/observe",
                json={
                    "hookType": "post_tool_use",
                    "sessionId": f"s-{tag}",
                    "timestamp": "2026-12-01T11:00:00Z",
                    "project": "mesh",
                    "data": {"tool_name": "Bash", "tool_input": {"command": f"make ci {tag}"}},
                },
            )
            oid = obs.json()["observationId"]
        await share(b, oid, "observation")
        await asyncio.sleep(1.0)
        sa, sb = await team_state(a), await team_state(b)
        assert sa != sb  # the link is really down
    finally:
        mesh.relay.restore()

    await converged(a, b, timeout=60)
    live_a, items_a = await team_state(a)
    live_b, items_b = await team_state(b)
    assert (live_a, items_a) == (live_b, items_b)
    # Nothing lost: every record shared and not forgotten is there, on both.
    assert {m4, m5, m6, oid} <= set(items_a)
    assert m2 not in items_a and m3 not in items_a
    # The two edits of m1 are both kept, one of them is the live version, the same on both.
    versions = {m1, m1a, m1b}
    assert versions <= set(items_a)
    live_versions = versions & set(live_a)
    assert len(live_versions) == 1
    # Forgets are forgotten on both sides.
    for node in (a, b):
        async with node.http() as h:
            for gone in (m2, m3):
                assert (await h.get(f"/agentmemory/memories/{gone}")).status_code == 404
            (head,) = live_versions
            loser = (versions - {head, m1}).pop()
            chain = (await h.get(f"/agentmemory/memories/{loser}")).json()["memory"]
            assert chain["supersededBy"] == head
            # The two edits are a conflict: both kept and listed, the memory flagged.
            got = (await h.get("/agentmemory/team/chain", params={"memoryId": m1})).json()
            assert got["conflict"] is True and got["head"] == head
            assert sorted(got["competing"]) == sorted([head, loser])
            shown = (await h.get(f"/agentmemory/memories/{head}")).json()
            assert shown["memory"]["conflict"] is True
            assert loser in [v["id"] for v in shown["versions"]]
    # Resolving on one side keeps the chosen one as head, on both.
    async with b.http() as h:
        r = await h.post("/agentmemory/team/resolve", json={"memoryId": loser})
        assert r.status_code == 200, r.text
        assert r.json()["head"] == loser and r.json()["over"] == [head]
    await converged(a, b, timeout=60)

    async def resolved(node: Node) -> bool:
        async with node.http() as h:
            got = (await h.get("/agentmemory/team/chain", params={"memoryId": m1})).json()
            kept = (await h.get(f"/agentmemory/memories/{loser}")).json()
        return (
            got["head"] == loser
            and got["conflict"] is False
            and kept["memory"].get("supersededBy") is None
            and kept["memory"].get("conflict", False) is False
            and head in [v["id"] for v in kept["versions"]]
        )

    for node in (a, b):
        await eventually(
            lambda node=node: resolved(node), timeout=10, what=f"resolved on {node.name}"
        )
        async with node.http() as h:
            old = (await h.get(f"/agentmemory/memories/{head}")).json()["memory"]
            assert old["supersededBy"] == loser
    assert (await team_state(a))[0] == (await team_state(b))[0]


async def test_a_stopped_peer_catches_up_when_it_is_back(mesh: Mesh) -> None:
    a, b = mesh.a, mesh.b
    await converged(a, b)
    b.engine.stop(30)
    tag = secrets.token_hex(3)
    shared = [
        await remember(a, f"catch up note {i} about the queue workers {tag}") for i in range(5)
    ]
    for mid in shared:
        await share(a, mid)
    async with a.http() as h:
        await h.post("/agentmemory/forget", json={"memoryId": shared[0]})
    b.engine.start(timeout=180)
    await converged(a, b, timeout=90)
    live_b, items_b = await team_state(b)
    assert set(shared[1:]) <= set(items_b) and shared[0] not in items_b
    assert await team_state(a) == (live_b, items_b)


async def test_replaying_the_team_log_changes_nothing(mesh: Mesh) -> None:
    a, b = mesh.a, mesh.b
    await converged(a, b)
    before = await team_state(b)
    client = await b.engine.client()
    try:
        stream = client.stream("TEAM")
        replayed = 0
        async for msg in stream.read():
            reply = await client.call(
                "mem::team-apply",
                msg.data,
                headers={"Stream-Subject": msg.subject, "Stream-Seq": str(msg.seq)},
            )
            # The mesh's heartbeat (a probe every 15 s, its echo; the stream keeps the latest
            # of each) can land during the replay, before the live applier took it: answering
            # it then is the link at work, not a change of state (failed so under load).
            tail = msg.subject.rsplit(".", 1)[-1]
            beat = ("echoed", "round trip") if tail == "probe" or tail.startswith("echo-") else ()
            assert reply["outcome"] in ("own", "duplicate", "gone", *beat), (msg.subject, reply)
            replayed += 1
        assert replayed > 5
    finally:
        await client.nc.close()
    assert await team_state(b) == before


async def test_scheduled_snapshots_are_taken_by_cron(mesh: Mesh) -> None:
    async def scheduled() -> list[dict[str, Any]]:
        async with mesh.b.http() as h:
            snaps = (await h.get("/agentmemory/snapshots")).json()["snapshots"]
        return [s for s in snaps if s["message"].startswith("Scheduled snapshot")]

    first = await eventually(scheduled, timeout=20, interval=0.5, what="a scheduled snapshot")
    await remember(mesh.b, f"a change for the next scheduled snapshot {secrets.token_hex(3)}")

    async def another() -> bool:
        return len(await scheduled()) > len(first)

    await eventually(another, timeout=20, interval=0.5, what="the next scheduled snapshot")


async def test_a_third_member_joins_the_hub_and_shares_with_the_other_spoke(
    mesh: Mesh, tmp_path: Path
) -> None:
    """A team of three is a tree: c links to the hub a, as b does; b and c source each
    other's TEAM streams through a (their JetStream API requests are routed by the hub).
    The first two learn of c by `POST mesh/peers`, as docs/TEAM.md tells."""
    a, b = mesh.a, mesh.b
    creds = a.engine.data_dir / "nats" / "leaf-credentials.json"
    remote = {"url": f"nats-leaf://127.0.0.1:{mesh.leaf_port}", "credentials": str(creds)}
    c = start_node(tmp_path, "c", {"remotes": [remote]}, ["a", "b"])
    try:
        for n in (a, b):
            async with n.http() as h:
                r = await h.post("/agentmemory/mesh/peers", json={"name": "c", "url": c.url})
                assert r.status_code == 201, r.text
                assert r.json()["peer"]["name"] == "c"
        await converged(a, b, c, timeout=60)
        word = "trio" + secrets.token_hex(4)
        from_c = await remember(c, f"the on-call rota is in the wiki {word}")
        await share(c, from_c)
        from_b = await remember(b, f"feature flags are read at startup {word}")
        await share(b, from_b)
        await eventually(lambda: found(b, word, from_c), timeout=10, what="c's note on b")
        await eventually(lambda: found(c, word, from_b), timeout=10, what="b's note on c")
        await eventually(lambda: found(a, word, from_c), timeout=10, what="c's note on a")
        await converged(a, b, c, timeout=60)

        async def same() -> bool:
            # The probe's round trip proves both directions carry; an apply that a busy
            # memory worker answered late is retried after it, so the states are compared
            # until they agree (a lasting difference still fails, naming it).
            states = [await team_state(n) for n in (a, b, c)]
            if states[0] == states[1] == states[2]:
                return True
            live = [set(s[0]) for s in states]
            odd = sorted(set().union(*(live[i] ^ live[0] for i in (1, 2))))
            print("live differs:", [sorted(live[i] ^ live[0]) for i in (1, 2)])
            for n in (a, b, c):  # what each holds of the records that differ
                async with n.http() as h:
                    for rid in odd:
                        got = (await h.get(f"/agentmemory/memories/{rid}")).json()
                        m = got.get("memory") or {}
                        print(n.name, rid, {k: m.get(k) for k in (
                            "supersededBy", "supersedes", "conflict", "team", "isLatest",
                            "version")})  # fmt: skip
            return False

        await eventually(same, timeout=30, interval=1, what="one team state on a, b and c")
    finally:
        stop(c)
