"""Lifecycle at scale: consolidation + auto-forget over N synthetic observations, in the
real lifecycle worker process, with that process's peak RSS.

    .venv/bin/python -m ops.bench.lifecycle --quick     # 10,000 then 100,000 observations

The peer is the same run at a tenth of the size: `linearity` = (t_large / t_small) / 10,
so 1.0 means time grew exactly linearly (below 1: better than linear). The last line is
one JSON object: consolidate_s, forget_s, peak_rss_mb (at the largest size) and per size.
Observations are written straight into the KV bucket (the write path is measured by its
own benchmark); 1 in 10 is old and low-value, so auto-forget removes 10%.
"""

# ruff: noqa: E402

from __future__ import annotations

import argparse
import asyncio
import hashlib
import random
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # run as a script from anywhere, as the README shows

from engine import Client, connect
from engine.server import NatsServer
from functions.kernel.clock import iso
from functions.kernel.records import (
    Observation,
    ObservationAdded,
    Session,
    observation_events_subject,
)
from functions.kernel.store import MemoryStore
from ops.bench.harness import emit, peak_rss_mb, spawn_python

NOW = datetime(2026, 6, 1, tzinfo=UTC)
FILES = [f"src/pkg{m}/mod{n}.py" for m in range(20) for n in range(25)]
COMMANDS = ["pytest -q", "git commit -am x", "ruff check .", "npm test", "make build", "git push"]
CONCEPTS = [f"concept{n}" for n in range(200)]
PER_SESSION = 100


def observation(i: int, rng: random.Random) -> Observation:
    session = i // PER_SESSION
    when = NOW - timedelta(days=60) + timedelta(minutes=i)
    kind = rng.choice(("file_edit", "file_edit", "command", "file_read", "error", "prompt"))
    files = [rng.choice(FILES)] if kind in ("file_edit", "file_read", "error") else []
    title = {
        "file_edit": f"Edited {files[0] if files else ''}",
        "command": f"Ran: {rng.choice(COMMANDS)}",
        "file_read": f"Read {files[0] if files else ''}",
        "error": f"Bash failed: ImportError: module{rng.randrange(30)} not found",
        "prompt": f"Prompt: work item {i % 997}",
    }[kind]
    low = i % 10 == 0
    return Observation(
        id="obs_" + hashlib.sha256(str(i).encode()).hexdigest()[:24],
        session_id=f"bench-{session:05d}",
        project=f"project{session % 4}",
        hook_type="post_tool_use",
        timestamp=iso(when - timedelta(days=40) if low else when),
        type="session" if low else kind,
        title=title,
        narrative=f"{title}. Output: some text about the change number {i}.",
        files=files,
        concepts=rng.sample(CONCEPTS, 2),
        importance=2 if low else 5,
        raw=f"{title}\n" + "x" * 200,
    )


async def seed(client: Client, n: int) -> None:
    store = await MemoryStore(client).open()
    rng = random.Random(n)
    # Core publishes of the records to their project's subject, acks not awaited: the stream
    # stores them all; we then wait until it holds every one, and fold the id index.
    # Seeding is not what is measured.
    enc = msgspec.json.Encoder()
    before = (await store.events.info()).messages
    for i in range(n):
        o = observation(i, rng)
        data = enc.encode(ObservationAdded(observation=o))
        await client.nc.publish(observation_events_subject(o.project), data)
        if i % 5000 == 4999:
            await client.nc.flush()
    await client.nc.flush()
    while (await store.events.info()).messages < before + n:
        await asyncio.sleep(0.05)
    await store.fold_observations()
    sessions = (n + PER_SESSION - 1) // PER_SESSION
    for start in range(0, sessions, 500):
        await asyncio.gather(
            *(
                store.sessions.put(
                    f"bench-{s:05d}",
                    Session(
                        id=f"bench-{s:05d}",
                        project=f"project{s % 4}",
                        status="ended",
                        started_at=iso(NOW - timedelta(days=60)),
                        last_seen=iso(NOW - timedelta(days=59)),
                    ),
                )
                for s in range(start, min(sessions, start + 500))
            )
        )


async def measure(n: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        srv = NatsServer(store_dir=Path(tmp) / "js").start()
        worker = None
        try:
            nc = await connect(srv.url)
            client = Client(nc)
            t = time.perf_counter()
            await seed(client, n)
            seed_s = time.perf_counter() - t
            worker = spawn_python(
                ["-m", "workers.lifecycle"],
                env={"ENGINE_NATS_URL": srv.url},
                ready_mark="ENGINE_WORKER_READY",
            )
            t = time.perf_counter()
            cons = await client.call("mem::consolidate", {"now": iso(NOW)}, timeout=900)
            consolidate_s = time.perf_counter() - t
            t = time.perf_counter()
            forgot = await client.call("mem::auto-forget", {"now": iso(NOW)}, timeout=900)
            forget_s = time.perf_counter() - t
            rss = peak_rss_mb(worker.pid)
            await nc.close()
        finally:
            if worker is not None:
                worker.terminate()
                worker.wait(30)
            srv.kill()
    out = {
        "observations": n,
        "seed_s": round(seed_s, 2),
        "consolidate_s": round(consolidate_s, 2),
        "forget_s": round(forget_s, 2),
        "peak_rss_mb": round(rss, 1),
        "summarized": cons["summarized"],
        "semantic": cons["semantic"]["created"],
        "procedural": cons["procedural"]["created"],
        "forgotten": sum(forgot["removed"].values()),
    }
    print(out, file=sys.stderr, flush=True)
    return out


async def main(quick: bool) -> None:
    small_n, large_n = (10_000, 100_000)
    small = await measure(small_n)
    large = await measure(large_n)
    scale = large_n / small_n
    total_small = small["consolidate_s"] + small["forget_s"]
    total_large = large["consolidate_s"] + large["forget_s"]
    linearity = round((total_large / max(total_small, 1e-9)) / scale, 3)
    print(
        f"{large_n} observations: consolidate {large['consolidate_s']} s, auto-forget "
        f"{large['forget_s']} s, worker peak RSS {large['peak_rss_mb']} MB; "
        f"time ratio vs {small_n} / {scale:.0f} = {linearity} (<= 1 is linear or better)"
    )
    emit(
        {
            "bench": "lifecycle",
            "quick": quick,
            "consolidate_s": large["consolidate_s"],
            "forget_s": large["forget_s"],
            "peak_rss_mb": large["peak_rss_mb"],
            "linearity": linearity,
            "small": small,
            "large": large,
        }
    )


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="10k and 100k observations, once")
    args = ap.parse_args()
    asyncio.run(main(args.quick))
