"""mesh/peers and mesh/sync with an upstream-style HTTP peer: on an instance without a
JetStream domain, a peer registered by `url` is synced over REST as upstream's mesh does
(push to its mesh/receive, pull its mesh/export since the last good sync, Bearer
AGENTMEMORY_SECRET). Two real instances: each its own nats-server, memory and team workers;
the peer also its http trigger."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine import Client, FunctionError, connect
from engine.server import NatsServer
from functions.team.http_peer import check_url
from tests.fixtures import eventually, free_port

SECRET = "http-mesh-secret"


def env(home: Path, user: str) -> dict[str, str]:
    return {"HOME": str(home), "AGENTMEMORY_INBOX_DIR": str(home / "inbox"),
            "AGENTMEMORY_SEARCH": "off", "TEAM_ID": "dev", "USER_ID": user,
            "AGENTMEMORY_SECRET": SECRET, "AGENTMEMORY_MESH_ALLOW_PRIVATE": "true"}  # fmt: skip


async def remember_shared(c: Client, text: str) -> str:
    mid = str((await c.call("mem::remember", {"content": text}))["memory"]["id"])
    await c.call("mem::team-share", {"itemId": mid, "itemType": "memory"})
    return mid


async def test_an_http_peer_is_pushed_to_and_pulled_from(
    client: Client, spawn: Any, tmp_path: Path
) -> None:
    b_server = NatsServer(store_dir=tmp_path / "js-b").start()
    try:
        port = free_port()
        b_env = {**env(tmp_path / "b", "bob"), "ENGINE_NATS_URL": b_server.url}
        spawn("workers.memory", env=b_env)
        spawn("workers.team", env=b_env)
        # http for its REST routes; stream for the team's own triggers (a forget shared)
        spawn("workers.trigger_plugins", "http", "stream",
              env={**b_env, "AGENTMEMORY_REST_PORT": str(port)})  # fmt: skip
        a_env = env(tmp_path / "a", "alice")
        spawn("workers.memory", env=a_env)
        spawn("workers.team", env=a_env)
        b = Client(await connect(b_server.url))
        try:
            await run(client, b, port)
        finally:
            await b.nc.close()
    finally:
        b_server.kill()


async def run(a: Client, b: Client, port: int) -> None:
    mine = await remember_shared(a, "the deploy script needs the staging profile")
    theirs = await remember_shared(b, "bob pins numpy below 3 in the ml image")

    reg = await a.call("mem::mesh-register", {"name": "bob", "url": f"http://127.0.0.1:{port}/"})
    assert reg["peer"]["url"] == f"http://127.0.0.1:{port}"
    assert reg["peer"]["status"] == "disconnected"  # no sync yet

    out = await a.call("mem::mesh-sync", {}, timeout=120)
    (res,) = out["results"]
    assert res["peerId"] == "bob" and res["errors"] == [] and res["status"] == "connected"
    assert res["pushed"] == 1 and res["pulled"] == 1 and out["converged"] is True
    got_there = await b.call("mem::memory", {"id": mine})  # pushed to its mesh/receive
    assert "staging profile" in got_there["memory"]["content"]
    got_here = await a.call("mem::memory", {"id": theirs})  # pulled from its mesh/export
    assert "numpy below 3" in got_here["memory"]["content"]

    (peer,) = (await a.call("mem::mesh-list", {}))["peers"]
    assert peer["status"] == "connected" and peer["lastSeenSeconds"] is not None

    again = (await a.call("mem::mesh-sync", {}, timeout=120))["results"][0]
    assert (again["pushed"], again["pulled"]) == (0, 0)  # nothing changed since the last sync

    # the peer forgets its record: the next sync forgets it here too
    await b.call("mem::forget", {"memoryId": theirs})

    async def forgotten_there() -> bool:
        got = await b.call("mem::mesh-export", {})
        return theirs in got["forgotten"]

    await eventually(forgotten_there, what="the forget in the peer's export")
    await a.call("mem::mesh-sync", {}, timeout=120)
    with pytest.raises(FunctionError) as gone:
        await a.call("mem::memory", {"id": theirs})
    assert gone.value.code == "NOT_FOUND"

    # a peer that does not answer: the sync says so, the peer is in error
    await a.call("mem::mesh-register", {"name": "gone", "url": f"http://127.0.0.1:{free_port()}"})
    out = await a.call("mem::mesh-sync", {"peerId": "gone"}, timeout=120)
    (res,) = out["results"]
    assert res["status"] == "error" and res["errors"] and out["converged"] is False
    peers = {p["name"]: p for p in (await a.call("mem::mesh-list", {}))["peers"]}
    assert peers["gone"]["status"] == "error" and peers["gone"]["error"]

    with pytest.raises(FunctionError) as bad:
        await a.call("mem::mesh-register", {"name": "x", "url": "ftp://example.com"})
    assert bad.value.code == "UNPROCESSABLE" and bad.value.field == "url"


@pytest.mark.unit
async def test_private_and_credentialed_urls_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTMEMORY_MESH_ALLOW_PRIVATE", raising=False)
    for url in ("http://127.0.0.1:3111", "http://localhost:3111", "http://10.0.0.5",
                "https://user:pw@example.com", "file:///etc/passwd"):  # fmt: skip
        with pytest.raises(FunctionError) as bad:
            await check_url(url)
        assert bad.value.field == "url", url
    assert await check_url("https://93.184.215.14/") == "https://93.184.215.14"
