"""Shared fixtures: a real nats-server per test, real worker processes."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from engine import Client, connect
from engine.server import NatsServer

ROOT = Path(__file__).resolve().parent.parent


def _drain(stream: object) -> None:
    for _ in stream:  # type: ignore[attr-defined]
        pass


@pytest.fixture
def nats_server(tmp_path: Path) -> Iterator[NatsServer]:
    srv = NatsServer(store_dir=tmp_path / "js").start()
    yield srv
    srv.kill()


@pytest.fixture
async def client(nats_server: NatsServer) -> AsyncIterator[Client]:
    nc = await connect(nats_server.url)
    yield Client(nc)
    await nc.close()


@pytest.fixture
def spawn(nats_server: NatsServer) -> Iterator[object]:
    procs: list[subprocess.Popen[bytes]] = []

    def start(
        module: str, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        e = dict(os.environ, ENGINE_NATS_URL=nats_server.url, PYTHONPATH=str(ROOT))
        e.update(env or {})
        p = subprocess.Popen(
            [sys.executable, "-m", module, *args],
            env=e,
            cwd=ROOT,
            stderr=subprocess.PIPE,
        )
        assert p.stderr is not None
        for raw in p.stderr:  # wait until it serves
            if b"ENGINE_WORKER_READY" in raw:
                break
        else:
            raise RuntimeError(f"{module} exited before it was ready")
        # keep reading so a chatty worker never blocks on a full pipe
        threading.Thread(target=_drain, args=(p.stderr,), daemon=True).start()
        procs.append(p)
        return p

    yield start
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()


def free_port_block(size: int = 6) -> int:
    """An anchor whose block of `size` consecutive loopback ports is free right now."""
    import random
    import socket

    for _ in range(200):
        anchor = random.randrange(20000, 30000)
        ok = True
        for p in range(anchor, anchor + size):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", p))
                except OSError:
                    ok = False
                    break
        if ok:
            return anchor
    raise RuntimeError("no free port block")


# The product's layout (config/engine.yaml): test configs without a `layout:` of their own
# get it, so their REST, console and NATS ports sit where the product puts them.
PRODUCT_LAYOUT = """
layout:
  name: agentmemory
  env_prefix: AGENTMEMORY
  anchor: 3111
  ports: [rest, streams, viewer, console, nats, nats_monitor]
"""


class EngineProcess:
    """`python -m engine run` as a real process, on its own data dir and port block."""

    def __init__(self, tmp: Path, config: str, anchor: int | None = None) -> None:
        self.data_dir = tmp / "data"
        self.config = tmp / "engine.yaml"
        if "\nlayout:" not in "\n" + config:
            config = PRODUCT_LAYOUT + config
        self.config.write_text(config)
        self.anchor = anchor or free_port_block()
        self.proc: subprocess.Popen[bytes] | None = None
        self.lines: list[str] = []

    def args(self) -> list[str]:
        return ["--data-dir", str(self.data_dir), "--port", str(self.anchor)]

    def start(self, timeout: float = 60.0) -> EngineProcess:
        import time

        self.lines = []
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "engine", "run", "--config", str(self.config), *self.args()],
            cwd=ROOT,
            stderr=subprocess.PIPE,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
        )
        ready = threading.Event()

        def pump() -> None:
            assert self.proc is not None and self.proc.stderr is not None
            for raw in self.proc.stderr:
                line = raw.decode(errors="replace")
                self.lines.append(line)
                if line.startswith("engine ready"):
                    ready.set()

        threading.Thread(target=pump, daemon=True).start()
        deadline = time.monotonic() + timeout
        while not ready.wait(0.05):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("engine did not start:\n" + "".join(self.lines[-30:]))
        return self

    @property
    def ports(self) -> dict[str, int]:
        """The running instance's ports by name, as its pidfile records them (the layout of
        its config names them; without one only the engine's own, nats first)."""
        import json

        info = json.loads((self.data_dir / "engine.pid").read_text())
        return {str(k): int(v) for k, v in info["ports"].items()}

    @property
    def nats_url(self) -> str:
        return f"nats://127.0.0.1:{self.ports['nats']}"

    @property
    def credentials(self) -> str:
        return str(self.data_dir / "nats" / "credentials.json")

    async def client(self) -> Client:
        return Client(await connect(self.nats_url, self.credentials))

    def status(self) -> dict[str, object]:
        import json

        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "engine",
                "status",
                "--json",
                "--config",
                str(self.config),
                *self.args(),
            ],
            cwd=ROOT,
            capture_output=True,
            check=False,
        )
        return json.loads(out.stdout) if out.stdout else {}

    def stop(self, timeout: float = 60.0) -> int:
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def kill_all(self) -> None:
        """Last-resort cleanup: the engine and anything still bound to its data dir."""
        import signal as _signal

        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for pid_dir in Path("/proc").iterdir():
            if not pid_dir.name.isdigit():
                continue
            try:
                env = (pid_dir / "environ").read_bytes()
                cmd = (pid_dir / "cmdline").read_bytes()
            except OSError:
                continue
            mine = str(self.data_dir).encode()
            if mine in env or mine in cmd:
                try:
                    os.kill(int(pid_dir.name), _signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass


EXAMPLE_CONFIG = """
workers:
  - name: example
    module: workers.example
    replicas: 1
    restart: {policy: always, backoff_initial: 0.2, backoff_max: 2, reset_after: 5}
"""


@pytest.fixture
def engine_factory(tmp_path: Path) -> Iterator[object]:
    made: list[EngineProcess] = []

    def make(config: str = EXAMPLE_CONFIG, sub: str = "e") -> EngineProcess:
        d = tmp_path / f"{sub}{len(made)}"
        d.mkdir()
        e = EngineProcess(d, config)
        made.append(e)
        return e

    yield make
    for e in made:
        e.stop(30)
        e.kill_all()
