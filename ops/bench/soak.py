"""Soak of the default install to a million observations: how memory, disk, ingest cost and
search latency grow with the corpus.

Two modes. Saturated (default): the load bench's clients observe as fast as the install
answers, with one search a second as a probe. Paced (`--paced R`): R observations a second
in all (a laptop's heavy day is 500-2,000 a day; 200/s is a year in a few hours) and
`--search-rate S` searches a second beside them (default 10), each timed. Every `--every`
observations a point: observations per second, CPU per observation of every process of the
engine, each process's RSS split into anonymous and file-backed pages (/proc status
RssAnon / RssFile: mmap'd index files are the second kind, reclaimable), the data dir's
size, and the searches' p50/p99 since the last point. At the end the engine is stopped
(SIGTERM to exit, timed) and started again on the same data dir, timed to "engine ready"
and to the first search answered.

    python ops/bench/soak.py [--quick] [--observations 1000000] [--every 10000]
                             [--paced 200 --search-rate 10] [--max-minutes M]
                             [--out docs/perf/soak.jsonl] [--svg docs/perf/soak.svg]

`--quick`: 20,000 observations, a point every 5,000 (under a minute saturated). Last line:
JSON with the cost per observation at 10k, 100k and the end (all processes, and by
process), RSS per 100k observations (all processes), RSS and PSS at 100k and at the end
(all, and by process: anonymous, file-backed, PSS), search p50/p99 over the run, the stop
and the restart (first search, ready), disk per observation.
"""

# ruff: noqa: E402
from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ops.bench import session_probe
from ops.bench.harness import (
    PROJECT,
    SECRET,
    Clients,
    Connection,
    Engine,
    HttpFailure,
    cpu_by_label,
    disk_mb,
    emit,
    pct,
    words,
)
from ops.bench.soak_plot import plot
from ops.procfs import kb_fields, process_tree


def rss_split(pid: int) -> tuple[float, float]:
    """(anonymous, file-backed) resident MB of a process; (0, 0) once it is gone."""
    got = kb_fields(pid, "status", "RssAnon", "RssFile")
    return got.get("RssAnon", 0.0), got.get("RssFile", 0.0)


def pss(pid: int) -> float:
    """Proportional set size (MB): each shared page counted once across the processes
    mapping it (the libraries every Python worker maps), what RSS summed counts N times."""
    return kb_fields(pid, "smaps_rollup", "Pss").get("Pss", 0.0)


def memory_by_label(engine: Engine) -> dict[str, dict[str, float]]:
    """Per label (two memory replicas: one figure), anonymous and file-backed RSS, and PSS."""
    out: dict[str, dict[str, float]] = {}
    assert engine.proc is not None
    for key in engine.usage():
        label, pid = key.split("#")
        anon, file = rss_split(int(pid))
        got = out.setdefault(label, {"anon": 0.0, "file": 0.0, "pss": 0.0})
        got["anon"] = round(got["anon"] + anon, 1)
        got["file"] = round(got["file"] + file, 1)
        got["pss"] = round(got["pss"] + pss(int(pid)), 1)
    return out


class Searches:
    """Searches at a steady rate (or one a second as a probe), each timed; `window()` gives
    the latencies since the last call."""

    def __init__(self, port: int, rate: float) -> None:
        self.port, self.rate = port, rate
        self.all: list[float] = []
        self.failed = 0
        self._mark = 0

    async def run(self, done: asyncio.Event) -> None:
        rng = random.Random(99)
        conn = Connection("127.0.0.1", self.port, SECRET)
        start, i = time.monotonic(), 0
        try:
            while not done.is_set():
                t0 = time.perf_counter()
                try:
                    status, _ = await conn.request(
                        "POST", "/agentmemory/search",
                        {"query": words(rng, 2), "project": PROJECT, "limit": 10},
                    )  # fmt: skip
                    if status == 200:
                        self.all.append(1000 * (time.perf_counter() - t0))
                    else:
                        self.failed += 1
                except HttpFailure:
                    self.failed += 1
                    conn.close()
                    conn = Connection("127.0.0.1", self.port, SECRET)
                i += 1
                await asyncio.sleep(max(0.0, start + i / self.rate - time.monotonic()))
        finally:
            conn.close()

    def window(self) -> list[float]:
        got, self._mark = self.all[self._mark :], len(self.all)
        return got


async def first_search(port: int, timeout: float = 120.0) -> float:
    """Seconds until a search is answered (200) on `port`."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        conn = Connection("127.0.0.1", port, SECRET)
        try:
            status, _ = await conn.request(
                "POST", "/agentmemory/search", {"query": "pytest", "project": PROJECT}
            )
            if status == 200:
                return time.monotonic() - t0
        except HttpFailure:
            pass
        finally:
            conn.close()
        await asyncio.sleep(0.05)
    raise RuntimeError(f"no search answered within {timeout} s of the restart")


def stop_timed(engine: Engine) -> float:
    """SIGTERM the supervisor; seconds until it and every process under it are gone."""
    assert engine.proc is not None
    tree = process_tree(engine.proc.pid)
    t0 = time.monotonic()
    engine.proc.send_signal(signal.SIGTERM)
    engine.proc.wait(120)
    while any(Path(f"/proc/{p}").exists() and _alive(p) for p in tree):
        time.sleep(0.02)
    return time.monotonic() - t0


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


async def soak(args: argparse.Namespace) -> dict[str, Any]:
    if args.quick:
        args.observations, args.every = min(args.observations, 20_000), min(args.every, 5_000)
    tmp = Path(tempfile.mkdtemp(prefix="soak-bench-"))
    if args.data_dir:  # go on filling a kept one (`--keep-data` of an earlier run)
        (tmp / "data").symlink_to(Path(args.data_dir).resolve())
    engine = Engine(tmp, Path(args.config))
    points: list[dict[str, Any]] = []
    out_path = Path(args.out) if args.out else None
    if out_path:
        out_path.parent.mkdir(parents=True, exist_ok=True)
        out_path.write_text("")
    stop_at = time.monotonic() + 60 * args.max_minutes if args.max_minutes else float("inf")
    restart: dict[str, Any] = {}
    try:
        startup = await asyncio.to_thread(engine.start)
        await first_search(engine.rest_port)
        tag = f"s{int(time.time())}"
        clients = Clients(engine.rest_port, tag, 0.0, rate=args.paced)
        searches = Searches(engine.rest_port, args.search_rate if args.paced else 1.0)
        done = asyncio.Event()

        async def sample() -> None:
            last_n, last_t = 0, time.monotonic()
            last_use = engine.usage()
            last_cpu = sum(c for c, _ in last_use.values())
            mark = args.every
            while not done.is_set():
                await asyncio.sleep(0.2)
                n = clients.observed
                if (n < mark and not done.is_set()) or n == last_n:
                    continue
                now = time.monotonic()
                use = engine.usage()
                cpu = sum(c for c, _ in use.values())
                mem = memory_by_label(engine)
                dn = max(1, n - last_n)
                lat = searches.window()
                point = {
                    "observations": n,
                    "obs_per_s": round(dn / (now - last_t), 1),
                    "cpu_ms_per_obs": round(1000 * (cpu - last_cpu) / dn, 3),
                    "rss_mb": round(sum(v["anon"] + v["file"] for v in mem.values()), 1),
                    "rss_anon_mb": round(sum(v["anon"] for v in mem.values()), 1),
                    "rss_file_mb": round(sum(v["file"] for v in mem.values()), 1),
                    "pss_mb": round(sum(v["pss"] for v in mem.values()), 1),
                    "cpu_ms_per_obs_by_process": cpu_by_label(use, last_use, dn),
                    "rss_by_process": {k: round(v["anon"] + v["file"], 1) for k, v in mem.items()},
                    "rss_split_by_process": mem,
                    "disk_mb": round(disk_mb(tmp / "data"), 1),
                    "search_p50_ms": round(pct(lat, 50), 2) if lat else None,
                    "search_p99_ms": round(pct(lat, 99), 2) if lat else None,
                    "searches": len(lat),
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
        tasks = [asyncio.create_task(searches.run(done)), asyncio.create_task(sample())]
        seconds = max(1.0, stop_at - time.monotonic()) if stop_at != float("inf") else 1e9
        await clients.run(args.clients, seconds, limit=args.observations)
        await asyncio.sleep(0.5)
        done.set()
        await asyncio.gather(*tasks)
        elapsed = time.monotonic() - t_start
        # Every agent's first calls on the store as the soak leaves it (ops/bench/session_probe.py).
        start_figures = await session_probe.measure(engine.rest_port, PROJECT)
        # Stop and start again on the same data dir: what a laptop's reboot costs.
        restart.update(await stop_and_start(engine))
        restart["rss_mb_after"] = round(
            sum(v["anon"] + v["file"] for v in memory_by_label(engine).values()), 1
        )
    finally:
        engine.stop()
        if args.keep_logs:  # what each process logged, across the stop and the restart
            shutil.copytree(tmp / "data" / "logs", args.keep_logs, dirs_exist_ok=True)
        if args.keep_data and not args.data_dir:  # a 1M data dir takes a while to fill
            shutil.rmtree(args.keep_data, ignore_errors=True)
            shutil.move(str(tmp / "data"), args.keep_data)
        shutil.rmtree(tmp, ignore_errors=True)
    if args.svg and points:
        Path(args.svg).parent.mkdir(parents=True, exist_ok=True)
        Path(args.svg).write_text(plot(points))  # again from the file: ops/bench/soak_plot.py
    return {**summary(points, clients, searches, elapsed, startup, restart, args), **start_figures}


async def stop_and_start(engine: Engine) -> dict[str, float]:
    """Stop the engine (timed to the last process gone), start it on the same data dir,
    timed from launch to the first search answered and to "engine ready" (the first can
    come before every worker is up: the lifecycle process starts after search)."""
    out = {"stop_s": round(await asyncio.to_thread(stop_timed, engine), 2)}
    t0 = time.monotonic()
    started = asyncio.create_task(asyncio.to_thread(engine.start))
    await first_search(engine.rest_port)
    out["first_search_s"] = round(time.monotonic() - t0, 2)
    await started
    out["ready_s"] = round(time.monotonic() - t0, 2)
    return out


async def restart_only(args: argparse.Namespace) -> dict[str, Any]:
    """Start the engine on a kept data dir (`--keep-data` of an earlier soak), then stop and
    start it again `--restarts` times: each stop timed to the last process gone, each start
    to the first search answered and to "engine ready"."""
    data = Path(args.restart_only).resolve()
    if not (data / "nats").is_dir():
        raise SystemExit(f"--restart-only: {data} is not a data dir (no nats/ in it)")
    tmp = Path(tempfile.mkdtemp(prefix="soak-restart-"))
    (tmp / "data").symlink_to(data)
    engine = Engine(tmp, Path(args.config))
    runs: list[dict[str, float]] = []
    try:
        first = round(await asyncio.to_thread(engine.start), 2)
        await first_search(engine.rest_port)
        rss = round(sum(v["anon"] + v["file"] for v in memory_by_label(engine).values()), 1)
        start_figures = await session_probe.measure(engine.rest_port, PROJECT)
        for _ in range(args.restarts):
            run = await stop_and_start(engine)
            runs.append(run)
            print(json.dumps(run), file=sys.stderr, flush=True)
        rss_after = round(sum(v["anon"] + v["file"] for v in memory_by_label(engine).values()), 1)
    finally:
        engine.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    worst = (
        {k: max(r[k] for r in runs) for k in ("stop_s", "first_search_s", "ready_s")}
        if runs
        else {}
    )
    return {"bench": "soak_restart", "data_dir": str(data), "disk_mb": round(disk_mb(data), 1),
            "first_start_s": first, "rss_mb_first_start": rss, "rss_mb_end": rss_after,
            "restarts": runs, "worst": worst, **start_figures}  # fmt: skip


def _at(points: list[dict[str, Any]], n: int) -> dict[str, Any] | None:
    return next((p for p in points if int(p["observations"]) >= n), None)


def _cost_around(points: list[dict[str, Any]], n: int) -> float | None:
    """The median cost per observation of the windows near `n` (windows are noisy)."""
    near = sorted(
        float(p["cpu_ms_per_obs"]) for p in points if 0.5 * n <= int(p["observations"]) <= 1.5 * n
    )
    return near[len(near) // 2] if near else None


def _cost_by_process_around(points: list[dict[str, Any]], n: int) -> dict[str, float] | None:
    """Per process label, the median CPU ms per observation of the windows near `n`."""
    near = [p["cpu_ms_per_obs_by_process"] for p in points
            if 0.5 * n <= int(p["observations"]) <= 1.5 * n]  # fmt: skip
    if not near:
        return None
    labels = sorted({k for w in near for k in w})
    out = {}
    for label in labels:
        got = sorted(float(w.get(label, 0.0)) for w in near)
        out[label] = got[len(got) // 2]
    return out


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


def summary(points: list[dict[str, Any]], clients: Clients, searches: Searches, elapsed: float,
            startup: float, restart: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:  # fmt: skip
    end: dict[str, Any] = points[-1] if points else {"observations": clients.observed}
    at100k = _at(points, 100_000)
    per_100k = rss_per_100k(points)
    write_path = [
        sum(v for k, v in p["rss_by_process"].items() if k.startswith("memory")) for p in points
    ]
    return {
        "bench": "soak",
        "mode": f"paced {args.paced:g}/s + {args.search_rate:g} searches/s"
        if args.paced
        else "saturated",
        "clients": args.clients,
        "target_observations": args.observations,
        "observations": clients.observed,
        "reached_target": clients.observed >= args.observations,
        "seconds": round(elapsed, 1),
        "obs_per_s": round(clients.observed / elapsed, 1) if elapsed else None,
        "cpu_ms_per_obs_10k": _cost_around(points, 10_000),
        "cpu_ms_per_obs_100k": _cost_around(points, 100_000),
        "cpu_ms_per_obs_end": _cost_around(points, int(end["observations"])),
        "cpu_ms_per_obs_by_process_100k": _cost_by_process_around(points, 100_000),
        "cpu_ms_per_obs_by_process_end": _cost_by_process_around(points, int(end["observations"])),
        "rss_mb_start": points[0]["rss_mb"] if points else None,
        "rss_mb_100k": at100k["rss_mb"] if at100k else None,
        "rss_mb_end": end.get("rss_mb"),
        "rss_anon_mb_end": end.get("rss_anon_mb"),
        "rss_file_mb_end": end.get("rss_file_mb"),
        "pss_mb_100k": at100k.get("pss_mb") if at100k else None,
        "pss_mb_end": end.get("pss_mb"),
        "rss_mb_per_100k": per_100k,
        "rss_mb_per_100k_after_first_max": max(per_100k[1:]) if len(per_100k) > 1 else None,
        "write_path_rss_mb_start": round(write_path[0], 1) if write_path else None,
        "write_path_rss_mb_end": round(write_path[-1], 1) if write_path else None,
        "rss_by_process_100k": at100k.get("rss_split_by_process") if at100k else None,
        "rss_by_process_end": end.get("rss_split_by_process"),
        "processes": len(end.get("rss_split_by_process") or {}),
        "disk_mb_end": end.get("disk_mb"),
        "disk_kb_per_obs": round(1024 * float(end["disk_mb"]) / int(end["observations"]), 2)
        if end.get("disk_mb")
        else None,
        "searches": len(searches.all),
        "search_failed": searches.failed,
        "search_p50_ms": round(pct(searches.all, 50), 2) if searches.all else None,
        "search_p99_ms": round(pct(searches.all, 99), 2) if searches.all else None,
        "restart": restart,
        "errors": {k: v for k, v in clients.stats.items() if not k.endswith(("_200", "_201"))},
        "startup_s": round(startup, 2),
        "points": len(points),
    }


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="20,000 observations")
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--config", default=str(ROOT / "config" / "engine.yaml"))
    ap.add_argument("--observations", type=int, default=1_000_000)
    ap.add_argument("--every", type=int, default=10_000)
    ap.add_argument("--paced", type=float, default=0.0, help="observations a second (0: saturated)")
    ap.add_argument("--search-rate", type=float, default=10.0, help="paced: searches a second")
    ap.add_argument("--max-minutes", type=float, default=0.0, help="stop the soak early")
    ap.add_argument("--out", default="", help="the series as JSON lines")
    ap.add_argument("--svg", default="", help="the plot")
    ap.add_argument("--keep-logs", default="", help="copy the data dir's logs here at the end")
    ap.add_argument("--keep-data", default="", help="move the data dir here at the end")
    ap.add_argument("--restart-only", default="", metavar="DATA_DIR",
                    help="no soak: time stops and starts of a kept data dir")  # fmt: skip
    ap.add_argument("--restarts", type=int, default=3, help="--restart-only: how many")
    ap.add_argument("--data-dir", default="", help="soak on this kept data dir (it stays)")
    return ap


def main() -> None:
    args = parser().parse_args()
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    emit(asyncio.run(restart_only(args) if args.restart_only else soak(args)))


if __name__ == "__main__":
    main()
