"""Load and soak of the default install (`python -m engine run --config config/engine.yaml`,
the laptop layout), through REST on loopback.

Load (default): `--clients` (50) closed-loop clients for `--seconds` (60), 80%
`POST /agentmemory/observe` (hook payloads, ~1 KB, a new eventId each) and 20%
`POST /agentmemory/search`. The peer, in the same run and with the same client code: a
bare starlette/uvicorn app that parses the same JSON and answers both routes at once
(the floor of HTTP and of this client). Last line: JSON with throughput, p50/p99 per
route, errors, and CPU and RSS of every process of the engine.

The soak (the same clients, to a million observations) is ops/bench/soak.py.

    python ops/bench/load.py [--quick] [--clients 50] [--seconds 60]
"""

# ruff: noqa: E402
from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ops.bench.harness import (
    SECRET,
    Clients,
    Connection,
    Engine,
    HttpFailure,
    emit,
    free_port,
    pct,
)


# ---- the peer: a bare endpoint ---------------------------------------------------------
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
    ap.add_argument("--quick", action="store_true", help="20 s instead of 60")
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--config", default=str(ROOT / "config" / "engine.yaml"))
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
    emit(asyncio.run(load(args)))


if __name__ == "__main__":
    main()
