"""Faults under load on the three-host cluster (ops/cluster): three NATS nodes with R3
JetStream, and three engine supervisors (memory, search and lifecycle workers each).

A bounded open-loop load on loopback, 80% `POST /agentmemory/observe` and 20%
`POST /agentmemory/search`, each client homed on one host's REST port and failing over to
the next host when its own does not answer (as behind a load balancer). An observe is
retried until its deadline with the same eventId, as a hook spool would; a search
succeeds when a 200 comes back within `--search-deadline` seconds, retries included. Most
searches look for the unique word of an observation acknowledged earlier (201/200): its
absence from the hits is a read-your-writes miss.

During the load, in order, each after the cluster is whole again:
1. SIGKILL the NATS node leading MEM_EVENTS; it is started again at once (as systemd
   would) and recovery is the time until it is healthy (its streams current).
2. SIGKILL a memory worker process (REST and the write path of one host); its
   supervisor restarts it; recovery is the time until that host's REST answers again.
3. SIGKILL a whole host: its supervisor, its workers and its NATS node, frozen first so
   none outlives the others. It stays down `--host-down` seconds, then starts again on
   its data; recovery is the time until its node is healthy and its engine ready.
Then the load stops, the hosts' capture inboxes drain, and every acknowledged
observation is looked up: `acked_lost` (acknowledged, not stored), `duplicates` (an event
stored or published twice).

The peer, in the same run: the warm-up phase before any fault (`steady_*` figures);
`throughput_ratio` is the whole run's throughput over the warm-up's, `p99_ratio` the whole
run's p99 over the warm-up's.

    python ops/bench/cluster.py [--quick] [--rate R] [--seconds S]

Last line: JSON with nodes, acked_lost, duplicates, search_availability, node_kills,
host_kills, recovery_s per fault, throughput and p99. Quick mode < 3 min; done means
acked_lost 0, duplicates 0, search_availability >= 0.99.
"""

# ruff: noqa: E402
from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from engine import Client, connect
from functions.kernel.records import EVENTS_STREAM
from ops.bench.cluster_workload import (
    SECRET,
    Load,
    Profile,
    Ticks,
    longest_gap,
    rest_answers,
    verify,
    wait_until,
    write_samples,
)
from ops.bench.harness import emit, pct
from ops.cluster.cluster import Cluster, start_on_free_ports

PROFILES = {
    "full": Profile(rate=150, warm=30, settle=30, host_down=30, tail=30),
    "quick": Profile(rate=100, warm=12, settle=10, host_down=12, tail=10),
    "test": Profile(rate=50, warm=6, settle=5, host_down=6, tail=5),
}


async def leader_of(client: Client, stream: str) -> str:
    info = await client.nc.jetstream().stream_info(stream)
    return info.cluster.leader if info.cluster and info.cluster.leader else ""


async def faults(cluster: Cluster, client: Client, p: Profile, log: list[dict[str, Any]]) -> None:
    nodes = cluster.nats

    def whole() -> bool:
        return all(n.healthy() for n in nodes.nodes) and all(rest_answers(h) for h in cluster.hosts)

    await asyncio.sleep(p.warm)
    # 1. The NATS node leading the event stream.
    leader = await leader_of(client, EVENTS_STREAM)
    k = next(i for i, n in enumerate(nodes.nodes) if n.server_name == leader)
    t0 = time.monotonic()
    nodes.kill_node(k)
    await asyncio.to_thread(nodes.nodes[k].start)
    await wait_until(lambda: nodes.nodes[k].healthy(), 120, f"node {leader} healthy")
    log.append({"fault": "nats_node", "target": leader, "at": t0,
                "recovery_s": round(time.monotonic() - t0, 2)})  # fmt: skip
    await wait_until(whole, 120, "cluster whole")
    await asyncio.sleep(p.settle)
    # 2. A memory worker (REST and write path) of another host.
    host = cluster.hosts[(k + 1) % len(cluster.hosts)]
    t0 = time.monotonic()
    old = host.kill_worker("workers.memory")

    def replaced() -> bool:
        fresh = [pid for pid in host.worker_pids("workers.memory") if pid != old]
        return bool(fresh) and rest_answers(host)

    await wait_until(replaced, 120, f"{host.name} memory worker back")
    log.append({"fault": "memory_replica", "target": f"{host.name} pid {old}", "at": t0,
                "recovery_s": round(time.monotonic() - t0, 2)})  # fmt: skip
    await wait_until(whole, 120, "cluster whole")
    await asyncio.sleep(p.settle)
    # 3. A whole host: the one whose node now leads the event stream.
    leader = await leader_of(client, EVENTS_STREAM)
    k = next((i for i, n in enumerate(nodes.nodes) if n.server_name == leader), 2)
    t0 = time.monotonic()
    cluster.kill_host(k)
    await asyncio.sleep(p.host_down)
    await asyncio.to_thread(cluster.restart_host, k)
    log.append({"fault": "host", "target": cluster.hosts[k].name, "at": t0,
                "down_s": p.host_down, "recovery_s": round(time.monotonic() - t0, 2)})  # fmt: skip
    await wait_until(whole, 120, "cluster whole")
    await asyncio.sleep(p.tail)


async def run(profile: Profile, keep: bool, samples_to: Path | None = None) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="cluster-bench-"))
    env = {
        "HOME": str(tmp / "home"),
        "AGENTMEMORY_SECRET": SECRET,
        "ENGINE_LOG_LEVEL": "WARNING",
    }
    t_start = time.monotonic()
    try:
        cluster = await asyncio.to_thread(start_on_free_ports, tmp / "data", env)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    startup = time.monotonic() - t_start
    try:
        client = Client(await connect(cluster.nats.url, str(cluster.credentials)))
        load = Load(cluster.hosts, profile, run=f"r{int(time.time())}")
        stop = asyncio.Event()
        log: list[dict[str, Any]] = []
        ticks = Ticks()
        ticker = await ticks.start(client)
        t_load = time.monotonic()
        driver = asyncio.create_task(load.drive(stop))
        try:
            await faults(cluster, client, profile, log)
        finally:
            stop.set()
            await driver
        t_end = time.monotonic()
        await ticker.drain()
        result = await verify(cluster, client, load)
        healed = max((f["at"] + f["recovery_s"] for f in log), default=t_load)
        result.update(ticks.figures(t_load, t_end, healed))
        await client.nc.close()
    finally:
        await asyncio.to_thread(cluster.kill)
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)
    s = load.samples
    if samples_to is not None:
        write_samples(samples_to, s, log, t_load, ticks.times)
    obs = [x for x in s if x.kind == "observe"]
    srch = [x for x in s if x.kind == "search"]
    lat = [1000 * (x.done - x.started) for x in s if x.ok]
    steady = [x for x in s if x.ok and x.started < t_load + profile.warm]
    steady_tp = sum(1 for x in steady if x.done <= t_load + profile.warm) / profile.warm
    steady_p99 = pct([1000 * (x.done - x.started) for x in steady], 99)
    for f in log:
        end = f["at"] + f["recovery_s"] + profile.settle
        f["outage_observe_s"] = round(longest_gap(s, "observe", f["at"], end), 2)
        f["outage_search_s"] = round(longest_gap(s, "search", f["at"], end), 2)
        f["failed_searches"] = sum(
            1 for x in srch if not x.ok and f["at"] - profile.search_deadline <= x.started <= end
        )
        f.pop("at")
    searches_ok = sum(1 for x in srch if x.ok)
    load_s = t_end - t_load
    return {
        "bench": "cluster",
        "nodes": len(cluster.nats.nodes),
        "hosts": len(cluster.hosts),
        "replicas": 3,
        **result,
        "search_availability": round(searches_ok / len(srch), 4) if srch else None,
        "searches": len(srch),
        "search_within_1s": round(
            sum(1 for x in srch if x.ok and x.done - x.started <= 1.0) / len(srch), 4
        )
        if srch
        else None,
        "search_misses": load.stats["search_misses"],
        "search_stale": load.stats["search_stale"],
        "search_checked": load.stats["search_checked"],
        "node_kills": sum(1 for f in log if f["fault"] == "nats_node"),
        "worker_kills": sum(1 for f in log if f["fault"] == "memory_replica"),
        "host_kills": sum(1 for f in log if f["fault"] == "host"),
        "recovery_s": {f["fault"]: f["recovery_s"] for f in log},
        "faults": log,
        "throughput_ops_s": round(len(lat) / load_s, 1),
        "rate_ops_s": profile.rate,
        "p99_ms": round(pct(lat, 99), 1),
        "observe_p99_ms": round(pct([1000 * (x.done - x.started) for x in obs if x.ok], 99), 1),
        "search_p99_ms": round(pct([1000 * (x.done - x.started) for x in srch if x.ok], 99), 1),
        "steady_throughput_ops_s": round(steady_tp, 1),
        "throughput_ratio": round(len(lat) / load_s / steady_tp, 3) if steady_tp else None,
        "steady_p99_ms": round(steady_p99, 1),
        "p99_ratio": round(pct(lat, 99) / steady_p99, 1) if steady_p99 else None,
        "steady_p50_ms": round(pct([1000 * (x.done - x.started) for x in steady], 50), 1),
        "observe_retried": sum(1 for x in obs if x.attempts > 1),
        "observe_gave_up": load.stats["observe_gave_up"],
        "replies": {k: v for k, v in sorted(load.stats.items()) if k.startswith("observe_")},
        "errors": {
            k: v
            for k, v in sorted(load.stats.items())
            if not k.startswith(("observe_", "search_checked", "search_misses", "search_stale"))
        },
        "search_deadline_s": profile.search_deadline,
        "startup_s": round(startup, 2),
        "load_s": round(load_s, 1),
        "seconds": round(time.monotonic() - t_start, 1),
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="about two minutes")
    ap.add_argument("--test", action="store_true", help="the smaller run the test suite makes")
    ap.add_argument("--rate", type=float, default=0, help="operations per second")
    ap.add_argument("--keep", action="store_true", help="keep the data dirs and logs")
    ap.add_argument("--samples", type=Path, help="write every operation and fault (JSON lines)")
    args = ap.parse_args()
    profile = PROFILES["test" if args.test else "quick" if args.quick else "full"]
    if args.rate:
        profile.rate = args.rate
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    out = asyncio.run(run(profile, args.keep, args.samples))
    emit(out)
    ok = (
        out["acked_lost"] == 0
        and out["duplicates"] == 0
        and (out["search_availability"] or 0) >= 0.99
        and out["node_kills"] >= 1
        and out["host_kills"] >= 1
    )
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
