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
import itertools
import os
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import msgspec

from engine import Client, Context, Worker, connect
from functions.kernel.records import (
    EVENTS_STREAM,
    OBSERVATIONS_BUCKET,
    Observation,
    ObservationAdded,
)
from ops.bench._common import emit, pct
from ops.bench._rest import Connection, HttpFailure
from ops.cluster.cluster import Cluster, start_on_free_ports
from ops.cluster.hosts import Host

SECRET = "cluster-bench-secret"
PROJECT = "clusterbench"
EVENT_SUBJECTS = "mem.events.observation.>"
WORDS = (
    "parser cache token refresh migration schema index retry queue worker socket timeout "
    "deploy rollback config secret header cookie session router handler middleware build "
    "compile linker fixture mock assert coverage profile memory leak thread lock deadlock "
    "replica leader follower snapshot stream consumer subject bucket key value revision"
).split()


@dataclass
class Profile:
    rate: float
    """Operations started per second (open loop)."""
    warm: float
    settle: float
    host_down: float
    tail: float
    in_flight: int = 400
    observe_deadline: float = 60.0
    """A hook spool resends for much longer; a minute covers every fault here."""
    search_deadline: float = 5.0
    """What a searching agent waits, retries included."""
    observe_attempt: float = 6.0
    search_attempt: float = 2.5
    """One search attempt: longer than the freshness fence (2 s, which a search waits out
    while the event stream elects a leader), short enough to try another host once."""


PROFILES = {
    "full": Profile(rate=150, warm=30, settle=30, host_down=30, tail=30),
    "quick": Profile(rate=100, warm=12, settle=10, host_down=12, tail=10),
    "test": Profile(rate=50, warm=6, settle=5, host_down=6, tail=5),
}


def token(i: int) -> str:
    """A word of letters only, unique to observation i (the analyser keeps it whole)."""
    out = ""
    n = i
    for _ in range(6):
        out += chr(ord("a") + n % 26)
        n //= 26
    return "zq" + out


def observe_body(run: str, i: int, rng: random.Random) -> dict[str, Any]:
    words = " ".join(rng.choice(WORDS) for _ in range(12))
    return {
        "hookType": "post_tool_use",
        "sessionId": f"{run}-s{i % 24}",
        "project": PROJECT,
        "cwd": "/work/clusterbench",
        "timestamp": "2026-11-29T10:00:00.000Z",
        "eventId": f"toolu_{run}_{i:07d}",
        "data": {
            "tool_name": "Bash",
            "tool_input": {"command": f"pytest -q tests/test_{token(i)}.py"},
            "tool_output": f"{token(i)} {words}\n" * 4,
        },
    }


@dataclass
class Sample:
    kind: str
    started: float
    done: float
    ok: bool
    attempts: int
    host: int = -1
    """The host that answered (-1: none did)."""


@dataclass
class Load:
    hosts: list[Host]
    profile: Profile
    run: str
    rng: random.Random = field(default_factory=lambda: random.Random(18))
    samples: list[Sample] = field(default_factory=list)
    acked: dict[int, str] = field(default_factory=dict)
    """Observation index -> the id its acknowledgement named."""
    searchable: list[int] = field(default_factory=list)
    """Observations acknowledged as stored (201/200), whose word a search must find."""
    stats: Counter[str] = field(default_factory=Counter)
    _pools: dict[int, list[Connection]] = field(default_factory=dict)
    _next: int = 0

    def _take(self, host: Host) -> Connection:
        pool = self._pools.setdefault(host.index, [])
        return pool.pop() if pool else Connection(host.address, host.port(0), SECRET)

    def _give(self, host: Host, conn: Connection) -> None:
        self._pools.setdefault(host.index, []).append(conn)

    async def _attempt(self, host: Host, path: str, body: Any, timeout: float) -> tuple[int, bytes]:
        conn = self._take(host)
        try:
            out = await asyncio.wait_for(conn.request("POST", path, body), timeout)
        except (HttpFailure, TimeoutError):
            conn.close()
            raise
        self._give(host, conn)
        return out

    async def _call(
        self, home: int, path: str, body: Any, deadline: float, attempt_s: float,
        ok: tuple[int, ...],
    ) -> tuple[int, bytes, int, int] | None:  # fmt: skip
        """Try `home`, then the other hosts in turn, until a status in `ok` or the
        deadline: (status, body, attempts, host that answered). None when the deadline
        passed."""
        attempt = 0
        while time.monotonic() < deadline:
            host = self.hosts[(home + attempt) % len(self.hosts)]
            attempt += 1
            try:
                left = deadline - time.monotonic()
                status, data = await self._attempt(host, path, body, min(attempt_s, left))
            except (HttpFailure, TimeoutError) as exc:
                self.stats[f"{path.rsplit('/', 1)[1]}_{type(exc).__name__}"] += 1
                await asyncio.sleep(min(0.05 * attempt, 0.5))
                continue
            if status in ok:
                return status, data, attempt, host.index
            self.stats[f"{path.rsplit('/', 1)[1]}_{status}"] += 1
            if 400 <= status < 500 and status not in (408, 429):
                raise RuntimeError(f"{path} refused with {status}: {data[:300]!r}")
            await asyncio.sleep(min(0.05 * attempt, 0.5))
        return None

    async def observe(self, i: int) -> None:
        t0 = time.monotonic()
        body = observe_body(self.run, i, self.rng)
        got = await self._call(i % len(self.hosts), "/agentmemory/observe", body,
                               t0 + self.profile.observe_deadline, self.profile.observe_attempt,
                               (200, 201, 202))  # fmt: skip
        done = time.monotonic()
        if got is None:
            self.stats["observe_gave_up"] += 1
            self.samples.append(Sample("observe", t0, done, False, 0))
            return
        status, data, attempts, host = got
        reply = msgspec.json.decode(data)
        self.acked[i] = reply["observationId"]
        self.stats[f"observe_{reply['status']}"] += 1
        if status in (200, 201):
            self.searchable.append(i)
        self.samples.append(Sample("observe", t0, done, True, attempts, host))

    async def search(self, k: int) -> None:
        t0 = time.monotonic()
        target = self.rng.choice(self.searchable) if self.searchable else None
        query = token(target) if target is not None else " ".join(self.rng.sample(WORDS, 2))
        body = {"query": query, "limit": 10, "project": PROJECT, "format": "compact"}
        got = await self._call(k % len(self.hosts), "/agentmemory/search", body,
                               t0 + self.profile.search_deadline, self.profile.search_attempt,
                               (200,))  # fmt: skip
        done = time.monotonic()
        self.samples.append(
            Sample("search", t0, done, got is not None, got[2] if got else 0,
                   got[3] if got else -1)
        )  # fmt: skip
        if got is None:
            self.stats["search_failed"] += 1
            return
        if target is not None:
            ids = {h.get("id") for h in msgspec.json.decode(got[1]).get("results", [])}
            self.stats["search_checked"] += 1
            if self.acked[target] not in ids:
                self.stats["search_misses"] += 1

    async def drive(self, stop: asyncio.Event) -> None:
        """Start `rate` operations a second, at most `in_flight` at once, until `stop`."""
        interval = 1.0 / self.profile.rate
        tasks: set[asyncio.Task[None]] = set()
        next_at = time.monotonic()
        n_obs = n_search = 0
        while not stop.is_set():
            if len(tasks) < self.profile.in_flight:
                if self.rng.random() < 0.8:
                    t = asyncio.create_task(self.observe(n_obs))
                    n_obs += 1
                else:
                    t = asyncio.create_task(self.search(n_search))
                    n_search += 1
                tasks.add(t)
                t.add_done_callback(tasks.discard)
            else:
                self.stats["throttled"] += 1
            next_at += interval
            delay = next_at - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            else:
                next_at = time.monotonic()
        self.stats["observe_sent"] = n_obs
        self.stats["search_sent"] = n_search
        if tasks:
            await asyncio.gather(*tasks)
        for pool in self._pools.values():
            for c in pool:
                c.close()


@dataclass
class Ticks:
    """Calls of a cron trigger firing every second, by tick (its Idempotency-Key): cron
    fires once per tick across the hosts, through the faults."""

    calls: Counter[str] = field(default_factory=Counter)
    times: list[float] = field(default_factory=list)

    async def start(self, client: Client) -> Worker:
        worker = Worker("clusterbench-ticks")

        @worker.function("clusterbench::tick")
        async def tick(req: Any, ctx: Context) -> None:
            self.calls[ctx.headers.get("Idempotency-Key", "?")] += 1
            self.times.append(time.monotonic())

        worker.trigger("cron", "clusterbench::tick", schedule="@every 1s")
        await worker.start(client.nc, client)
        return worker

    def figures(self, start: float, end: float, healed: float) -> dict[str, Any]:
        """`healed`: when the last fault had recovered."""
        inside = sorted(t for t in self.times if start <= t <= end)
        return {
            "cron_ticks": len(self.calls),
            "cron_ticks_after_faults": sum(1 for t in inside if t >= healed),
            "cron_after_faults_s": round(end - healed, 1),
            # A tick whose call ran but whose acknowledgement died with its host comes again
            # with the same Idempotency-Key (at least once): the function can tell.
            "cron_duplicates": sum(n - 1 for n in self.calls.values()),
            "cron_longest_gap_s": round(
                max((b - a for a, b in itertools.pairwise([start, *inside, end])), default=0), 2
            ),
        }


def longest_gap(samples: list[Sample], kind: str, start: float, end: float) -> float:
    """Longest time in [start, end] with no successful completion of `kind`."""
    times = sorted(s.done for s in samples if s.kind == kind and s.ok and start <= s.done <= end)
    points = [start, *times, end]
    return max(b - a for a, b in itertools.pairwise(points)) if times else end - start


async def leader_of(client: Client, stream: str) -> str:
    info = await client.nc.jetstream().stream_info(stream)
    return info.cluster.leader if info.cluster and info.cluster.leader else ""


async def wait_until(probe: Any, timeout: float, what: str) -> float:
    t0 = time.monotonic()
    while not await asyncio.to_thread(probe):
        if time.monotonic() - t0 > timeout:
            raise RuntimeError(f"{what} not reached in {timeout:.0f}s")
        await asyncio.sleep(0.05)
    return time.monotonic() - t0


def rest_answers(host: Host) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(f"{host.rest_url}/agentmemory/livez", timeout=1) as r:
            return bool(r.status == 200)
    except OSError:
        return False


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


async def verify(cluster: Cluster, client: Client, load: Load) -> dict[str, Any]:
    def pending() -> int:
        return sum(1 for h in cluster.hosts for _ in h.data_dir.rglob("inbox/pending/*.json"))

    deadline = time.monotonic() + 90
    while pending() and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    st = await client.bucket(OBSERVATIONS_BUCKET)
    ids = list(load.acked.values())
    present: set[str] = set()
    for chunk in range(0, len(ids), 400):
        got = await asyncio.gather(*(st.get(oid, Observation) for oid in ids[chunk : chunk + 400]))
        present.update(o.id for o in got if o is not None)
    js = client.nc.jetstream()
    # Events are per project, not per observation: count them by the observation they carry.
    per_obs: Counter[str] = Counter()
    async for m in client.stream(EVENTS_STREAM).read(subject=EVENT_SUBJECTS):
        per_obs[msgspec.json.decode(m.data, type=ObservationAdded).observation.id] += 1
    kv = await js.stream_info(f"KV_{OBSERVATIONS_BUCKET}")
    stored_ids = set(load.acked.values())
    return {
        "acked": len(load.acked),
        "acked_lost": sum(1 for oid in ids if oid not in present) + (len(ids) - len(stored_ids)),
        "duplicates": sum(n - 1 for n in per_obs.values() if n > 1),
        "events_published": len(per_obs),
        "observations_stored": kv.state.messages,
        "inbox_left": pending(),
    }


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
            if not k.startswith(("observe_", "search_checked", "search_misses"))
        },
        "search_deadline_s": profile.search_deadline,
        "startup_s": round(startup, 2),
        "load_s": round(load_s, 1),
        "seconds": round(time.monotonic() - t_start, 1),
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }


def write_samples(
    path: Path, samples: list[Sample], log: list[dict[str, Any]], t0: float, ticks: list[float]
) -> None:
    """Every operation, fault and cron call as JSON lines, times in seconds from the load's
    start."""
    import json

    with path.open("w") as f:
        for t in ticks:
            f.write(json.dumps({"tick": round(t - t0, 3)}) + "\n")
        for fault in log:
            f.write(json.dumps({"fault": fault["fault"], "target": fault["target"],
                                "at": round(fault["at"] - t0, 3),
                                "recovery_s": fault["recovery_s"]}) + "\n")  # fmt: skip
        for x in samples:
            f.write(json.dumps({"kind": x.kind, "at": round(x.started - t0, 3),
                                "ms": round(1000 * (x.done - x.started), 1), "ok": x.ok,
                                "attempts": x.attempts, "host": x.host}) + "\n")  # fmt: skip


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
