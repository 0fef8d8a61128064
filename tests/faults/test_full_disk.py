"""A full disk: the data dir on a tmpfs the test makes small, then fills.

While the disk holds less than the engine's reserve (`nats.min_free_disk`), observe answers
a retryable 503 that says the disk is full, before writing anything; mem::status (the
viewer's Health page, `agentmemory doctor`) says so too. A nats-server that hit the full
disk anyway (another writer) refuses that stream's writes until it restarts: the
supervisor restarts it once space is back. Nothing acknowledged is lost, and writes resume
by themselves when space is freed."""

from __future__ import annotations

import asyncio
import errno
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import nats.errors
import pytest

from engine import Client, FunctionError
from functions.kernel.observation_records import ObservationRecords
from functions.kernel.store import events_stream
from ops.disks import can_mount, tmpfs
from tests.fixtures import ROOT, EngineProcess, eventually

pytestmark = pytest.mark.skipif(bool(can_mount()), reason=can_mount() or "ok")

CONFIG = """
nats:
  min_free_disk: 8M
workers:
  - name: memory
    module: workers.memory
    env: {AGENTMEMORY_SEARCH: "off", ENGINE_TRACING: "off"}
"""


def _body(i: int) -> dict[str, Any]:
    return {
        "hookType": "post_tool_use",
        "sessionId": "full-disk",
        "project": "disk",
        "cwd": "/work/disk",
        "timestamp": "2026-12-01T10:00:00.000Z",
        "eventId": f"toolu_disk_{i:05d}",
        "data": {"tool_name": "Bash", "tool_input": {"command": f"make step{i}"}},
    }


def _fill(path: Path) -> None:
    """Write until the filesystem refuses (a download or a log that ran away)."""
    chunk = b"\0" * (1 << 20)
    with path.open("wb") as f:
        while True:
            try:
                f.write(chunk)
                f.flush()
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
                return


async def test_a_full_disk_is_refused_clearly_loses_nothing_and_writes_resume_once_freed(
    tmp_path: Path,
) -> None:
    (tmp_path / "e").mkdir()
    engine = EngineProcess(tmp_path / "e", CONFIG)
    with tmpfs(tmp_path / "disk", "48m") as disk:
        engine.data_dir = disk / "data"
        try:
            engine.start()
            client = await engine.client()
            try:
                await _run(engine, client, disk)
            finally:
                await client.nc.close()
        finally:
            engine.stop(20)
            engine.kill_all()


async def _observe(client: Client, i: int) -> str:
    out = await client.call("mem::observe", _body(i), timeout=10)
    assert out["status"] == "accepted", out
    return str(out["observationId"])


async def _run(engine: EngineProcess, client: Client, disk: Path) -> None:
    acked = [await _observe(client, i) for i in range(20)]
    js = client.nc.jetstream()
    await js.add_stream(name="OTHER", subjects=["other.>"])
    await js.publish("other.a", b"before")

    filler = disk / "filler"
    await asyncio.to_thread(_fill, filler)

    # The write path refuses before writing, and says why.
    async def refused() -> FunctionError:
        try:
            await client.call("mem::observe", _body(100), timeout=10)
        except FunctionError as err:
            return err
        raise AssertionError("accepted on a full disk")

    err = await eventually(refused, timeout=10, what="observe refused on the full disk")
    assert err.code == "UNAVAILABLE" and err.retryable and err.status == 503, err
    assert "full" in err.message and "free space" in err.message, err.message
    status = await client.call("mem::status", None, timeout=10)
    disk_check = next(c for c in status["checks"] if c["name"] == "disk")
    assert disk_check["ok"] is False and "full" in disk_check["detail"], disk_check
    assert status["status"] == "error"  # upstream's level (0.9.30): disk-full
    doctor = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "workers.cli", "doctor", *engine.args()],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    line = next((ln for ln in doctor.stdout.splitlines() if "disk holding" in ln), "")
    assert "is full" in line and doctor.returncode == 1, doctor.stdout + doctor.stderr

    # Another writer hits the full disk itself: nats-server does not answer it.
    with pytest.raises(nats.errors.TimeoutError):  # no reply, no error code
        await js.publish("other.b", b"x" * 4096, timeout=2)

    def store() -> dict[str, Any]:
        st = engine.status().get("store")
        assert isinstance(st, dict)
        return st

    st = await eventually(
        lambda: _true_if(store(), lambda s: bool(s["write_error"])),
        timeout=10,
        what="the supervisor sees the server's write error",
    )
    assert st["disk_full"] is True and "no space left" in st["write_error"], st

    # Space freed: the server is restarted, writes resume with no one doing anything.
    filler.unlink()
    t0 = time.monotonic()

    async def resumed() -> bool:
        await js.publish("other.c", b"after", timeout=2)
        return True

    await eventually(resumed, timeout=30, interval=0.5, what="the stream takes writes again")
    acked.append(await eventually(lambda: _observe(client, 200), timeout=20, what="observe ok"))
    assert time.monotonic() - t0 < 30
    assert store()["restarts"] == 1 and store()["disk_full"] is False, store()
    status = await client.call("mem::status", None, timeout=10)
    assert next(c for c in status["checks"] if c["name"] == "disk")["ok"] is True

    # Nothing acknowledged was lost.
    records = await ObservationRecords(client, events_stream(client)).open()
    got = await asyncio.gather(*(records.get(oid) for oid in acked))
    assert all(g is not None for g in got), [o for o, g in zip(acked, got, strict=True) if not g]
    info = await js.stream_info("OTHER")
    assert info.state.messages >= 2  # "before" and "after"


async def _true_if(value: dict[str, Any], pred: Any) -> dict[str, Any]:
    assert pred(value), value
    return value
