"""What the default install costs while nothing happens: CPU and memory of every process of
`python -m engine run --config config/engine.yaml` (supervisor, nats-server, workers),
read from /proc, after start-up has settled.

    python ops/bench/idle.py [--quick] [--seconds 60] [--config config/engine.yaml]

The peer, in the same run, is a bare nats-server with JetStream (the floor no layout can go
below): `ratio_cpu` is ours over it. Also prints the time from launch to the ready line
(`startup_s`). Last line: JSON with `idle_cpu_pct` (percent of one core, all processes
together), `rss_mb` (their resident memory summed), `processes`, and per-process figures.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from engine.settings import environ  # noqa: E402
from ops.bench.harness import emit  # noqa: E402
from ops.procfs import cmdline, process_tree  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def _stat(pid: int) -> tuple[int, int, str] | None:
    """(cpu ticks, rss pages, name) of a live process."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    name = raw[raw.index("(") + 1 : raw.rindex(")")]
    fields = raw.rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12]), int(fields[21]), name


def _label(pid: int) -> str:
    words = cmdline(pid)
    if "-m" in words:
        i = words.index("-m") + 1
        if words[i] == "engine.host":  # several workers in one process: name them all
            return "+".join(words[i + 1 :])
        return words[i]
    return Path(words[0]).name if words else str(pid)


def measure(pids: list[int], seconds: float) -> dict[str, Any]:
    before = {p: _stat(p) for p in pids}
    time.sleep(seconds)
    after = {p: _stat(p) for p in pids}
    per: dict[str, dict[str, float]] = {}
    cpu_ticks, rss_pages = 0, 0
    for p in pids:
        b, a = before.get(p), after.get(p)
        if b is None or a is None:
            continue
        d = a[0] - b[0]
        cpu_ticks += d
        rss_pages += a[1]
        name = f"{_label(p)}#{p}"
        per[name] = {
            "cpu_pct": round(100 * d / TICKS / seconds, 2),
            "rss_mb": round(a[1] * PAGE / 2**20, 1),
        }
    return {
        "cpu_pct": round(100 * cpu_ticks / TICKS / seconds, 2),
        "rss_mb": round(rss_pages * PAGE / 2**20, 1),
        "processes": len(per),
        "per_process": per,
    }


def run_engine(
    config: Path, data: Path, home: Path, seconds: float, settle: float
) -> dict[str, Any]:
    env = environ(HOME=str(home), PYTHONPATH=str(ROOT), AGENTMEMORY_SECRET="idle-bench")
    started = time.monotonic()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "engine",
            "run",
            "--config",
            str(config),
            "--data-dir",
            str(data),
            "--port",
            "25111",
            "--quiet",
        ],
        cwd=ROOT,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        if line.startswith("engine ready"):
            break
    else:
        raise RuntimeError("the engine did not start")
    startup = time.monotonic() - started
    threading.Thread(target=lambda: [None for _ in proc.stderr or []], daemon=True).start()
    try:
        time.sleep(settle)
        out = measure(process_tree(proc.pid), seconds)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    out["startup_s"] = round(startup, 2)
    return out


def run_bare_nats(data: Path, seconds: float) -> dict[str, Any]:
    from engine.server import NatsServer

    srv = NatsServer(store_dir=data).start()
    try:
        time.sleep(2)
        assert srv.proc is not None
        return measure([srv.proc.pid], seconds)
    finally:
        srv.kill()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="20 s of idle instead of 60")
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--settle", type=float, default=10.0, help="seconds after ready first")
    ap.add_argument("--config", default=str(ROOT / "config" / "engine.yaml"))
    args = ap.parse_args()
    seconds = 20.0 if args.quick else args.seconds
    with tempfile.TemporaryDirectory(prefix="idle-bench-") as tmp:
        t = Path(tmp)
        (t / "home").mkdir()
        ours = run_engine(Path(args.config), t / "data", t / "home", seconds, args.settle)
        bare = run_bare_nats(t / "bare", seconds)
    for name, fig in sorted(ours["per_process"].items(), key=lambda kv: -kv[1]["cpu_pct"]):
        print(
            f"{name:40s} cpu {fig['cpu_pct']:5.2f}%  rss {fig['rss_mb']:6.1f} MB", file=sys.stderr
        )
    emit(
        {
            "bench": "idle",
            "seconds": seconds,
            "idle_cpu_pct": ours["cpu_pct"],
            "rss_mb": ours["rss_mb"],
            "processes": ours["processes"],
            "startup_s": ours["startup_s"],
            "bare_nats_cpu_pct": bare["cpu_pct"],
            "bare_nats_rss_mb": bare["rss_mb"],
            "ratio_cpu": round(ours["cpu_pct"] / bare["cpu_pct"], 2) if bare["cpu_pct"] else None,
            "per_process": ours["per_process"],
        }
    )


if __name__ == "__main__":
    main()
