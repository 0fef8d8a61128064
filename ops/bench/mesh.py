"""Team memory across machines: two product stacks (config/engine.yaml, each its own
nats-server, JetStream domain and data dir) joined by one leaf link that runs through a
loopback relay (ops/tcp_relay.Relay) the benchmark cuts and restores.

Propagation: a memory shared on A (`team/share`, from sending the request) until B has
applied it (the record in B's storage and its `memory.added` on B's MEM_EVENTS), one at a
time, p50/p99; `share_reply_p50_ms` is the part spent in A's reply. Its peers over the same
link, in the same run: a raw core publish on A to a subscriber on B (what the link itself
costs) and a raw JetStream stream on A sourced by a stream on B, read by an ordered
consumer (what sourcing costs without our work on either side). `ratio`: our p50 over the
raw publish's; `ratio_vs_sourcing`: over the raw sourcing's.

Catch-up: the link is cut, N memories are shared on A (8 writers), the link is restored;
the seconds until B has all N (`catchup_s`, relinking included: the team log sees a source
stale after 5 s without a heartbeat and retries it every 3 s), until the first
(`catchup_relink_s`), and the rate in between (`catchup_apply_per_s`). The raw sourced
stream goes through the same outage with N messages, its source re-added once a second
after the restore (so the server's backoff does not count against it); `catchup_ratio`:
our catch-up time over its.

    python ops/bench/mesh.py [--quick]
"""

from __future__ import annotations

import asyncio
import json
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js.api import StreamConfig

from engine import Client, Source, connect
from engine.settings import environ
from ops.bench.harness import ROOT, emit, free_block, free_port, machine, median, pct, run_async
from ops.tcp_relay import Relay

SECRET = "mesh-bench-secret"
TEAM = "bench-team"
RAW_SUBJECT = "bench.raw"
RAW_STREAM = "BENCH_RAW"
COPY_STREAM = "BENCH_COPY"
WRITERS = 8
"""Concurrent writers on A while the link is down."""


def words() -> str:
    """Content unlike every other memory's (similar content is taken for a new version of
    the memory it resembles, and only a chain's head is announced)."""
    return " ".join(secrets.token_hex(4) for _ in range(8))


class Stack:
    """`python -m engine run` of the product's config with this instance's name and link."""

    def __init__(self, tmp: Path, name: str, leaf: dict[str, Any], peers: list[str]) -> None:
        self.name = name
        self.dir = tmp / name
        self.home = self.dir / "home"
        self.home.mkdir(parents=True)
        self.data = self.dir / "data"
        self.anchor = free_block(6)
        self.url = f"http://127.0.0.1:{self.anchor}"
        cfg = yaml.safe_load((ROOT / "config" / "engine.yaml").read_text())
        cfg.pop("instance", None)
        cfg["nats"]["domain"] = name
        cfg["nats"]["leafnodes"].update(leaf)
        cfg["nats"]["leafnodes"]["share"] = {
            "streams": ["TEAM", RAW_STREAM],
            "subjects": [f"{RAW_SUBJECT}.>"],
        }
        cfg.setdefault("env", {}).update(
            {
                "ENGINE_LOG_LEVEL": "WARNING",
                "AGENTMEMORY_SECRET": SECRET,
                "HOME": str(self.home),
                "AGENTMEMORY_EXPORT_ROOT": str(self.home / ".agentmemory"),
                "AGENTMEMORY_INBOX_DIR": str(self.home / "inbox"),
                "TEAM_ID": TEAM,
                "USER_ID": f"dev-{name}",
                "AGENTMEMORY_MESH_PEERS": ",".join(peers),
            }
        )
        self.config = self.dir / "engine.yaml"
        self.config.write_text(yaml.safe_dump(cfg))
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> Stack:
        argv = [sys.executable, "-m", "engine", "run", "--config", str(self.config)]
        argv += ["--data-dir", str(self.data), "--port", str(self.anchor), "--quiet"]
        env = environ(PYTHONPATH=str(ROOT))
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
        self.proc = proc
        err = proc.stderr
        assert err is not None
        for line in err:
            if line.startswith("engine ready"):
                break
        else:
            raise RuntimeError(f"stack {self.name} did not start")
        threading.Thread(target=lambda: [None for _ in err], daemon=True).start()
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    @property
    def leaf_credentials(self) -> Path:
        return self.data / "nats" / "leaf-credentials.json"

    async def nats(self) -> NATS:
        ports = json.loads((self.data / "engine.pid").read_text())["ports"]
        creds = str(self.data / "nats" / "credentials.json")
        return await connect(f"nats://127.0.0.1:{ports['nats']}", creds, name="mesh-bench")

    def http(self) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {SECRET}"}
        return httpx.AsyncClient(base_url=self.url, headers=headers, timeout=60)


async def until(check: Callable[[], Awaitable[bool]], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        await asyncio.sleep(0.2)


async def serving(h: httpx.AsyncClient) -> bool:
    try:
        a = await h.get("/agentmemory/team/feed")
        b = await h.post("/agentmemory/search", json={"query": "x"})
    except httpx.HTTPError:
        return False
    return a.status_code == 200 and b.status_code == 200


async def converged(*hs: httpx.AsyncClient) -> bool:
    for h in hs:
        r = await h.post("/agentmemory/mesh/sync", json={"waitSeconds": 5})
        if r.status_code != 200 or not r.json()["converged"]:
            return False
    return True


class Arrivals:
    """When each awaited key showed up on B (perf_counter seconds)."""

    def __init__(self) -> None:
        self.at: dict[str, float] = {}
        self.waiting: dict[str, asyncio.Future[float]] = {}

    def expect(self, key: str) -> asyncio.Future[float]:
        fut: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        if key in self.at:
            fut.set_result(self.at[key])
        else:
            self.waiting[key] = fut
        return fut

    def arrived(self, key: str) -> None:
        now = time.perf_counter()
        self.at.setdefault(key, now)
        fut = self.waiting.pop(key, None)
        if fut is not None and not fut.done():
            fut.set_result(now)

    async def all_of(self, keys: list[str], timeout: float) -> list[float]:
        waits = asyncio.gather(*(self.expect(k) for k in keys))
        deadline = time.monotonic() + timeout
        while True:
            try:
                return list(await asyncio.wait_for(asyncio.shield(waits), 5.0))
            except TimeoutError:
                got = sum(1 for k in keys if k in self.at)
                print(f"  ... {got}/{len(keys)} arrived", file=sys.stderr)
                if time.monotonic() > deadline:
                    waits.cancel()
                    raise


async def main(quick: bool) -> None:
    n_ours = 100 if quick else 500
    n_raw = 200 if quick else 1000
    n_outage = 300 if quick else 3000
    t_begin = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        leaf_port = free_port()
        a = Stack(tmp, "a", {"listen": f"127.0.0.1:{leaf_port}"}, ["b"]).start()
        relay = Relay(leaf_port).start()
        remote = {
            "url": f"nats-leaf://127.0.0.1:{relay.port}",
            "credentials": str(a.leaf_credentials),
        }
        b: Stack | None = None
        try:
            b = Stack(tmp, "b", {"remotes": [remote]}, ["a"]).start()
            started_s = time.monotonic() - t_begin
            async with a.http() as ha, b.http() as hb:
                await until(lambda: serving(ha), 120, "stack a")
                await until(lambda: serving(hb), 120, "stack b")
                await until(lambda: converged(ha, hb), 60, "the mesh")
                figures = await run(a, b, ha, hb, relay, n_ours, n_raw, n_outage)
        finally:
            relay.close()
            if b is not None:
                b.stop()
            a.stop()
    figures.update(
        startup_s=round(started_s, 1),
        total_s=round(time.monotonic() - t_begin, 1),
        **machine(),
    )
    print(
        f"propagation p50 {figures['propagation_p50_ms']} ms (raw publish "
        f"{figures['raw_publish_p50_ms']} ms, raw sourcing {figures['raw_sourcing_p50_ms']} ms); "
        f"catch-up of {n_outage}: {figures['catchup_s']} s, {figures['catchup_records_per_s']}/s",
        file=sys.stderr,
    )
    emit(figures)


async def run(
    a: Stack,
    b: Stack,
    ha: httpx.AsyncClient,
    hb: httpx.AsyncClient,
    relay: Relay,
    n_ours: int,
    n_raw: int,
    n_outage: int,
) -> dict[str, Any]:
    na, nb = await a.nats(), await b.nats()
    try:
        return await _measure(na, nb, ha, relay, n_ours, n_raw, n_outage)
    finally:
        await na.close()
        await nb.close()


async def _measure(
    na: NATS,
    nb: NATS,
    ha: httpx.AsyncClient,
    relay: Relay,
    n_ours: int,
    n_raw: int,
    n_outage: int,
) -> dict[str, Any]:
    ours, raw, sourced = Arrivals(), Arrivals(), Arrivals()

    async def on_memory(msg: Msg) -> None:
        memory = json.loads(msg.data).get("memory") or {}
        if memory.get("id"):
            ours.arrived(memory["id"])

    async def on_raw(msg: Msg) -> None:
        raw.arrived(msg.subject)

    async def on_sourced(msg: Msg) -> None:
        sourced.arrived(msg.subject)

    await nb.subscribe("mem.events.memory", cb=on_memory)
    await nb.subscribe(f"{RAW_SUBJECT}.>", cb=on_raw)
    await nb.flush()
    ja, jb = na.jetstream(), nb.jetstream()
    await ja.add_stream(name=RAW_STREAM, subjects=["bench.js.>"])
    await jb.add_stream(StreamConfig(name=COPY_STREAM, sources=[Source(RAW_STREAM, "a").nats()]))
    await jb.subscribe("bench.js.>", stream=COPY_STREAM, ordered_consumer=True, cb=on_sourced)

    # The subscription's interest crosses the link a moment after it is made.
    for i in range(200):
        await na.publish(f"{RAW_SUBJECT}.warm.{i}", b"x")
        try:
            await asyncio.wait_for(raw.expect(f"{RAW_SUBJECT}.warm.{i}"), 0.25)
            break
        except TimeoutError:
            continue

    async def raw_once(i: int) -> float:
        subject = f"{RAW_SUBJECT}.{i}"
        fut = raw.expect(subject)
        t0 = time.perf_counter()
        await na.publish(subject, b'{"n":%d}' % i)
        return (await asyncio.wait_for(fut, 10)) - t0

    async def sourced_once(i: int) -> float:
        subject = f"bench.js.{i}"
        fut = sourced.expect(subject)
        t0 = time.perf_counter()
        await ja.publish(subject, b'{"n":%d}' % i)
        return (await asyncio.wait_for(fut, 10)) - t0

    async def remember(content: str) -> str:
        r = await ha.post("/agentmemory/remember", json={"content": content})
        r.raise_for_status()
        return str(r.json()["memory"]["id"])

    async def share(mid: str) -> None:
        r = await ha.post("/agentmemory/team/share", json={"itemId": mid, "itemType": "memory"})
        r.raise_for_status()

    async def ours_once(i: int) -> float:
        mid = await remember(f"propagation sample {i}: {words()}")
        fut = ours.expect(mid)
        t0 = time.perf_counter()
        await share(mid)
        replies.append(time.perf_counter() - t0)
        return (await asyncio.wait_for(fut, 30)) - t0

    replies: list[float] = []
    for i in range(10):  # warm-up, all three paths
        await raw_once(-1 - i)
        await sourced_once(-1 - i)
        await ours_once(-1 - i)
    raw_lat = [await raw_once(i) for i in range(n_raw)]
    sourced_lat = [await sourced_once(i) for i in range(n_raw)]
    replies.clear()
    ours_lat = [await ours_once(i) for i in range(n_ours)]
    print(
        f"propagation p50: ours {median(ours_lat) * 1e3:.1f} ms, raw publish "
        f"{median(raw_lat) * 1e3:.2f} ms, raw sourcing {median(sourced_lat) * 1e3:.2f} ms",
        file=sys.stderr,
    )

    # Outage 1: the raw sourced stream.
    relay.cut()
    await asyncio.sleep(1.0)
    keys = [f"bench.js.out.{i}" for i in range(n_outage)]
    for k in keys:
        await ja.publish(k, b"{}")
    t_restore = time.perf_counter()
    relay.restore()
    copy = Client(nb).stream(COPY_STREAM)
    done = asyncio.Event()

    async def resource_raw() -> None:
        while not done.is_set():
            await asyncio.sleep(1.0)
            if done.is_set():
                break
            await copy.set_sources([])
            await copy.set_sources([Source(RAW_STREAM, "a")])

    poke = asyncio.get_running_loop().create_task(resource_raw())
    try:
        raw_times = await sourced.all_of(keys, timeout=300)
    finally:
        done.set()
        await poke
    raw_catch = _catchup(raw_times, t_restore, n_outage)
    print(f"raw sourcing catch-up: {raw_catch}", file=sys.stderr)

    # Outage 2: memories shared on A while B is away.
    relay.cut()
    await asyncio.sleep(1.0)
    gate = asyncio.Semaphore(WRITERS)
    mids: list[str] = []

    async def write(i: int) -> None:
        async with gate:
            mid = await remember(f"written offline {i}: {words()}")
            await share(mid)
            mids.append(mid)

    t_write = time.perf_counter()
    await asyncio.gather(*(write(i) for i in range(n_outage)))
    write_s = time.perf_counter() - t_write
    t_restore = time.perf_counter()
    relay.restore()
    our_times = await ours.all_of(mids, timeout=600)
    our_catch = _catchup(our_times, t_restore, n_outage)
    print(f"our catch-up: {our_catch}", file=sys.stderr)

    return {
        "propagation_p50_ms": round(median(ours_lat) * 1e3, 2),
        "propagation_p99_ms": round(pct(ours_lat, 99) * 1e3, 2),
        "share_reply_p50_ms": round(median(replies) * 1e3, 2),
        "raw_publish_p50_ms": round(median(raw_lat) * 1e3, 3),
        "raw_publish_p99_ms": round(pct(raw_lat, 99) * 1e3, 3),
        "raw_sourcing_p50_ms": round(median(sourced_lat) * 1e3, 3),
        "raw_sourcing_p99_ms": round(pct(sourced_lat, 99) * 1e3, 3),
        "ratio": round(median(ours_lat) / median(raw_lat), 1),
        "ratio_vs_sourcing": round(median(ours_lat) / median(sourced_lat), 1),
        "outage_records": n_outage,
        "offline_writes_per_s": round(n_outage / write_s, 1),
        "catchup_s": our_catch["catchup_s"],
        "catchup_relink_s": our_catch["relink_s"],
        "catchup_records_per_s": our_catch["records_per_s"],
        "catchup_apply_per_s": our_catch["apply_per_s"],
        "raw_catchup_s": raw_catch["catchup_s"],
        "raw_catchup_relink_s": raw_catch["relink_s"],
        "catchup_ratio": round(our_catch["catchup_s"] / raw_catch["catchup_s"], 2),
        "samples": {"ours": n_ours, "raw": n_raw},
    }


def _catchup(times: list[float], t_restore: float, n: int) -> dict[str, float]:
    """From the restore: until the first record is there (the link and its source back),
    until the last; the rate between the first and the last (a burst copied at once has
    no meaningful rate: the raw stream's is not reported)."""
    first, last = min(times), max(times)
    return {
        "catchup_s": round(last - t_restore, 2),
        "relink_s": round(first - t_restore, 2),
        "records_per_s": round(n / (last - t_restore), 1),
        "apply_per_s": round((n - 1) / max(last - first, 1e-6), 1),
    }


if __name__ == "__main__":
    run_async(main, 300, 1800)
