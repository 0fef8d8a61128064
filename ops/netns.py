"""A network made of Linux network namespaces, for partition faults between the cluster's
nodes and hosts: real TCP between real processes, links that can be cut both ways or one
way, and throttled.

One hub namespace holds a bridge (198.18.0.1/24, in the benchmarking range RFC 2544 set
aside, never routed); each member k gets its own namespace joined to the bridge by a veth
pair, address 198.18.0.(10 + k). Nothing is added to the namespace this process runs in:
a driver that must reach the members runs inside the hub (`exec_argv`). Every namespace is
named `<prefix>-<pid>-…`, removed by `close()`, and leftovers of a process that is gone
are removed by the next `Lab` (a killed test leaves none behind for long).

Faults, as a network would do them to a machine:
- `cut(k)` / `heal(k)`: member k's link down (both directions);
- `blackhole(src, dst)`: src can no longer send to dst (a route in src's namespace), while
  dst's packets still reach src: a one-way cut;
- `throttle(k, rate)`: token bucket (tc tbf) both ways on k's link; this kernel has no
  netem, so delay and loss come from the bucket's queue.
Needs root and `ip`/`tc` (iproute2); `available()` says why not.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")
CLONE_NEWNET = 0x40000000


def _libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


PREFIX = "amlab"
HUB_ADDR = "198.18.0.1"
NET = 24


def _run(*argv: str, check: bool = True) -> str:
    r = subprocess.run(argv, capture_output=True, text=True, check=False)
    if check and r.returncode != 0:
        raise NetnsError(f"{' '.join(argv)}: {r.stderr.strip() or r.returncode}")
    return r.stdout


class NetnsError(RuntimeError):
    pass


def available() -> tuple[bool, str]:
    """Whether namespaces can be made here, and why not."""
    if os.geteuid() != 0:
        return False, "network namespaces need root"
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return False, f"`{tool}` (iproute2) is not installed"
    name = f"{PREFIX}-{os.getpid()}-probe"
    try:
        _run("ip", "netns", "add", name)
    except NetnsError as exc:
        return False, f"cannot make a network namespace: {exc}"
    _run("ip", "netns", "del", name, check=False)
    return True, ""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_leftovers() -> list[str]:
    """Remove namespaces of ours whose creating process is gone."""
    removed = []
    for line in _run("ip", "netns", "list", check=False).splitlines():
        name = line.split()[0] if line.strip() else ""
        parts = name.split("-")
        if len(parts) >= 3 and parts[0] == PREFIX and parts[1].isdigit():
            if not _alive(int(parts[1])):
                _kill_inside(name)
                _run("ip", "netns", "del", name, check=False)
                removed.append(name)
    return removed


def _kill_inside(ns: str) -> None:
    for pid in _run("ip", "netns", "pids", ns, check=False).split():
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), 9)


@dataclass
class Lab:
    members: int
    tag: str = "lab"
    names: list[str] = field(default_factory=list)
    _blackholes: set[tuple[int, int]] = field(default_factory=set)
    _throttled: set[int] = field(default_factory=set)

    @property
    def hub(self) -> str:
        return f"{PREFIX}-{os.getpid()}-{self.tag}-hub"

    def ns(self, k: int) -> str:
        return f"{PREFIX}-{os.getpid()}-{self.tag}-{k}"

    @staticmethod
    def addr(k: int) -> str:
        return f"198.18.0.{10 + k}"

    def _in(self, ns: str, *argv: str, check: bool = True) -> str:
        return _run("ip", "netns", "exec", ns, *argv, check=check)

    def start(self) -> Lab:
        sweep_leftovers()
        try:
            _run("ip", "netns", "add", self.hub)
            self.names.append(self.hub)
            self._in(self.hub, "ip", "link", "set", "lo", "up")
            self._in(self.hub, "ip", "link", "add", "br0", "type", "bridge")
            self._in(self.hub, "ip", "addr", "add", f"{HUB_ADDR}/{NET}", "dev", "br0")
            self._in(self.hub, "ip", "link", "set", "br0", "up")
            for k in range(self.members):
                ns = self.ns(k)
                _run("ip", "netns", "add", ns)
                self.names.append(ns)
                # Made in the hub, one end moved out: no interface ever appears here.
                self._in(
                    self.hub, "ip", "link", "add", f"v{k}", "type", "veth", "peer", "name", f"p{k}"
                )
                self._in(self.hub, "ip", "link", "set", f"p{k}", "netns", ns)
                self._in(self.hub, "ip", "link", "set", f"v{k}", "master", "br0")
                self._in(self.hub, "ip", "link", "set", f"v{k}", "up")
                self._in(ns, "ip", "link", "set", "lo", "up")
                self._in(ns, "ip", "link", "set", f"p{k}", "name", "eth0")
                self._in(ns, "ip", "addr", "add", f"{self.addr(k)}/{NET}", "dev", "eth0")
                self._in(ns, "ip", "link", "set", "eth0", "up")
        except BaseException:
            self.close()
            raise
        return self

    def run_in_hub(self, fn: Callable[[], T]) -> T:
        """`fn()` on a thread of its own inside the hub namespace (setns is per thread):
        its sockets, and the threads it starts (an event loop's executor), are in the hub,
        where every member's address is reachable; the rest of the process is not."""
        out: list[T] = []
        err: list[BaseException] = []

        def run() -> None:
            try:
                fd = os.open(f"/run/netns/{self.hub}", os.O_RDONLY)
                try:
                    if _libc().setns(fd, CLONE_NEWNET) != 0:
                        raise NetnsError(f"setns: {os.strerror(ctypes.get_errno())}")
                finally:
                    os.close(fd)
                out.append(fn())
            except BaseException as exc:
                err.append(exc)

        t = threading.Thread(target=run, name="netns-hub")
        t.start()
        t.join()
        if err:
            raise err[0]
        return out[0]

    def exec_argv(self, k: int | None, argv: list[str]) -> list[str]:
        """`argv` run inside member k's namespace (None: the hub). `ip netns exec` execs in
        place: the pid is the command's own."""
        return ["ip", "netns", "exec", self.hub if k is None else self.ns(k), *argv]

    # ---- faults ------------------------------------------------------------------------
    def cut(self, k: int) -> None:
        self._in(self.hub, "ip", "link", "set", f"v{k}", "down")

    def heal(self, k: int) -> None:
        self._in(self.hub, "ip", "link", "set", f"v{k}", "up")

    def blackhole(self, src: int, dst: int) -> None:
        self._in(self.ns(src), "ip", "route", "add", "blackhole", f"{self.addr(dst)}/32")
        self._blackholes.add((src, dst))

    def unblackhole(self, src: int, dst: int) -> None:
        self._in(
            self.ns(src), "ip", "route", "del", "blackhole", f"{self.addr(dst)}/32", check=False
        )
        self._blackholes.discard((src, dst))

    def throttle(self, k: int, rate: str, burst: str = "32kb", latency: str = "200ms") -> None:
        for ns, dev in ((self.hub, f"v{k}"), (self.ns(k), "eth0")):
            self._in(ns, "tc", "qdisc", "replace", "dev", dev, "root", "tbf",
                     "rate", rate, "burst", burst, "latency", latency)  # fmt: skip
        self._throttled.add(k)

    def unthrottle(self, k: int) -> None:
        for ns, dev in ((self.hub, f"v{k}"), (self.ns(k), "eth0")):
            self._in(ns, "tc", "qdisc", "del", "dev", dev, "root", check=False)
        self._throttled.discard(k)

    def heal_all(self) -> None:
        for k in range(self.members):
            self.heal(k)
        for src, dst in list(self._blackholes):
            self.unblackhole(src, dst)
        for k in list(self._throttled):
            self.unthrottle(k)

    def close(self) -> None:
        for ns in reversed(self.names):
            _kill_inside(ns)
            _run("ip", "netns", "del", ns, check=False)
        self.names.clear()

    def __enter__(self) -> Lab:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
