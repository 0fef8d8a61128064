"""Reading a large object (a search snapshot) back from the object store: `Objects.get` of
the engine against nats-py's own `ObjectStore.get` without a buffer (the peer, and what
the engine did before), on one embedded nats-server.

    .venv/bin/python -m ops.bench.objects --quick    # 8 and 32 MB (under a minute)
    .venv/bin/python -m ops.bench.objects            # 8, 32 and 96 MB

nats-py joins the chunks of an object with `bytes +=` unless it is given `writeinto`: the
copy grows with every chunk, so a read costs the square of the size. The last line is one
JSON object: seconds per read for each size and the ratio peer / ours.
"""

# ruff: noqa: E402

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # run as a script from anywhere, as the README shows

from engine import Client, connect
from engine.server import NatsServer
from ops.bench.harness import emit, machine, median, run_async


async def main(quick: bool) -> None:
    sizes = [8, 32] if quick else [8, 32, 96]
    out: dict[str, Any] = {"bench": "objects", "quick": quick}
    with tempfile.TemporaryDirectory() as tmp:
        srv = NatsServer(store_dir=Path(tmp) / "js").start()
        try:
            nc = await connect(srv.url)
            client = Client(nc)
            objects = await client.objects("BENCH_OBJECTS")
            raw = await nc.jetstream().object_store("BENCH_OBJECTS")
            for mb in sizes:
                data = os.urandom(mb << 20)
                await objects.put("snap", data)
                ours, peer = [], []
                for _ in range(3):  # alternating, so load drifts hit both alike
                    t = time.perf_counter()
                    got = await objects.get("snap")
                    ours.append(time.perf_counter() - t)
                    assert got == data
                    t = time.perf_counter()
                    res = await raw.get("snap")
                    peer.append(time.perf_counter() - t)
                    assert res.data == data
                out[f"ours_{mb}mb_s"] = round(median(ours), 3)
                out[f"peer_{mb}mb_s"] = round(median(peer), 3)
                out[f"ratio_{mb}mb"] = round(median(peer) / median(ours), 2)
            await nc.close()
        finally:
            srv.stop()
    emit({**out, **machine()})


if __name__ == "__main__":
    run_async(main, 120, 600)
