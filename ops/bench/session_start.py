"""Session start at scale: what `POST /agentmemory/context` and `POST
/agentmemory/session/start` (every agent's first call) cost on a large store, next to the
same requests for a project with nothing in it (the peer: the fixed cost of the route, the
bus and the session record, in the same run).

Three ways to run it:
- in process (default; `--quick`: 100,000 observations, else `--docs`): the search
  service over an index of that many observations of one project (ops/bench/search.py's
  corpus), `mem::context` called as its route calls it, and the peer on an empty project
  of the same index;
- through the default install on a kept data dir (`--data-dir DIR`: `soak.py --keep-data
  DIR` keeps one; the 1M store is the figure that matters): the install started on it,
  both routes timed serially, the peer interleaved with them;
- at the end of every soak (`ops/bench/soak.py`): its JSON line carries the same fields.

    python ops/bench/session_start.py [--quick] [--docs N] [--requests 50]
    python ops/bench/session_start.py --data-dir DIR [--requests 100]

Last line: one JSON object (`context_p50_ms`, `session_start_p50_ms`, their peers and
ratios, `left_out`: replies that named something not ready in time).
"""

# ruff: noqa: E402
from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


from ops.bench.harness import PROJECT, SECRET, Connection, HttpFailure, emit, machine
from ops.bench.session_probe import EMPTY, figures, measure


async def in_process(docs: int, requests: int) -> dict[str, Any]:
    """The search service over `docs` observations of one project, no bus."""
    from functions.search.feeder import IndexHolder
    from functions.search.index import SearchIndex
    from functions.search.search_service import SearchService
    from functions.search.wire import ContextIn
    from ops.bench.search_corpus import corpus

    service = SearchService(IndexHolder(SearchIndex(), load_embedder=False))
    index = service.holder.index
    t0 = time.perf_counter()
    for o in corpus(docs):
        o.project = PROJECT
        index.add(o)
    build = time.perf_counter() - t0
    ours: list[float] = []
    peer: list[float] = []
    blocks = 0
    for i in range(-3, requests):
        for project, into in ((PROJECT, ours), (EMPTY, peer)):
            t = time.perf_counter()
            out = await service.context(ContextIn(session_id="bench", project=project))
            if i >= 0:
                into.append(1000 * (time.perf_counter() - t))
            if project == PROJECT:
                blocks = len(out.blocks)
    return {
        "mode": "in process",
        "docs": docs,
        **figures("context", ours, peer),
        "context_blocks": blocks,
        "index_build_s": round(build, 1),
    }


async def answering(port: int, timeout: float = 180.0) -> None:
    """Until `POST context` answers 200 (the search worker restored its index)."""
    t0 = time.monotonic()
    while True:
        conn = Connection("127.0.0.1", port, SECRET)
        try:
            status, _ = await conn.request("POST", "/agentmemory/context", {"project": EMPTY})
            if status == 200:
                return
        except HttpFailure:
            pass
        finally:
            conn.close()
        if time.monotonic() - t0 > timeout:
            raise RuntimeError(f"POST context not answered within {timeout} s")
        await asyncio.sleep(0.1)


async def on_data_dir(data: Path, requests: int, config: Path) -> dict[str, Any]:
    from ops.bench.harness import Engine, disk_mb

    if not (data / "nats").is_dir():
        raise SystemExit(f"--data-dir: {data} is not a data dir (no nats/ in it)")
    tmp = Path(tempfile.mkdtemp(prefix="session-start-bench-"))
    (tmp / "data").symlink_to(data.resolve())
    engine = Engine(tmp, config)
    try:
        started = await asyncio.to_thread(engine.start)
        await answering(engine.rest_port)
        got = await measure(engine.rest_port, PROJECT, requests)
    finally:
        engine.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return {"mode": "install", "data_dir": str(data), "disk_mb": round(disk_mb(data), 1),
            "startup_s": round(started, 2), **got}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="100,000 observations in process")
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--requests", type=int, default=50)
    ap.add_argument("--data-dir", default="", help="a kept data dir, through the install")
    ap.add_argument("--config", default=str(ROOT / "config" / "engine.yaml"))
    args = ap.parse_args()
    if args.data_dir:
        out = asyncio.run(on_data_dir(Path(args.data_dir), args.requests, Path(args.config)))
    else:
        out = asyncio.run(in_process(100_000 if args.quick else args.docs, args.requests))
    emit({"bench": "session_start", **out, **machine()})


if __name__ == "__main__":
    main()
