"""Power loss: acknowledged writes still in the page cache when the machine goes dark.

The data dir is ext4 on a loop device; the power cut is a copy of its image taken while
every process writing to it is frozen (ops/disks.py: what the kernel had not written back
is not in the copy). A server started on the copy finds what a machine would find after
the cut. With `nats.sync: always` every acknowledged observation is on the disk; the
server's default policy (sync every two minutes; the kernel writes back within ~30 s)
loses the last seconds of acknowledged writes, which the control shows the cut does."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import pytest

from engine import Client, connect
from engine.server import NatsServer
from functions.kernel.observation_records import ObservationRecords
from functions.kernel.store import events_stream
from ops.disks import LoopDisk, can_mount
from ops.procfs import process_tree
from tests.fixtures import EngineProcess

pytestmark = pytest.mark.skipif(bool(can_mount()), reason=can_mount() or "ok")

MEMORY_ONLY = """
nats:
  sync: {sync}
workers:
  - name: memory
    module: workers.memory
    env: {{AGENTMEMORY_SEARCH: "off", ENGINE_TRACING: "off"}}
"""


def _body(i: int) -> dict[str, object]:
    return {
        "hookType": "post_tool_use",
        "sessionId": "power-cut",
        "project": "power",
        "cwd": "/work/power",
        "timestamp": "2026-12-01T10:00:00.000Z",
        "eventId": f"toolu_power_{i:05d}",
        "data": {"tool_name": "Bash", "tool_input": {"command": f"make step{i}"}},
    }


def _freeze(pids: list[int]) -> None:
    for p in pids:
        os.kill(p, signal.SIGSTOP)


def _kill(pids: list[int]) -> None:
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass


async def _acked_observations(url: str, creds: str, seconds: float) -> list[str]:
    client = Client(await connect(url, creds))
    acked: list[str] = []
    try:
        deadline = time.monotonic() + seconds
        i = 0
        while time.monotonic() < deadline:
            out = await client.call("mem::observe", _body(i), timeout=10)
            if out["status"] == "accepted":
                acked.append(out["observationId"])
            i += 1
    finally:
        await client.nc.close()
    return acked


async def _present(url: str, creds: str, ids: list[str]) -> set[str]:
    client = Client(await connect(url, creds))
    try:
        records = await ObservationRecords(client, events_stream(client)).open()
        got = await asyncio.gather(*(records.get(i) for i in ids))
        return {i for i, v in zip(ids, got, strict=True) if v is not None}
    finally:
        await client.nc.close()


async def test_sync_always_keeps_every_acknowledged_observation_through_a_power_cut(
    tmp_path: Path,
) -> None:
    (tmp_path / "e").mkdir()
    engine = EngineProcess(tmp_path / "e", MEMORY_ONLY.format(sync="always"))
    disk = LoopDisk.make(tmp_path / "disk.img", tmp_path / "mnt", 256)
    after: LoopDisk | None = None
    engine.data_dir = disk.mountpoint / "data"
    try:
        engine.start()
        conf = (engine.data_dir / "nats" / "nats-server.conf").read_text()
        assert 'sync_interval: "always"' in conf, conf
        acked = await _acked_observations(engine.nats_url, engine.credentials, 4.0)
        assert len(acked) > 50
        assert engine.proc is not None
        pids = process_tree(engine.proc.pid)
        _freeze(pids)
        after = disk.power_cut_copy(tmp_path / "cut.img")
        _kill(pids)
        engine.proc.wait()
        disk.unmount()
        after.mount()
        engine.data_dir = after.mountpoint / "data"
        engine.start()
        present = await _present(engine.nats_url, engine.credentials, acked)
        assert len(present) == len(acked), f"{len(acked) - len(present)} acknowledged lost"
    finally:
        engine.stop(20)
        engine.kill_all()
        disk.unmount()
        if after is not None:
            after.unmount()


async def test_the_default_policy_loses_the_last_acknowledged_writes_to_the_cut(
    tmp_path: Path,
) -> None:
    """The control: the simulated cut does drop what the page cache held."""
    disk = LoopDisk.make(tmp_path / "disk.img", tmp_path / "mnt", 128)
    after: LoopDisk | None = None
    srv = NatsServer(store_dir=disk.mountpoint / "js").start()
    try:
        nc = await connect(srv.url)
        js = nc.jetstream()
        await js.add_stream(name="CUT", subjects=["cut.>"])
        acked = 0
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            await js.publish(f"cut.{acked}", b"x" * 256)
            acked += 1
        await nc.close()
        assert srv.proc is not None
        _freeze([srv.proc.pid])
        after = disk.power_cut_copy(tmp_path / "cut.img")
        srv.kill()
        disk.unmount()
        after.mount()
        srv2 = NatsServer(store_dir=after.mountpoint / "js").start()
        try:
            nc = await connect(srv2.url)
            try:
                info = await nc.jetstream().stream_info("CUT")
                kept = info.state.messages
            except Exception:  # the stream itself had not reached the disk
                kept = 0
            await nc.close()
        finally:
            srv2.kill()
        assert kept < acked, (kept, acked)
    finally:
        srv.kill()
        disk.unmount()
        if after is not None:
            after.unmount()
