"""HTTP trigger overhead: a no-op function behind the http trigger vs a bare starlette endpoint.

Both run on uvicorn (uvloop + httptools) and are driven by the same `wrk` script (POST of a
small JSON body, id varied per request) at the same concurrency, one after the other so
they do not share the CPU, in alternating rounds (best round of each side is kept). The trigger path adds: route match, bearer check, JSON check, a
NATS request to a worker process and back.

    .venv/bin/python ops/bench/trigger.py [--quick] [--connections 32] [--seconds 10]
                                       [--no-tracing]   (ENGINE_TRACE_SAMPLING is passed on)

The last line printed is one JSON object: trigger_rps, bare_rps, ratio, trigger_p99_ms, ...
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from engine import Context, HttpRequest, HttpResponse, Worker  # noqa: E402
from engine.settings import engine_settings, environ  # noqa: E402
from ops.bench.harness import free_port, run_wrk, spawn, wait_http  # noqa: E402

SECRET = "bench-secret"
LUA = """
counter = 0
request = function()
  counter = counter + 1
  local body = '{"id":' .. counter .. ',"text":"hello"}'
  return wrk.format("POST", nil, {
    ["Content-Type"] = "application/json",
    ["Authorization"] = "Bearer %s",
  }, body)
end
"""


# ---- the two servers under test (run as child processes of this script) ---------------
def serve_noop() -> None:
    worker = Worker("bench-noop")

    @worker.function("bench::noop")
    async def noop(req: HttpRequest, ctx: Context) -> HttpResponse:
        return HttpResponse(body={"ok": True})

    worker.trigger("http", "bench::noop", method="POST", path="/bench/noop")
    worker.run()


def serve_bare(port: int) -> None:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def noop(request: Request) -> JSONResponse:
        await request.json()  # the trigger checks the JSON too
        return JSONResponse({"ok": True})

    app = Starlette(routes=[Route("/bench/noop", noop, methods=["POST"])])
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=port,
        loop="uvloop",
        http="httptools",
        access_log=False,
        log_level="warning",
    )


# ---- the driver ------------------------------------------------------------------------
def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="2 rounds of 4 s per side, not 3 of 8")
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--seconds", type=int, default=0)
    ap.add_argument(
        "--no-tracing", action="store_true", help="ENGINE_TRACING=off in the trigger path"
    )
    ap.add_argument("--serve-noop", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--serve-bare", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.serve_noop:
        serve_noop()
        return
    if a.serve_bare:
        serve_bare(a.serve_bare)
        return
    if shutil.which("wrk") is None:
        raise SystemExit("wrk not found: apt-get install -y wrk")
    seconds = a.seconds or (4 if a.quick else 8)

    from engine.server import NatsServer

    procs: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory() as tmp:
        nats = NatsServer(store_dir=Path(tmp) / "js").start()
        try:
            trigger_port, bare_port = free_port(), free_port()
            env = environ(
                ENGINE_NATS_URL=nats.url,
                PYTHONPATH=str(ROOT),
                AGENTMEMORY_SECRET=SECRET,
                AGENTMEMORY_REST_PORT=str(trigger_port),
                ENGINE_LOG_LEVEL="WARNING",
            )
            if a.no_tracing:
                env["ENGINE_TRACING"] = "off"
            procs.append(
                spawn([sys.executable, __file__, "--serve-noop"], env, "ENGINE_WORKER_READY")
            )
            procs.append(
                spawn(
                    [sys.executable, "-m", "workers.trigger_plugins", "http"],
                    env,
                    "ENGINE_WORKER_READY",
                )
            )
            procs.append(spawn([sys.executable, __file__, "--serve-bare", str(bare_port)], env))
            trigger_url = f"http://127.0.0.1:{trigger_port}/bench/noop"
            bare_url = f"http://127.0.0.1:{bare_port}/bench/noop"
            wait_http(trigger_url, b'{"id":0}', SECRET)
            wait_http(bare_url, b'{"id":0}', SECRET)
            script = Path(tmp) / "post.lua"
            script.write_text(LUA % SECRET)
            for url in (bare_url, trigger_url):  # warm-up
                run_wrk(url, script, a.connections, 1)
            # Alternating rounds, best of each side: other load on a shared machine drifts,
            # and must not fall on one side only.
            rounds = 2 if a.quick else 3
            bares, trigs = [], []
            for _ in range(rounds):
                bares.append(run_wrk(bare_url, script, a.connections, seconds))
                trigs.append(run_wrk(trigger_url, script, a.connections, seconds))
            bare = max(bares, key=lambda r: r["rps"])
            trig = max(trigs, key=lambda r: r["rps"])
        finally:
            for p in procs:
                p.kill()
                p.wait()
            nats.kill()
    ratio = trig["rps"] / bare["rps"] if bare["rps"] else 0.0
    print(f"{'':10} {'req/s':>10} {'p50 ms':>8} {'p99 ms':>8} {'non-2xx':>8}")
    for name, r in (("bare", bare), ("trigger", trig)):
        print(
            f"{name:10} {r['rps']:>10.0f} {r['p50_ms']:>8.2f} {r['p99_ms']:>8.2f} {r['non_2xx']:>8.0f}"
        )
    print(f"ratio trigger/bare = {ratio:.2f} (target >= 0.5)")
    print(
        json.dumps(
            {
                "bench": "http",
                "connections": a.connections,
                "tracing": not a.no_tracing,
                "trace_sampling": str(engine_settings().trace_sampling),
                "seconds": seconds,
                "trigger_rps": round(trig["rps"], 1),
                "bare_rps": round(bare["rps"], 1),
                "ratio": round(ratio, 3),
                "trigger_p99_ms": round(trig["p99_ms"], 2),
                "bare_p99_ms": round(bare["p99_ms"], 2),
                "trigger_non_2xx": int(trig["non_2xx"]),
            }
        )
    )


if __name__ == "__main__":
    main()
