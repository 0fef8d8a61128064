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
from engine._nats_server import NatsServer

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
