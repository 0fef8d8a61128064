"""Function call overhead: a no-op function through the engine vs a bare nats-py responder.

Caller (this process) and responders (separate processes) talk through one nats-server.
Measures serial latency (p50) and throughput with 100 calls in flight, alternating the
two sides in rounds so that machine noise hits both alike.

    python ops/bench/invoke.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from engine import Client, connect
from engine._nats_server import NatsServer
from ops.bench._common import emit, median, pct, spawn_python

PAYLOAD = b'{"tool":"Read","file":"src/app.py","n":1}'
Call = Callable[[], Awaitable[object]]


async def serial(call: Call, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        await call()
        out.append((time.perf_counter_ns() - t0) / 1000)
    return out


async def throughput(call: Call, inflight: int, seconds: float) -> float:
    done = 0
    stop_at = time.perf_counter() + seconds

    async def lane() -> None:
        nonlocal done
        while time.perf_counter() < stop_at:
            await call()
            done += 1

    t0 = time.perf_counter()
    await asyncio.gather(*(lane() for _ in range(inflight)))
    return done / (time.perf_counter() - t0)


async def main(quick: bool) -> None:
    rounds = 3 if quick else 5
    n_serial = 1500 if quick else 5000
    seconds = 2.0 if quick else 5.0
    with tempfile.TemporaryDirectory() as tmp:
        srv = NatsServer(store_dir=Path(tmp) / "js").start()
        env = {"ENGINE_NATS_URL": srv.url, "ENGINE_LOG_LEVEL": "WARNING"}
        raw_p = spawn_python(["ops/bench/_raw_responder.py", srv.url], ready_mark="RAW_READY")
        eng_p = spawn_python(["-m", "workers.example"], env=env, ready_mark="ENGINE_WORKER_READY")
        try:
            nc = await connect(srv.url)
            client = Client(nc)

            async def raw_call() -> object:
                return await nc.request("raw.noop", PAYLOAD, timeout=5)

            async def engine_call() -> object:
                return await client.call("example::noop", PAYLOAD, response=bytes, timeout=5)

            for c in (raw_call, engine_call):  # warm up both paths
                await serial(c, 300)
            res: dict[str, list[float]] = {
                "raw_p50": [],
                "eng_p50": [],
                "raw_rps": [],
                "eng_rps": [],
            }
            for r in range(rounds):
                order = [("raw", raw_call), ("eng", engine_call)]
                if r % 2:
                    order.reverse()
                for name, c in order:
                    res[f"{name}_p50"].append(median(await serial(c, n_serial)))
                    res[f"{name}_rps"].append(await throughput(c, 100, seconds))
                print(
                    f"round {r + 1}/{rounds}: raw p50 {res['raw_p50'][-1]:.0f}us "
                    f"{res['raw_rps'][-1]:.0f}/s | engine p50 {res['eng_p50'][-1]:.0f}us "
                    f"{res['eng_rps'][-1]:.0f}/s",
                    file=sys.stderr,
                )
            lat = await serial(engine_call, n_serial)
            await nc.close()
        finally:
            for p in (raw_p, eng_p):
                p.kill()
                p.wait()
            srv.kill()
    raw_rps, eng_rps = median(res["raw_rps"]), median(res["eng_rps"])
    raw_p50, eng_p50 = median(res["raw_p50"]), median(res["eng_p50"])
    figures = {
        "engine_rps": round(eng_rps),
        "raw_rps": round(raw_rps),
        "ratio": round(eng_rps / raw_rps, 3),
        "engine_p50_us": round(eng_p50, 1),
        "raw_p50_us": round(raw_p50, 1),
        "overhead_p50_us": round(eng_p50 - raw_p50, 1),
        "engine_p99_us": round(pct(lat, 99), 1),
        "inflight": 100,
        "rounds": rounds,
        "cpus": os.cpu_count(),
    }
    print(
        f"engine/raw throughput ratio {figures['ratio']}, p50 overhead "
        f"{figures['overhead_p50_us']}us",
        file=sys.stderr,
    )
    emit(figures)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    uvloop.install()
    asyncio.run(main(a.quick))
