"""The engine process: start, restart crashed workers, refuse a second start, stop in order."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time

import msgspec
import pytest

from engine import FunctionError
from tests.fixtures import ROOT, close_client, eventually, wait_until


class Echo(msgspec.Struct):
    text: str


class Who(msgspec.Struct):
    pid: int


async def test_engine_starts_nats_and_worker_and_a_function_answers(engine_factory) -> None:
    eng = engine_factory().start()
    creds = eng.data_dir / "nats" / "credentials.json"
    assert oct(creds.stat().st_mode & 0o777) == "0o600"
    c = await eng.client()
    assert (await c.call("example::echo", {"text": "up"}, response=Echo, timeout=5)).text == "up"
    st = eng.status()
    assert st["running"] is True
    [w] = st["workers"]
    assert w["state"] == "running" and "example::echo" in w["functions"] and w["pid"]
    assert w["rss_mb"] > 5 and w["cpu_s"] >= 0  # per-worker resource metrics
    await c.nc.close()
    assert eng.stop() == 0
    assert not (eng.data_dir / "engine.pid").exists()


async def test_bus_refuses_a_client_without_credentials(engine_factory) -> None:
    import nats

    eng = engine_factory().start()
    try:
        nc = await nats.connect(eng.nats_url, max_reconnect_attempts=0, allow_reconnect=False)
    except Exception as exc:
        assert "uthorization" in str(exc) or "auth" in str(exc).lower()
    else:
        await nc.close()
        raise AssertionError("an unauthenticated client joined the bus")


async def test_sigkilled_worker_is_restarted_and_calls_succeed_within_3s(engine_factory) -> None:
    eng = engine_factory().start()
    c = await eng.client()
    old = (await c.call("example::whoami", None, response=Who, timeout=5)).pid
    os.kill(old, signal.SIGKILL)
    t0 = time.monotonic()

    async def answered_by_new() -> bool:
        who = await c.call("example::whoami", None, response=Who, timeout=0.5)
        return who.pid != old

    await eventually(answered_by_new, timeout=3, interval=0.05, what="restarted worker answers")
    assert time.monotonic() - t0 < 3
    [w] = eng.status()["workers"]
    assert w["restarts"] == 1 and w["state"] == "running"
    await c.nc.close()


def test_second_start_of_the_same_instance_says_so(engine_factory) -> None:
    eng = engine_factory().start()
    out = subprocess.run(
        [sys.executable, "-m", "engine", "run", "--config", str(eng.config), *eng.args()],
        cwd=ROOT,
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert out.returncode == 1
    assert b"already running" in out.stderr and str(eng.proc.pid).encode() in out.stderr
    # the hint names this instance again: its data dir and port block are not the defaults
    hint = out.stderr.decode()
    assert f"--data-dir {eng.data_dir.resolve()}" in hint and f"--port {eng.anchor}" in hint


def test_busy_port_is_named_in_the_error(engine_factory) -> None:
    eng = engine_factory()
    with socket.socket() as s:
        s.bind(("127.0.0.1", eng.anchor))  # the REST port of its block
        s.listen()
        out = subprocess.run(
            [sys.executable, "-m", "engine", "run", "--config", str(eng.config), *eng.args()],
            cwd=ROOT,
            capture_output=True,
            timeout=30,
            check=False,
        )
    assert out.returncode == 1
    assert f"port {eng.anchor}".encode() in out.stderr and b"in use" in out.stderr


async def test_sigterm_with_1000_calls_in_flight_leaves_none_hanging(engine_factory) -> None:
    eng = engine_factory().start()
    c = await eng.client()
    await c.call("example::echo", {"text": "warm"}, timeout=5)

    async def one(i: int) -> str:
        try:
            await c.call("example::sleep", {"seconds": 0.5}, timeout=8)
            return "ok"
        except FunctionError as err:
            return f"retryable:{err.code}" if err.retryable else f"fatal:{err.code}"

    tasks = [asyncio.create_task(one(i)) for i in range(1000)]
    await asyncio.sleep(0.2)  # all sent, most in flight in the worker
    eng.proc.send_signal(signal.SIGTERM)
    # Hanging means never answered: each call has its own 8 s deadline, so every one must
    # resolve (ok, or a retryable error) long before this bound; how fast is a bench's job.
    results = await asyncio.wait_for(asyncio.gather(*tasks), 40)
    assert all(r == "ok" or r.startswith("retryable:") for r in results), set(results)
    assert results.count("ok") > 0
    assert eng.proc.wait(30) == 0
    await close_client(c.nc)  # the server is gone: the client is reconnecting


def test_stop_command_stops_a_running_engine(engine_factory) -> None:
    eng = engine_factory().start()
    out = subprocess.run(
        [sys.executable, "-m", "engine", "stop", *eng.args()],
        cwd=ROOT,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    wait_until(lambda: eng.proc.poll() is not None, timeout=10, what="engine exit")
    assert eng.proc.returncode == 0


def test_worker_runs_at_its_configured_cpu_priority(engine_factory) -> None:
    eng = engine_factory(
        "workers:\n  - name: example\n    module: workers.example\n    nice: 7\n"
    ).start()
    [w] = eng.status()["workers"]
    fields = open(f"/proc/{w['pid']}/stat").read().rsplit(")", 1)[1].split()
    assert int(fields[16]) == os.getpriority(os.PRIO_PROCESS, 0) + 7  # field 19: nice


def test_status_while_the_bus_is_not_up_is_one_clear_line(tmp_path) -> None:
    # Seen on `make run`: status asked in the first second, before the embedded server
    # accepted clients, printed a nats-py traceback.
    from engine.paths import Instance, InstanceLock

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]  # closed when the block ends: nothing listens there
    inst = Instance.resolve(0, tmp_path / "data")
    lock = InstanceLock(inst)
    lock.acquire({"pid": os.getpid(), "nats_url": f"nats://127.0.0.1:{dead}"})
    try:
        out = subprocess.run(
            [sys.executable, "-m", "engine", "status", "--data-dir", str(inst.data_dir)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        lock.release()
    assert out.returncode == 1
    assert "Traceback" not in out.stderr
    assert f"engine is running (pid {os.getpid()}) but did not answer" in out.stderr


@pytest.mark.unit
def test_the_shipped_configs_load_and_the_default_shares_processes() -> None:
    from engine.config import load_config

    default = load_config(ROOT / "config" / "engine.yaml")
    split = load_config(ROOT / "config" / "engine.split.yaml")
    assert default.layout == split.layout
    # laptop layout: several workers per process; the split one runs each alone
    assert any(w.modules for w in default.workers)
    assert not any(w.modules for w in split.workers)
    hosted = {m for w in default.workers for m in (w.modules or [w.module])}
    alone = {w.module for w in split.workers if w.module}
    assert alone <= hosted  # every worker of the split layout runs in the default one too
