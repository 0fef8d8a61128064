"""Load and soak of the default install (`python -m engine run --config config/engine.yaml`,
the laptop layout), through REST on loopback.

Load (default): `--clients` (50) closed-loop clients for `--seconds` (60), 80%
`POST /agentmemory/observe` (hook payloads, ~1 KB, a new eventId each) and 20%
`POST /agentmemory/search`. The peer, in the same run and with the same client code: a
bare starlette/uvicorn app that parses the same JSON and answers both routes at once
(the floor of HTTP and of this client). Last line: JSON with throughput, p50/p99 per
route, errors, and CPU and RSS of every process of the engine.

Soak (`--soak`): see ops/bench/soak.py (the same clients, to a million observations).

    python ops/bench/load.py [--quick] [--clients 50] [--seconds 60]
    python ops/bench/load.py --soak [--quick] [soak options, ops/bench/soak.py]
"""

# ruff: noqa: E402
from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from engine.config import process_usage
from ops.bench._common import emit, pct
from ops.bench._http import free_port
from ops.bench._rest import Connection, HttpFailure
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
        # BENCH_LOG_LEVEL=INFO keeps what the workers say of their start and stop.
        level = os.environ.get("BENCH_LOG_LEVEL", "WARNING")
        env = dict(os.environ, HOME=str(self.tmp / "home"), PYTHONPATH=str(ROOT),
                   AGENTMEMORY_SECRET=SECRET, ENGINE_LOG_LEVEL=level)  # fmt: skip
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
    rate: float = 0.0
    """Observations a second in all (0: as fast as answers come): each observe waits for
    its slot, `start + i / rate`, so the offered load does not follow the latency."""
    _next: int = 0
    _start: float = 0.0

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
                    if self.rate:
                        await asyncio.sleep(
                            max(0.0, self._start + i / self.rate - time.monotonic())
                        )
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
        t0 = self._start = time.monotonic()
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="20 s instead of 60 (soak: 20k obs)")
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--config", default=str(ROOT / "config" / "engine.yaml"))
    ap.add_argument("--soak", action="store_true", help="the soak (ops/bench/soak.py)")
    from ops.bench import soak

    soak.add_arguments(ap)
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
    emit(asyncio.run(soak.soak(args) if args.soak else load(args)))


if __name__ == "__main__":
    main()
