"""Two (or three) product stacks linked as a team: each its own data dir, embedded
nats-server (its own JetStream domain) and port block; the first listens for leaf links,
the others join it through a Relay that the tests cut and restore."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ops.tcp_relay import Relay
from tests.fixtures import (
    EngineProcess,
    Stack,
    eventually,
    free_port,
    product_config,
    wait_until,
)

SECRET = "mesh-test-secret"
TEAM = "dev-team"


@dataclass
class Node(Stack):
    """A product stack named as its team member (its JetStream domain when linked)."""

    name: str = ""


def config(
    home: Path, domain: str | None, leaf: dict[str, Any], peers: list[str], **env: str
) -> str:
    """config/engine.yaml as `make run` starts it, with the test's secret, home and env, and
    (with a domain) this instance's name and leaf link."""
    nats = {"domain": domain, "leafnodes": leaf} if domain else None
    return product_config(
        home,
        SECRET,
        nats,
        TEAM_ID=TEAM,
        USER_ID=f"dev-{domain or 'solo'}",
        AGENTMEMORY_MESH_PEERS=",".join(peers),
        **env,
    )


def serving(node: Node) -> bool:
    with node.rest() as h:
        rs = [h.get("/agentmemory/team/feed"), h.post("/agentmemory/search", json={"query": "x"})]
        return all(r.status_code == 200 for r in rs)


def start_node(
    tmp: Path, name: str, leaf: dict[str, Any] | None, peers: list[str], **env: str
) -> Node:
    """A product stack; with `leaf`, named `name` (its JetStream domain) and linked."""
    d = tmp / name
    home = d / "home"
    home.mkdir(parents=True)
    cfg = config(home, name if leaf is not None else None, leaf or {}, peers, **env)
    node = Node(EngineProcess(d, cfg), home, SECRET, name)
    try:
        node.engine.start(timeout=180)
        wait_until(lambda: serving(node), timeout=120, interval=0.3, what=f"stack {name}")
    except BaseException:
        node.stop()
        raise
    return node


def start_hub(tmp: Path, peers: list[str], **env: str) -> tuple[Node, int]:
    port = free_port()
    return start_node(tmp, "a", {"listen": f"127.0.0.1:{port}"}, peers, **env), port


def start_spoke(
    tmp: Path, name: str, hub: Node, relay: Relay, peers: list[str], **env: str
) -> Node:
    creds = hub.engine.data_dir / "nats" / "leaf-credentials.json"
    remote = {"url": f"nats-leaf://127.0.0.1:{relay.port}", "credentials": str(creds)}
    return start_node(tmp, name, {"remotes": [remote]}, peers, **env)


def stop(*nodes: Node) -> None:
    for n in nodes:
        n.stop()


async def converged(*nodes: Node, timeout: float = 30.0) -> float:
    """Until every node's mesh/sync says every peer is copied and applied; the seconds it
    took."""
    t0 = time.monotonic()

    async def all_done() -> bool:
        for n in nodes:
            async with n.http() as h:
                r = await h.post("/agentmemory/mesh/sync", json={"waitSeconds": 5})
                if r.status_code != 200 or not r.json()["converged"]:
                    return False
        return True

    await eventually(all_done, timeout=timeout, interval=0.2, what="the mesh converging")
    return time.monotonic() - t0
