"""Three NATS nodes and three simulated hosts on loopback, as one thing to start, fault and
stop.

Host k is instance k of the product's layout anchored at `anchor`: its port block is
anchor + 100 × k (REST at +0, console at +3), its NATS node listens on the block's own
`nats` and `nats_monitor` ports (+4, +5) and routes on +6, as it would on a real machine.
Under `root`: `credentials.json` (0600, one user for clients and routes), `nats/node-k`
(node stores and logs) and `host-k/` (the host's data dir, generated `engine.yaml`, log).
"""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from engine.server import ensure_credentials
from engine.settings import environ
from ops.cluster.hosts import Host
from ops.cluster.nodes import NatsCluster, NodePorts

ROOT = Path(__file__).resolve().parents[2]
HOST_CONFIG = ROOT / "ops" / "deploy" / "engine.yaml"
"""The config of one cluster host; `nats.url` and `nats.credentials` are filled in per cluster."""
HOSTS = 3
BLOCK = 7
"""Ports of one host: the layout's six and the NATS route port."""


def block_is_free(anchor: int, hosts: int = HOSTS) -> bool:
    for k in range(hosts):
        for i in range(BLOCK):
            with socket.socket() as s:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    s.bind(("127.0.0.1", anchor + 100 * k + i))
                except OSError:
                    return False
    return True


def free_anchor(hosts: int = HOSTS) -> int:
    """An anchor in 20000-29000 whose blocks for `hosts` hosts are all free now."""
    import random

    for _ in range(200):
        anchor = random.randrange(20000, 29000 - 100 * hosts)
        if block_is_free(anchor, hosts):
            return anchor
    raise RuntimeError("no free port blocks on loopback")


def start_on_free_ports(root: Path, env: dict[str, str], attempts: int = 3) -> Cluster:
    """A started cluster on free port blocks (tests, benchmarks): another process on the
    machine may take a port between the check and the bind, so a failed start is tried
    again on other blocks, from a fresh data dir."""
    import shutil

    for attempt in range(attempts):
        where = root / f"try-{attempt}"
        try:
            return Cluster(where, anchor=free_anchor(), env=env).start()
        except Exception:
            if attempt == attempts - 1:
                raise
            shutil.rmtree(where, ignore_errors=True)
    raise AssertionError("unreachable")


class Cluster:
    def __init__(
        self,
        root: Path,
        *,
        anchor: int = 3111,
        hosts: int = HOSTS,
        config: Path = HOST_CONFIG,
        env: dict[str, str] | None = None,
        addresses: list[str] | None = None,
        wraps: list[list[str]] | None = None,
    ) -> None:
        """`addresses`/`wraps`: host k and node k share address k and command prefix k (a
        machine of their own in a network namespace, ops/netns.py); default loopback."""
        self.root = root
        self.anchor = anchor
        self.config_template = config
        root.mkdir(parents=True, exist_ok=True)
        os.chmod(root, 0o700)
        self.credentials = root / "credentials.json"
        user, password = ensure_credentials(self.credentials)
        ports = [
            NodePorts(anchor + 100 * k + 4, anchor + 100 * k + 5, anchor + 100 * k + 6)
            for k in range(hosts)
        ]
        self.nats = NatsCluster(
            root / "nats", ports, user=user, password=password, addresses=addresses, wraps=wraps
        )
        base_env = environ(PYTHONPATH=str(ROOT))
        base_env.update(env or {})
        self.hosts = [
            Host(
                k,
                root / f"host-{k}",
                root / f"host-{k}" / "engine.yaml",
                anchor,
                base_env,
                address=addresses[k] if addresses else "127.0.0.1",
                wrap=wraps[k] if wraps else None,
            )
            for k in range(hosts)
        ]

    # ---- configuration ---------------------------------------------------------------
    def host_config(self) -> dict[str, Any]:
        """The template with this cluster's NATS URL and credentials filled in."""
        cfg: dict[str, Any] = yaml.safe_load(self.config_template.read_text())
        cfg.setdefault("nats", {})
        cfg["nats"]["url"] = self.nats.url
        cfg["nats"]["credentials"] = str(self.credentials)
        cfg["nats"].setdefault("replicas", 3)
        return cfg

    def write_configs(self) -> None:
        text = yaml.safe_dump(self.host_config(), sort_keys=False)
        for h in self.hosts:
            h.home.mkdir(parents=True, exist_ok=True)
            h.config.write_text(text)

    # ---- start / stop ----------------------------------------------------------------
    def start(self, timeout: float = 180.0) -> Cluster:
        try:
            self.nats.start()
            self.write_configs()
            self.start_hosts(range(len(self.hosts)), timeout)
        except BaseException:
            self.kill()
            raise
        return self

    def start_hosts(self, which: range | list[int], timeout: float = 180.0) -> dict[int, float]:
        """Start hosts together; seconds each took to be ready."""
        took: dict[int, float] = {}
        errors: list[BaseException] = []

        def one(k: int) -> None:
            try:
                took[k] = self.hosts[k].start(timeout)
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=one, args=(k,)) for k in which]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        return took

    def kill_host(self, k: int) -> None:
        """Host k loses power: its engine processes and its NATS node, all at once."""
        node = self.nats.nodes[k]
        if node.proc is not None and node.running():
            os.kill(node.proc.pid, 19)  # SIGSTOP: frozen with the others, then killed
        self.hosts[k].kill()
        self.nats.kill_node(k)

    def restart_host(self, k: int, timeout: float = 180.0) -> float:
        """Node first, then the engine, on the data they had; seconds until both serve."""
        t0 = time.monotonic()
        self.nats.start_node(k)
        self.hosts[k].start(timeout)
        return time.monotonic() - t0

    def stop(self) -> None:
        """Hosts drain (in parallel), then the nodes stop."""
        threads = [threading.Thread(target=h.stop) for h in self.hosts]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.nats.stop()

    def kill(self) -> None:
        for h in self.hosts:
            h.kill()
        self.nats.kill()

    def describe(self) -> str:
        lines = [f"cluster under {self.root}", f"  NATS {self.nats.url}"]
        for h in self.hosts:
            lines.append(
                f"  {h.name}: REST {h.rest_url}  console http://127.0.0.1:{h.port(3)}  "
                f"data {h.data_dir}"
            )
        return "\n".join(lines)
