"""Team sync that tells the truth, on two real stacks joined by a leaf link (through a
relay): an instance first run without a domain, then given one, shares both ways (its
TEAM stream is brought to its new subjects at start, and what it shared before is
announced again); a link that carries one direction only (the hub's leaf user may no
longer publish the sourced messages, as an operator's permission change would do) makes
`mesh/sync` say not converged on both sides, each with the reason, and converged again
once the permission is back."""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ops.tcp_relay import Relay
from tests.fixtures import eventually
from tests.team.mesh import SECRET, Node, config, converged, start_hub, start_node, stop

pytestmark = pytest.mark.timeout(400)


class Pair:
    def __init__(self, a: Node, b: Node, relay: Relay, shared_before: str) -> None:
        self.a, self.b, self.relay, self.shared_before = a, b, relay, shared_before


async def remember_and_share(node: Node, content: str) -> str:
    async with node.http() as h:
        r = await h.post("/agentmemory/remember", json={"content": content})
        assert r.status_code == 201, r.text
        mid = str(r.json()["memory"]["id"])
        r = await h.post("/agentmemory/team/share", json={"itemId": mid, "itemType": "memory"})
        assert r.status_code == 201, r.text
    return mid


async def has(node: Node, memory_id: str) -> bool:
    async with node.http() as h:
        return (await h.get(f"/agentmemory/memories/{memory_id}")).status_code == 200


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    tmp = tmp_path_factory.mktemp("truth")
    a, leaf_port = start_hub(tmp, ["b"])
    relay = Relay(leaf_port).start()
    b = start_node(tmp, "b", None, [])  # no domain yet: its TEAM stream is team.log.local.>
    try:
        before = asyncio.run(
            remember_and_share(b, f"shared before b had a name {secrets.token_hex(3)}")
        )
        b.engine.stop(30)
        creds = a.engine.data_dir / "nats" / "leaf-credentials.json"
        remote = {"url": f"nats-leaf://127.0.0.1:{relay.port}", "credentials": str(creds)}
        b.engine.config.write_text(config(b.home, "b", {"remotes": [remote]}, ["a"]))
        b.engine.start(timeout=180)
        yield Pair(a, b, relay, before)
    finally:
        relay.close()
        stop(b, a)


async def test_an_instance_given_a_domain_later_shares_both_ways(pair: Pair) -> None:
    a, b = pair.a, pair.b
    await converged(a, b, timeout=90)
    from_b = await remember_and_share(b, f"the queue retries after 30 s {secrets.token_hex(3)}")
    from_a = await remember_and_share(a, f"the cache is warmed at boot {secrets.token_hex(3)}")
    await eventually(lambda: has(a, from_b), timeout=10, what="b's share on a")
    await eventually(lambda: has(b, from_a), timeout=10, what="a's share on b")
    # What b shared while it had no domain was announced again under its name.
    await eventually(lambda: has(a, pair.shared_before), timeout=10, what="b's earlier share")
    async with a.http() as h:
        feed = (await h.get("/agentmemory/team/feed", params={"limit": 100})).json()["items"]
    origins = {i["itemId"]: i["origin"] for i in feed}
    assert origins[pair.shared_before] == "b" and origins[from_b] == "b"
    client = await b.engine.client()
    try:
        assert await client.stream("TEAM").stored_subjects() == ["team.log.b.>"]
    finally:
        await client.nc.close()
    # `agentmemory status` tells the link as mesh/peers does: the peer, its state, the trip.
    await converged(a, b, timeout=30)
    env = {**os.environ, "AGENTMEMORY_SECRET": SECRET}
    shown = subprocess.run(
        [sys.executable, "-m", "workers.cli", "status", "--url", b.url],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stdout + shown.stderr
    [team] = [line for line in shown.stdout.splitlines() if line.startswith("team")]
    assert "b in team" in team and re.search(r"\ba (connected|syncing)\b", team), shown.stdout


def _nats_pid(conf: Path) -> int:
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if str(conf) in (p / "cmdline").read_bytes().decode(errors="replace"):
                    return int(p.name)
            except OSError:
                continue
    raise AssertionError(f"no nats-server runs {conf}")


def _reload(node: Node, relay: Relay, text: str) -> None:
    """Write the hub's server config and reload it; the leaf link is dropped and made again
    (through the relay) so that the new permissions apply to it."""
    conf = node.engine.data_dir / "nats" / "nats-server.conf"
    conf.write_text(text)
    os.kill(_nats_pid(conf), signal.SIGHUP)
    relay.cut()
    relay.restore()


async def sync(node: Node, wait: float = 5.0) -> dict[str, Any]:
    async with node.http() as h:
        r = await h.post("/agentmemory/mesh/sync", json={"waitSeconds": wait})
        assert r.status_code == 200, r.text
        got: dict[str, Any] = r.json()
        return got


async def test_a_link_carrying_one_direction_is_not_converged_and_says_why(pair: Pair) -> None:
    a, b = pair.a, pair.b
    await converged(a, b, timeout=90)
    conf = a.engine.data_dir / "nats" / "nats-server.conf"
    original = conf.read_text()
    leaf_user = re.search(r"\{user: \"leaf\".*publish: \{allow: \[(.*?)\]\}", original)
    assert leaf_user and '"$JS.S.>"' in leaf_user.group(1)
    # b may no longer send a the messages a copies from b's TEAM stream: b -> a is cut,
    # a -> b still works.
    _reload(a, pair.relay, original.replace('"$JS.S.>", ', "", 1))
    try:
        from_b = await remember_and_share(b, f"never reaches a {secrets.token_hex(3)}")

        async def both_say_why() -> bool:
            sa = await sync(a)  # a's probe reaches b; b's echo does not come back
            sb = await sync(b)  # b's probe never reaches a; a's probes do reach b
            return (
                not sa["converged"]
                and not sb["converged"]
                and bool(sb["results"][0]["errors"])
                and "does not get what this instance writes" in sb["results"][0]["errors"][0]
            )

        await eventually(both_say_why, timeout=60, interval=1, what="both sides not converged")
        sa, sb = await sync(a), await sync(b)
        [ra], [rb] = sa["results"], sb["results"]
        assert ra["peerId"] == "b" and ra["roundTripMs"] is None and "b" in ra["errors"][0]
        assert rb["peerId"] == "a" and rb["roundTripMs"] is None
        assert "a does not get what this instance writes" in rb["errors"][0]
        assert not await has(a, from_b)
        async with b.http() as h:
            peers = (await h.get("/agentmemory/mesh/peers")).json()["peers"]
        assert peers[0]["heardSeconds"] is not None and peers[0]["reason"]
    finally:
        _reload(a, pair.relay, original)
    await converged(a, b, timeout=90)
    await eventually(lambda: has(a, from_b), timeout=20, what="b's share once the link is whole")
    s = await sync(b)
    assert s["converged"] and s["results"][0]["roundTripMs"] is not None
