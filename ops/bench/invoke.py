"""Function call overhead: a no-op function through the engine vs a bare nats-py responder.

Caller (this process) and responders (separate processes) talk through one nats-server.
Measures serial latency (p50) and throughput with 100 calls in flight for three sides in
alternating rounds, so that machine noise hits all alike: raw, engine with tracing off,
engine with tracing on at sampling 1.0 (caller and worker).

    python ops/bench/invoke.py [--quick]
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from engine import Client, connect
from engine import tracing as _tracing
from engine.config import process_usage
from engine.server import NatsServer
from ops.bench.harness import emit, machine, median, pct, run_async, spawn_python

PAYLOAD = b'{"tool":"Read","file":"src/app.py","n":1}'
Call = Callable[[], Awaitable[object]]


async def serial(call: Call, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        await call()
        out.append((time.perf_counter_ns() - t0) / 1000)
    return out


def cpu_s(pid: int) -> float:
    return process_usage(pid)[0] or 0.0


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


def start_worker(url: str, tracing: bool) -> subprocess.Popen[bytes]:
    env = {
        "ENGINE_NATS_URL": url,
        "ENGINE_LOG_LEVEL": "WARNING",
        "ENGINE_TRACING": "on" if tracing else "off",
        "ENGINE_TRACE_SAMPLING": "1.0",
    }
    return spawn_python(["-m", "workers.example"], env=env, ready_mark="ENGINE_WORKER_READY")


def stop(p: subprocess.Popen[bytes]) -> None:
    p.kill()
    p.wait()


async def main(quick: bool) -> None:
    rounds = 3 if quick else 5
    n_serial = 1000 if quick else 5000
    seconds = 1.5 if quick else 5.0
    res: dict[str, list[float]] = {
        f"{k}_{m}": [] for k in ("raw", "eng", "trc") for m in ("p50", "rps", "ccpu", "rcpu")
    }
    with tempfile.TemporaryDirectory() as tmp:
        srv = NatsServer(store_dir=Path(tmp) / "js").start()
        raw_p = spawn_python(["ops/bench/_raw_responder.py", srv.url], ready_mark="RAW_READY")
        try:
            nc = await connect(srv.url)
            client = Client(nc)
            # Spans of this caller go to the bus like any engine process's (no stream here).
            _tracing.setup("bench-caller", nc, asyncio.get_running_loop())

            async def raw_call() -> object:
                return await nc.request("raw.noop", PAYLOAD, timeout=5)

            async def engine_call() -> object:
                return await client.call("example::noop", PAYLOAD, response=bytes, timeout=5)

            async def measure(name: str, call: Call, responder: int) -> None:
                await serial(call, 200)  # warm-up
                res[f"{name}_p50"].append(median(await serial(call, n_serial)))
                # CPU per call of each side during the throughput run: where the time goes
                c0, r0, t0 = time.process_time(), cpu_s(responder), time.perf_counter()
                rps = await throughput(call, 100, seconds)
                calls = rps * (time.perf_counter() - t0)
                res[f"{name}_rps"].append(rps)
                res[f"{name}_ccpu"].append((time.process_time() - c0) * 1e6 / calls)
                res[f"{name}_rcpu"].append((cpu_s(responder) - r0) * 1e6 / calls)

            for r in range(rounds):
                # Untraced and traced engine workers alternate; the raw responder stays up.
                _tracing.set_enabled(False)
                await measure("raw", raw_call, raw_p.pid)
                w = start_worker(srv.url, tracing=False)
                await measure("eng", engine_call, w.pid)
                stop(w)
                _tracing.set_enabled(True)
                w = start_worker(srv.url, tracing=True)
                await measure("trc", engine_call, w.pid)
                stop(w)
                print(
                    f"round {r + 1}/{rounds}: raw {res['raw_p50'][-1]:.0f}us "
                    f"{res['raw_rps'][-1]:.0f}/s | engine {res['eng_p50'][-1]:.0f}us "
                    f"{res['eng_rps'][-1]:.0f}/s | traced {res['trc_p50'][-1]:.0f}us "
                    f"{res['trc_rps'][-1]:.0f}/s",
                    file=sys.stderr,
                )
            _tracing.set_enabled(False)
            w = start_worker(srv.url, tracing=False)
            lat = await serial(engine_call, n_serial)
            stop(w)
            await nc.close()
        finally:
            stop(raw_p)
            srv.kill()
    m = {k: median(v) for k, v in res.items()}
    figures = {
        "engine_rps": round(m["eng_rps"]),
        "raw_rps": round(m["raw_rps"]),
        "ratio": round(m["eng_rps"] / m["raw_rps"], 3),
        "engine_p50_us": round(m["eng_p50"], 1),
        "raw_p50_us": round(m["raw_p50"], 1),
        "overhead_p50_us": round(m["eng_p50"] - m["raw_p50"], 1),
        "engine_p99_us": round(pct(lat, 99), 1),
        "traced_rps": round(m["trc_rps"]),
        "traced_p50_us": round(m["trc_p50"], 1),
        "trace_ratio": round(m["trc_rps"] / m["eng_rps"], 3),
        # Each round's traced/untraced pair runs back to back: the spread of these is the
        # machine's noise, which the medians above mix across rounds.
        "trace_ratio_rounds": [
            round(t / e, 3) for t, e in zip(res["trc_rps"], res["eng_rps"], strict=True)
        ],
        # CPU µs per call at 100 in flight: caller / responder (raw) or worker (engine)
        "cpu_us_caller": {k: round(m[f"{k}_ccpu"], 1) for k in ("raw", "eng", "trc")},
        "cpu_us_responder": {k: round(m[f"{k}_rcpu"], 1) for k in ("raw", "eng", "trc")},
        "inflight": 100,
        "rounds": rounds,
        **machine(),
    }
    print(
        f"engine/raw {figures['ratio']}, p50 overhead {figures['overhead_p50_us']}us, "
        f"traced/untraced {figures['trace_ratio']}",
        file=sys.stderr,
    )
    emit(figures)


if __name__ == "__main__":
    run_async(main, 90, 900)
