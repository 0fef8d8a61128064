"""Shared bits of the benchmarks: percentiles, process helpers, the JSON last line."""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

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
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def emit(figures: dict[str, Any]) -> None:
    """The last line a benchmark prints: one JSON object."""
    print(json.dumps(figures), flush=True)
