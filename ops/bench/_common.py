"""Shared bits of the benchmarks: percentiles, process helpers, the JSON last line."""

from __future__ import annotations

import argparse
import asyncio
import faulthandler
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ops.procfs import kb_fields

ROOT = Path(__file__).resolve().parents[2]


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    k = min(len(s) - 1, max(0, round(p / 100 * (len(s) - 1))))
    return s[k]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def spawn(
    argv: list[str], env: dict[str, str], ready_mark: str | bytes | None = None
) -> subprocess.Popen[bytes]:
    """Start `argv` with exactly `env`; when `ready_mark` is given, wait for it on stderr,
    then keep draining stderr so a chatty process never blocks on a full pipe."""
    p = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert p.stderr is not None
    if ready_mark:
        mark = ready_mark.encode() if isinstance(ready_mark, str) else ready_mark
        for raw in p.stderr:
            if mark in raw:
                break
        else:
            raise RuntimeError(f"{argv} exited before it was ready")
    threading.Thread(target=lambda: [None for _ in p.stderr or []], daemon=True).start()
    return p


def spawn_python(
    args: list[str], env: dict[str, str] | None = None, ready_mark: str | None = None
) -> subprocess.Popen[bytes]:
    """`python <args>` with this environment plus `env` and the repository importable."""
    e = dict(os.environ, PYTHONPATH=str(ROOT))
    e.update(env or {})
    return spawn([sys.executable, *args], e, ready_mark)


def peak_rss_mb(pid: int | None = None) -> float:
    if pid is None:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return kb_fields(pid, "status", "VmHWM").get("VmHWM", float("nan"))


def emit(figures: dict[str, Any]) -> None:
    """The last line a benchmark prints: one JSON object."""
    print(json.dumps(figures), flush=True)


def machine() -> dict[str, Any]:
    """What a figure was measured on: a ratio from a loaded machine reads differently."""
    return {"cpus": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2)}


def run_async(main: Callable[[bool], Awaitable[None]], wedge_quick: int, wedge_full: int) -> None:
    """The command line of an asyncio benchmark: `--quick`, uvloop, and a wedged run says
    where it hangs (a traceback after `wedge_*` seconds) instead of hanging."""
    import uvloop

    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    faulthandler.dump_traceback_later(wedge_quick if a.quick else wedge_full, exit=True)
    uvloop.install()
    asyncio.run(main(a.quick))  # type: ignore[arg-type]
