"""The store's sync policy (`nats.sync`): what each costs on ingest, and what a power cut
takes with it.

For each policy (the server's default, a 1 s interval, always), on this machine's disk:
`mem::observe` through a real memory worker, serial (p50) and 32 at a time (per second),
and raw nats-py publishes to a stream (the peer: the same server, no product) likewise;
then the power cut of ops/disks.py (the store on ext4 on a loop device, the image copied
with every writer frozen) after `--cut-after` seconds of steady observes at 50/s:
acknowledged observations the copy lacks, and how long before the cut the oldest lost one
was acknowledged. The cut needs root; without it only the costs are measured.

    python ops/bench/sync.py [--quick]
"""

# ruff: noqa: E402
from __future__ import annotations

import sys
from pathlib import Path

sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent.resolve()]

import argparse
import asyncio
import os
import shutil
import signal
import statistics
import tempfile
import time
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from engine import Client, connect
from engine.server import NatsServer
from functions.kernel.observation_records import ObservationRecords
from functions.kernel.store import events_stream
from ops.bench.harness import emit, spawn_python
from ops.disks import LoopDisk, can_mount

POLICIES = ["default", "1s", "always"]


def body(run: str, i: int) -> dict[str, Any]:
    return {
        "hookType": "post_tool_use",
        "sessionId": f"sync-{run}",
        "project": "syncbench",
        "cwd": "/work/sync",
        "timestamp": "2026-12-01T10:00:00.000Z",
        "eventId": f"toolu_{run}_{i:06d}",
        "data": {
            "tool_name": "Bash",
            "tool_input": {"command": f"make step{i}"},
            "tool_output": "ok " * 100,
        },
    }


def start(store: Path, policy: str, inbox: Path) -> tuple[NatsServer, Any]:
    srv = NatsServer(store_dir=store, sync=policy).start()
    worker = spawn_python(
        ["-m", "workers.memory"],
        {
            "ENGINE_NATS_URL": srv.url,
            "AGENTMEMORY_SEARCH": "off",
            "ENGINE_TRACING": "off",
            "ENGINE_LOG_LEVEL": "WARNING",
            "AGENTMEMORY_INBOX_DIR": str(inbox),
        },
        ready_mark="ENGINE_WORKER_READY",
    )
    return srv, worker


async def costs(policy: str, tmp: Path, n: int) -> dict[str, Any]:
    srv, worker = start(tmp / f"js-{policy}", policy, tmp / f"inbox-{policy}")
    try:
        c = Client(await connect(srv.url))
        lat = []
        for i in range(n):
            t = time.perf_counter()
            await c.call("mem::observe", body(f"s{policy}", i), timeout=30)
            lat.append(time.perf_counter() - t)
        sem = asyncio.Semaphore(32)

        async def one(i: int) -> None:
            async with sem:
                await c.call("mem::observe", body(f"c{policy}", i), timeout=30)

        t0 = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(4 * n)))
        conc = 4 * n / (time.perf_counter() - t0)
        js = c.nc.jetstream()
        await js.add_stream(name="RAW", subjects=["raw.>"])
        raw_lat = []
        for i in range(n):
            t = time.perf_counter()
            await js.publish(f"raw.{i}", b"x" * 600)
            raw_lat.append(time.perf_counter() - t)

        async def pub(i: int) -> None:
            async with sem:
                await js.publish(f"raw.c{i}", b"x" * 600)

        t0 = time.perf_counter()
        await asyncio.gather(*(pub(i) for i in range(4 * n)))
        raw_conc = 4 * n / (time.perf_counter() - t0)
        await c.nc.close()
    finally:
        worker.kill()
        worker.wait()
        srv.kill()
    return {
        "observe_serial_p50_ms": round(1000 * statistics.median(lat), 2),
        "observe_32_per_s": round(conc),
        "raw_publish_serial_p50_ms": round(1000 * statistics.median(raw_lat), 3),
        "raw_publish_32_per_s": round(raw_conc),
    }


async def power_cut(policy: str, tmp: Path, seconds: float) -> dict[str, Any]:
    disk = LoopDisk.make(tmp / f"disk-{policy}.img", tmp / f"mnt-{policy}", 256)
    after: LoopDisk | None = None
    srv, worker = start(disk.mountpoint / "js", policy, disk.mountpoint / "inbox")
    try:
        c = Client(await connect(srv.url))
        acked: list[tuple[str, float]] = []
        t0 = time.monotonic()
        i = 0
        while time.monotonic() - t0 < seconds:
            out = await c.call("mem::observe", body(f"p{policy}", i), timeout=30)
            acked.append((out["observationId"], time.monotonic()))
            i += 1
            await asyncio.sleep(max(0.0, t0 + i / 50 - time.monotonic()))
        await c.nc.close()
        assert srv.proc is not None
        for p in (srv.proc.pid, worker.pid):
            os.kill(p, signal.SIGSTOP)
        t_cut = time.monotonic()
        after = disk.power_cut_copy(tmp / f"cut-{policy}.img")
        worker.kill()
        worker.wait()
        srv.kill()
        disk.unmount()
        after.mount()
        srv2 = NatsServer(store_dir=after.mountpoint / "js").start()
        try:
            c = Client(await connect(srv2.url))
            try:
                records = await ObservationRecords(c, events_stream(c)).open()
                found = await records.get_many(oid for oid, _ in acked)
                got = [found.get(oid) for oid, _ in acked]
            except Exception:  # the bucket itself had not reached the disk
                got = [None] * len(acked)
            await c.nc.close()
        finally:
            srv2.kill()
        lost = [t for (oid, t), g in zip(acked, got, strict=True) if g is None]
        return {
            "cut_acked": len(acked),
            "cut_acked_lost": len(lost),
            "cut_oldest_lost_s": round(t_cut - min(lost), 2) if lost else 0.0,
        }
    finally:
        worker.kill()
        srv.kill()
        disk.unmount()
        if after is not None:
            after.unmount()


async def run(n: int, cut_after: float) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="sync-bench-"))
    out: dict[str, Any] = {"bench": "sync", "store": str(tmp)}
    why = can_mount()
    try:
        for policy in POLICIES:
            fig = await costs(policy, tmp, n)
            if not why:
                fig |= await power_cut(policy, tmp, cut_after)
            out[policy] = fig
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    base = out["default"]
    out["always_cost_ratio_32"] = round(
        base["observe_32_per_s"] / out["always"]["observe_32_per_s"], 2
    )
    out["power_cut"] = "measured" if not why else f"skipped: {why}"
    out["load_avg_1m"] = round(os.getloadavg()[0], 2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--cut-after", type=float, default=0)
    a = ap.parse_args()
    n = 150 if a.quick else 500
    emit(asyncio.run(run(n, a.cut_after or (10.0 if a.quick else 40.0))))


if __name__ == "__main__":
    main()
