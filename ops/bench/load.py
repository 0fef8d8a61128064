"""Load and soak of the default install (`python -m engine run --config config/engine.yaml`,
the laptop layout), through REST on loopback.

Load (default): `--clients` (50) closed-loop clients for `--seconds` (60), 80%
`POST /agentmemory/observe` (hook payloads, ~1 KB, a new eventId each) and 20%
`POST /agentmemory/search`. The peer, in the same run and with the same client code: a
bare starlette/uvicorn app that parses the same JSON and answers both routes at once
(the floor of HTTP and of this client). Last line: JSON with throughput, p50/p99 per
route, errors, and CPU and RSS of every process of the engine.

Soak (`--soak`, for operators: up to hours): the same clients observe only, until
`--observations` (1,000,000) are stored, with one search a second as a probe. Every
`--every` (10,000) observations it records the observations per second, the CPU of all
the engine's processes per observation (ingest cost), and each process's RSS. The series
goes to `--out` (JSON lines) and a plot to `--svg`. Last line: JSON with the cost per
observation at 10k, 100k and the end, RSS per 100k observations, and how far it got.

    python ops/bench/load.py [--quick] [--clients 50] [--seconds 60]
    python ops/bench/load.py --soak [--observations 1000000] [--every 10000]
                             [--out docs/perf/soak.jsonl] [--svg docs/perf/soak.svg]
                             [--max-minutes M]
"""

# ruff: noqa: E402
from __future__ import annotations

import sys
from pathlib import Path

# ops/bench holds an http.py: keep this script's folder from shadowing the stdlib.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent.resolve()]

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from engine.config import process_usage
from ops.bench._common import emit, pct
from ops.bench._http import free_port
from ops.bench._rest import Connection, HttpFailure
from ops.bench.soak_plot import plot
from ops.cluster.cluster import free_anchor
from ops.procfs import cmdline, process_tree

SECRET = "load-bench-secret"
PROJECT = "loadbench"


def vocabulary(n: int = 3000, seed: int = 5) -> list[str]:
    """Synthetic words with a code-like spread (a Zipf-ish draw over them below)."""
    rng = random.Random(seed)
    syll = ["ka", "lo", "mi", "ter", "sun", "par", "dex", "qua", "rin", "vol", "ex", "ob"]
    return ["".join(rng.choice(syll) for _ in range(rng.randint(2, 4))) for _ in range(n)]


WORDS = vocabulary()


def words(rng: random.Random, k: int) -> str:
    n = len(WORDS)
    return " ".join(WORDS[min(n - 1, int(rng.paretovariate(1.1)) - 1)] for _ in range(k))


def observe_body(tag: str, i: int, rng: random.Random) -> dict[str, Any]:
    return {
        "hookType": "post_tool_use",
        "sessionId": f"{tag}-s{i % 64}",
        "project": PROJECT,
        "cwd": "/work/loadbench",
        "timestamp": "2026-11-29T10:00:00.000Z",
        "eventId": f"toolu_{tag}_{i:08d}",
        "data": {
            "tool_name": "Bash",
            "tool_input": {"command": f"pytest -q tests/test_{WORDS[i % len(WORDS)]}.py"},
            "tool_output": "\n".join(words(rng, 12) for _ in range(8)),
        },
    }


# ---- processes -------------------------------------------------------------------------
class Engine:
    """The default install as a user starts it, on a free port block and a temp data dir."""

    def __init__(self, tmp: Path, config: Path) -> None:
        self.anchor = free_anchor(1)
        self.tmp = tmp
        self.config = config
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> float:
        env = dict(os.environ, HOME=str(self.tmp / "home"), PYTHONPATH=str(ROOT),
                   AGENTMEMORY_SECRET=SECRET, ENGINE_LOG_LEVEL="WARNING")  # fmt: skip
        t0 = time.monotonic()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "engine", "run", "--config", str(self.config),
             "--data-dir", str(self.tmp / "data"), "--port", str(self.anchor), "--quiet"],
            cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )  # fmt: skip
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            if raw.startswith(b"engine ready"):
                break
        else:
            raise RuntimeError("the engine did not start")
        threading.Thread(target=lambda: [None for _ in self.proc.stderr or []],  # type: ignore[union-attr]
                         daemon=True).start()  # fmt: skip
        return time.monotonic() - t0

    @property
    def rest_port(self) -> int:
        return self.anchor

    def usage(self) -> dict[str, tuple[float, float]]:
        """CPU seconds and RSS MB of every process of the engine, by a readable label."""
        assert self.proc is not None
        out: dict[str, tuple[float, float]] = {}
        for pid in process_tree(self.proc.pid):
            cpu, rss = process_usage(pid)
            if cpu is None or rss is None:
                continue
            words_ = cmdline(pid)
            if "engine.host" in words_:
                name = "+".join(w.split(".")[-1] for w in words_[words_.index("engine.host") + 1 :])
            elif "-m" in words_:
                name = words_[words_.index("-m") + 1]
            else:
                name = Path(words_[0]).name if words_ else str(pid)
            out[f"{name}#{pid}"] = (cpu, rss)
        return out

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(90)
            except subprocess.TimeoutExpired:
                for pid in process_tree(self.proc.pid):
                    os.kill(pid, signal.SIGKILL)


def serve_bare(port: int) -> None:
    import msgspec
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    dec = msgspec.json.Decoder()

    async def observe(request: Request) -> Response:
        body = dec.decode(await request.body())
        out = {"status": "accepted", "observationId": str(body.get("eventId", ""))}
        return Response(msgspec.json.encode(out), status_code=201, media_type="application/json")

    async def search(request: Request) -> Response:
        dec.decode(await request.body())
        return Response(b'{"results":[],"total":0}', media_type="application/json")

    app = Starlette(routes=[Route("/agentmemory/observe", observe, methods=["POST"]),
                            Route("/agentmemory/search", search, methods=["POST"])])  # fmt: skip
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", loop="uvloop",
                http="httptools")  # fmt: skip


# ---- clients ---------------------------------------------------------------------------
@dataclass
class Clients:
    port: int
    tag: str
    search_share: float
    latencies: dict[str, list[float]] = field(default_factory=lambda: {"observe": [], "search": []})
    stats: Counter[str] = field(default_factory=Counter)
    observed: int = 0
    _next: int = 0

    async def one(self, k: int, until: float, limit: int) -> None:
        rng = random.Random(k)
        conn = Connection("127.0.0.1", self.port, SECRET)
        try:
            while time.monotonic() < until and self._next < limit:
                search = rng.random() < self.search_share
                if search:
                    path, kind = "/agentmemory/search", "search"
                    body: Any = {"query": words(rng, 2), "project": PROJECT, "limit": 10}
                else:
                    path, kind = "/agentmemory/observe", "observe"
                    i = self._next
                    self._next += 1
                    body = observe_body(self.tag, i, rng)
                t0 = time.perf_counter()
                try:
                    status, _ = await conn.request("POST", path, body)
                except HttpFailure:
                    self.stats[f"{kind}_failed"] += 1
                    await asyncio.sleep(0.05)
                    continue
                self.latencies[kind].append(1000 * (time.perf_counter() - t0))
                self.stats[f"{kind}_{status}"] += 1
                if kind == "observe" and status in (200, 201, 202):
                    self.observed += 1
        finally:
            conn.close()

    async def run(self, clients: int, seconds: float, limit: int = 10**12) -> float:
        t0 = time.monotonic()
        await asyncio.gather(*(self.one(k, t0 + seconds, limit) for k in range(clients)))
        return time.monotonic() - t0


def summary(c: Clients, seconds: float) -> dict[str, Any]:
    o, s = c.latencies["observe"], c.latencies["search"]
    return {
        "rps": round((len(o) + len(s)) / seconds, 1),
        "observe_rps": round(len(o) / seconds, 1),
        "search_rps": round(len(s) / seconds, 1),
        "observe_p50_ms": round(pct(o, 50), 2),
        "observe_p99_ms": round(pct(o, 99), 2),
        "search_p50_ms": round(pct(s, 50), 2),
        "search_p99_ms": round(pct(s, 99), 2),
        "non_2xx": sum(v for k, v in c.stats.items() if not k.endswith(("_200", "_201"))),
    }


async def wait_rest(port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        conn = Connection("127.0.0.1", port, SECRET)
        try:
            status, _ = await conn.request("POST", "/agentmemory/search", {"query": "warm"})
            if status == 200:
                return
        except HttpFailure:
            pass
        finally:
            conn.close()
        if time.monotonic() > deadline:
            raise RuntimeError(f"REST on {port} did not answer")
        await asyncio.sleep(0.2)


def by_label(usage: dict[str, tuple[float, float]]) -> dict[str, float]:
    """RSS MB summed over the processes of each label (two memory replicas: one figure)."""
    out: dict[str, float] = {}
    for key, (_, rss) in usage.items():
        label = key.split("#")[0]
        out[label] = round(out.get(label, 0.0) + rss, 1)
    return out


def cpu_by_label(
    now: dict[str, tuple[float, float]], before: dict[str, tuple[float, float]], n: int
) -> dict[str, float]:
    """CPU milliseconds per observation of each label's processes since `before`."""
    out: dict[str, float] = {}
    for key, (cpu, _) in now.items():
        label = key.split("#")[0]
        spent = cpu - before.get(key, (0.0, 0.0))[0]
        out[label] = out.get(label, 0.0) + 1000 * spent / n
    return {k: round(v, 3) for k, v in out.items()}


def disk_mb(path: Path) -> float:
    """Bytes under `path` (the data dir: JetStream's store, snapshots, logs), in MB."""
    total = 0
    for f in path.rglob("*"):
        try:
            if f.is_file():
                total += f.stat().st_size
        except OSError:
            continue
    return total / 2**20


def totals(usage: dict[str, tuple[float, float]]) -> tuple[float, float]:
    return sum(c for c, _ in usage.values()), sum(r for _, r in usage.values())


# ---- load ------------------------------------------------------------------------------
async def load(args: argparse.Namespace) -> dict[str, Any]:
    seconds = 20.0 if args.quick else args.seconds
    tmp = Path(tempfile.mkdtemp(prefix="load-bench-"))
    engine = Engine(tmp, Path(args.config))
    bare_port = free_port()
    bare = subprocess.Popen([sys.executable, __file__, "--serve-bare", str(bare_port)],
                            cwd=ROOT, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        startup = await asyncio.to_thread(engine.start)
        await wait_rest(engine.rest_port)
        await wait_rest(bare_port)
        tag = f"l{int(time.time())}"
        await Clients(engine.rest_port, tag + "w", 0.2).run(args.clients, 3)  # warm
        await Clients(bare_port, tag + "w", 0.2).run(args.clients, 2)
        peer = Clients(bare_port, tag + "b", 0.2)
        peer_s = await peer.run(args.clients, min(seconds, 20))
        before = engine.usage()
        ours = Clients(engine.rest_port, tag, 0.2)
        ours_s = await ours.run(args.clients, seconds)
        after = engine.usage()
    finally:
        engine.stop()
        bare.terminate()
        bare.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)
    cpu_s = totals(after)[0] - totals({k: v for k, v in before.items() if k in after})[0]
    out = summary(ours, ours_s)
    requests = len(ours.latencies["observe"]) + len(ours.latencies["search"])
    peer_sum = summary(peer, peer_s)
    return {
        "bench": "load",
        "clients": args.clients,
        "seconds": round(ours_s, 1),
        **out,
        "observed": ours.observed,
        "errors": {k: v for k, v in ours.stats.items() if not k.endswith(("_200", "_201"))},
        "bare_rps": peer_sum["rps"],
        "bare_p99_ms": max(peer_sum["observe_p99_ms"], peer_sum["search_p99_ms"]),
        "ratio": round(out["rps"] / peer_sum["rps"], 3) if peer_sum["rps"] else None,
        "cpu_cores_used": round(cpu_s / ours_s, 2),
        "cpu_ms_per_request": round(1000 * cpu_s / max(1, requests), 3),
        "rss_mb": round(totals(after)[1], 1),
        "processes": {k: {"rss_mb": v[1]} for k, v in sorted(after.items())},
        "startup_s": round(startup, 2),
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }


# ---- soak ------------------------------------------------------------------------------
async def soak(args: argparse.Namespace) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="soak-bench-"))
    engine = Engine(tmp, Path(args.config))
    points: list[dict[str, Any]] = []
    out_path = Path(args.out) if args.out else None
    if out_path:
        out_path.parent.mkdir(parents=True, exist_ok=True)
        out_path.write_text("")
    stop_at = time.monotonic() + 60 * args.max_minutes if args.max_minutes else float("inf")
    probes: list[float] = []
    try:
        startup = await asyncio.to_thread(engine.start)
        await wait_rest(engine.rest_port)
        tag = f"s{int(time.time())}"
        clients = Clients(engine.rest_port, tag, 0.0)
        done = asyncio.Event()

        async def probe() -> None:
            rng = random.Random(99)
            conn = Connection("127.0.0.1", engine.rest_port, SECRET)
            while not done.is_set():
                t0 = time.perf_counter()
                try:
                    await conn.request("POST", "/agentmemory/search",
                                       {"query": words(rng, 2), "project": PROJECT})  # fmt: skip
                    probes.append(1000 * (time.perf_counter() - t0))
                except HttpFailure:
                    pass
                await asyncio.sleep(1.0)
            conn.close()

        async def sample() -> None:
            last_n, last_t = 0, time.monotonic()
            last_use = engine.usage()
            last_cpu = totals(last_use)[0]
            mark = args.every
            while not done.is_set():
                await asyncio.sleep(0.2)
                n = clients.observed
                if (n < mark and not done.is_set()) or n == last_n:
                    continue
                now = time.monotonic()
                use = engine.usage()
                cpu, rss = totals(use)
                dn = max(1, n - last_n)
                point = {
                    "observations": n,
                    "obs_per_s": round(dn / (now - last_t), 1),
                    "cpu_ms_per_obs": round(1000 * (cpu - last_cpu) / dn, 3),
                    "rss_mb": round(rss, 1),
                    "cpu_ms_per_obs_by_process": cpu_by_label(use, last_use, dn),
                    "rss_by_process": by_label(use),
                    "disk_mb": round(disk_mb(tmp / "data"), 1),
                    "search_probe_p50_ms": round(pct(probes[-30:], 50), 2) if probes else None,
                    "elapsed_s": round(now - t_start, 1),
                }
                points.append(point)
                print(json.dumps(point), file=sys.stderr, flush=True)
                if out_path:
                    with out_path.open("a") as f:
                        f.write(json.dumps(point) + "\n")
                last_n, last_t, last_cpu, last_use = n, now, cpu, use
                mark = (n // args.every + 1) * args.every

        t_start = time.monotonic()
        tasks = [asyncio.create_task(probe()), asyncio.create_task(sample())]
        seconds = max(1.0, stop_at - time.monotonic()) if stop_at != float("inf") else 1e9
        await clients.run(args.clients, seconds, limit=args.observations)
        await asyncio.sleep(0.5)
        done.set()
        await asyncio.gather(*tasks)
        elapsed = time.monotonic() - t_start
    finally:
        engine.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    if args.svg and points:
        Path(args.svg).parent.mkdir(parents=True, exist_ok=True)
        Path(args.svg).write_text(plot(points))  # again from the file: ops/bench/soak_plot.py
    return soak_summary(points, clients, elapsed, startup, args)


def _at(points: list[dict[str, Any]], n: int) -> dict[str, Any] | None:
    return next((p for p in points if int(p["observations"]) >= n), None)


def _cost_around(points: list[dict[str, Any]], n: int) -> float | None:
    """The median cost per observation of the windows near `n` (windows are noisy)."""
    near = sorted(
        float(p["cpu_ms_per_obs"]) for p in points if 0.5 * n <= int(p["observations"]) <= 1.5 * n
    )
    return near[len(near) // 2] if near else None


def rss_per_100k(points: list[dict[str, Any]]) -> list[float]:
    """RSS growth (MB) of each successive 100k observations, all processes together."""
    out: list[float] = []
    if not points:
        return out
    last = int(points[-1]["observations"])
    for a in range(100_000, last + 1, 100_000):
        p0 = _at(points, a - 100_000) if a > 100_000 else points[0]
        p1 = _at(points, a)
        if p0 is None or p1 is None or p1 is p0:
            continue
        grew = float(p1["rss_mb"]) - float(p0["rss_mb"])
        span = int(p1["observations"]) - int(p0["observations"])
        out.append(round(grew * 100_000 / span, 1))
    return out


def soak_summary(points: list[dict[str, Any]], clients: Clients, elapsed: float,
                 startup: float, args: argparse.Namespace) -> dict[str, Any]:  # fmt: skip
    end: dict[str, Any] = points[-1] if points else {"observations": clients.observed}
    per_100k = rss_per_100k(points)
    # The write path: the memory processes (REST, observe), without the bus and the index.
    write_path = [
        sum(v for k, v in p["rss_by_process"].items() if k.startswith("memory")) for p in points
    ]
    return {
        "bench": "soak",
        "clients": args.clients,
        "target_observations": args.observations,
        "observations": clients.observed,
        "reached_target": clients.observed >= args.observations,
        "seconds": round(elapsed, 1),
        "obs_per_s": round(clients.observed / elapsed, 1) if elapsed else None,
        "cpu_ms_per_obs_10k": _cost_around(points, 10_000),
        "cpu_ms_per_obs_100k": _cost_around(points, 100_000),
        "cpu_ms_per_obs_end": _cost_around(points, int(end["observations"])),
        "rss_mb_start": points[0]["rss_mb"] if points else None,
        "rss_mb_end": end.get("rss_mb"),
        "rss_mb_per_100k": per_100k,
        "write_path_rss_mb_start": round(write_path[0], 1) if write_path else None,
        "write_path_rss_mb_end": round(write_path[-1], 1) if write_path else None,
        "rss_by_process_start": points[0]["rss_by_process"] if points else None,
        "rss_by_process_end": end.get("rss_by_process"),
        "disk_mb_end": end.get("disk_mb"),
        "disk_kb_per_obs": round(1024 * float(end["disk_mb"]) / int(end["observations"]), 2)
        if end.get("disk_mb")
        else None,
        "search_probe_p50_ms_end": end.get("search_probe_p50_ms"),
        "errors": {k: v for k, v in clients.stats.items() if not k.endswith(("_200", "_201"))},
        "startup_s": round(startup, 2),
        "points": len(points),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="20 s instead of 60")
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--config", default=str(ROOT / "config" / "engine.yaml"))
    ap.add_argument("--soak", action="store_true")
    ap.add_argument("--observations", type=int, default=1_000_000)
    ap.add_argument("--every", type=int, default=10_000)
    ap.add_argument("--max-minutes", type=float, default=0.0, help="stop the soak early")
    ap.add_argument("--out", default="", help="soak: the series as JSON lines")
    ap.add_argument("--svg", default="", help="soak: the plot")
    ap.add_argument("--serve-bare", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve_bare:
        serve_bare(args.serve_bare)
        return
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    emit(asyncio.run(soak(args) if args.soak else load(args)))


if __name__ == "__main__":
    main()
