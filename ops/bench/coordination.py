"""Leases: `mem::lease-acquire` + `mem::lease-release` through two memory workers vs raw
JetStream KV create + delete (nats-py, the same per-key TTL) in the same run.

A lease costs more than its KV create: the action record's compare-and-set commits the
claim, the release commits it back, and each writes an audit entry. This measures that
price: the serial p50/p99 of one acquire+release pair, and pairs per second with 16 agents
at once (each agent its own action: the stack's cost, not contention), in alternating
rounds so machine noise hits both sides alike. `contended_pairs_per_s`: 16 agents racing
for 16 shared actions through `next`-free acquire attempts (a refusal is a 409 reply).

    python ops/bench/coordination.py [--quick]
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
from engine.server import NatsServer
from ops.bench.harness import emit, machine, median, pct, run_async, spawn_python

AGENTS = 16
Pair = Callable[[int], Awaitable[object]]


def start_memory(url: str, tmp: Path, n: int) -> subprocess.Popen[bytes]:
    env = {
        "ENGINE_NATS_URL": url,
        "ENGINE_LOG_LEVEL": "WARNING",
        "ENGINE_TRACING": "off",
        "AGENTMEMORY_SEARCH": "off",
        "AGENTMEMORY_INBOX_DIR": str(tmp / f"inbox{n}"),
        "HOME": str(tmp / "home"),
    }
    return spawn_python(["-m", "workers.memory"], env=env, ready_mark="ENGINE_WORKER_READY")


async def serial(pair: Pair, n: int) -> list[float]:
    out = []
    for i in range(n):
        t0 = time.perf_counter_ns()
        await pair(i % AGENTS)
        out.append((time.perf_counter_ns() - t0) / 1000)
    return out


async def throughput(pair: Pair, seconds: float) -> float:
    done = 0
    stop_at = time.perf_counter() + seconds

    async def agent(lane: int) -> None:
        nonlocal done
        while time.perf_counter() < stop_at:
            await pair(lane)
            done += 1

    t0 = time.perf_counter()
    await asyncio.gather(*(agent(i) for i in range(AGENTS)))
    return done / (time.perf_counter() - t0)


async def main(quick: bool) -> None:
    rounds = 3 if quick else 5
    n_serial = 300 if quick else 2000
    seconds = 3.0 if quick else 8.0
    res: dict[str, list[float]] = {
        k: [] for k in ("raw_p50", "raw_p99", "raw_rps", "co_p50", "co_p99", "co_rps", "race_rps")
    }
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        srv = NatsServer(store_dir=tmp / "js").start()
        workers = [start_memory(srv.url, tmp, n) for n in range(2)]
        try:
            nc = await connect(srv.url)
            client = Client(nc)
            js = nc.jetstream()
            raw_kv = await js.create_key_value(bucket="bench_raw_leases", history=1)
            own: list[str] = []
            shared: list[str] = []
            for i in range(AGENTS * 2):
                got = await client.call(
                    "mem::action-create",
                    {"title": f"bench {i}", "project": "bench"},
                    timeout=10,
                )
                (own if i < AGENTS else shared).append(got["action"]["id"])

            async def raw_pair(lane: int) -> object:
                key = f"a{lane}"
                await raw_kv.create(key, b'{"agentId":"bench"}', msg_ttl=600)
                return await raw_kv.delete(key)

            async def lease_pair(lane: int) -> object:
                req = {"actionId": own[lane], "agentId": f"agent-{lane}", "ttlMs": 600_000}
                got = await client.call("mem::lease-acquire", req, timeout=10)
                assert got["success"], got
                return await client.call("mem::lease-release", req, timeout=10)

            won = 0

            async def race_pair(lane: int) -> object:
                nonlocal won
                aid = shared[(lane + int(time.perf_counter() * 1000)) % AGENTS]
                req = {"actionId": aid, "agentId": f"agent-{lane}", "ttlMs": 600_000}
                got = await client.call("mem::lease-acquire", req, timeout=10)
                if not got["success"]:
                    return got
                won += 1
                return await client.call("mem::lease-release", req, timeout=10)

            async def measure(name: str, pair: Pair) -> None:
                await serial(pair, 50)  # warm-up
                lat = await serial(pair, n_serial)
                res[f"{name}_p50"].append(median(lat))
                res[f"{name}_p99"].append(pct(lat, 99))
                res[f"{name}_rps"].append(await throughput(pair, seconds))

            for r in range(rounds):
                await measure("raw", raw_pair)
                await measure("co", lease_pair)
                won = 0
                t0 = time.perf_counter()
                await throughput(race_pair, seconds)
                res["race_rps"].append(won / (time.perf_counter() - t0))
                print(
                    f"round {r + 1}/{rounds}: raw {res['raw_p50'][-1]:.0f}us "
                    f"{res['raw_rps'][-1]:.0f}/s | lease {res['co_p50'][-1]:.0f}us "
                    f"{res['co_rps'][-1]:.0f}/s | contended {res['race_rps'][-1]:.0f}/s",
                    file=sys.stderr,
                )
            await nc.close()
        finally:
            for w in workers:
                w.kill()
                w.wait()
            srv.kill()
    m = {k: median(v) for k, v in res.items()}
    figures = {
        "lease_pair_p50_us": round(m["co_p50"], 1),
        "lease_pair_p99_us": round(m["co_p99"], 1),
        "lease_pairs_per_s": round(m["co_rps"]),
        "raw_kv_pair_p50_us": round(m["raw_p50"], 1),
        "raw_kv_pair_p99_us": round(m["raw_p99"], 1),
        "raw_kv_pairs_per_s": round(m["raw_rps"]),
        "ratio": round(m["co_rps"] / m["raw_rps"], 3),
        "p50_ratio": round(m["co_p50"] / m["raw_p50"], 2),
        "contended_pairs_per_s": round(m["race_rps"]),
        "agents": AGENTS,
        "memory_replicas": 2,
        "rounds": rounds,
        **machine(),
    }
    print(
        f"lease/raw throughput {figures['ratio']}, p50 {figures['lease_pair_p50_us']}us vs "
        f"{figures['raw_kv_pair_p50_us']}us",
        file=sys.stderr,
    )
    emit(figures)


if __name__ == "__main__":
    run_async(main, 120, 900)
