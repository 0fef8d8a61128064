"""Both session-start routes timed on a running install (`POST context`, `POST
session/start`), each next to the same request for an empty project: shared by
ops/bench/session_start.py and the end of every soak (ops/bench/soak.py)."""

from __future__ import annotations

import statistics
import time
from typing import Any

import msgspec

from ops.bench.harness import PROJECT, SECRET, Connection, pct

EMPTY = "session-start-bench-empty"
"""A project with no records: the peer's."""


def figures(name: str, ours: list[float], peer: list[float]) -> dict[str, Any]:
    p50, peer50 = statistics.median(ours), statistics.median(peer)
    return {
        f"{name}_p50_ms": round(p50, 2),
        f"{name}_p99_ms": round(pct(ours, 99), 2),
        f"{name}_empty_p50_ms": round(peer50, 2),
        f"{name}_ratio": round(p50 / peer50, 2) if peer50 else None,
    }


async def measure(port: int, project: str = PROJECT, requests: int = 50) -> dict[str, Any]:
    """Both routes on a running install, serially, each request for `project` followed by
    the same for the empty project. `context_blocks`: blocks of the last context."""
    conn = Connection("127.0.0.1", port, SECRET)
    times: dict[str, list[float]] = {k: [] for k in ("ctx", "ctx0", "start", "start0")}
    left_out = blocks = 0
    tag = f"b{int(time.time())}"
    try:
        for i in range(-3, requests):  # three rounds of warm-up (the fence, caches)
            for key, path, body in (
                ("ctx", "context", {"sessionId": f"{tag}-c", "project": project}),
                ("ctx0", "context", {"sessionId": f"{tag}-c", "project": EMPTY}),
                ("start", "session/start", {"sessionId": f"{tag}-{i}", "project": project,
                                            "cwd": "/work/bench"}),
                ("start0", "session/start", {"sessionId": f"{tag}-e{i}", "project": EMPTY,
                                             "cwd": "/work/bench"}),
            ):  # fmt: skip
                t0 = time.perf_counter()
                status, data = await conn.request("POST", f"/agentmemory/{path}", body)
                took = 1000 * (time.perf_counter() - t0)
                if status != 200:
                    raise RuntimeError(f"POST {path} answered {status}: {data[:300]!r}")
                reply = msgspec.json.decode(data)
                if i < 0:
                    continue
                times[key].append(took)
                left_out += bool(reply.get("leftOut"))
                if key == "ctx":
                    blocks = len(reply.get("blocks", []))
    finally:
        conn.close()
    return {
        **figures("context", times["ctx"], times["ctx0"]),
        **figures("session_start", times["start"], times["start0"]),
        "context_blocks": blocks,
        "left_out": left_out,
        "context_requests": requests,
    }
