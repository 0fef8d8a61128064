"""Writes `kv_layout_datadir.tar.gz`: a store written by the code before observations were
records on MEM_EVENTS (one `mem_observations` KV key each), and what that code answered.

Run it with that code first on the path (a checkout of the commit before the change):

    git archive <commit> | tar -x -C /tmp/old
    PYTHONPATH=/tmp/old .venv/bin/python tests/memory/data/make_kv_layout_datadir.py

It starts nats-server and the memory worker (search in process), observes through
`mem::observe` (two projects, replays, one observation forgotten), and keeps the answers of
`mem::observation`, `mem::observations` and `mem::smart-search` beside the store
(`expected.json` inside the archive). tests/memory/test_store_upgrade.py opens the store
with today's code and asks the same.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import threading
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "kv_layout_datadir.tar.gz"
TOPICS = ["rotate the signing keys", "flaky parser test", "docker deploy timeout",
          "webhook relay retries", "pool exhausted under load", "schema migration rollback"]  # fmt: skip
QUERIES = ["signing keys", "parser test", "deploy timeout", "relay retries", "pool load"]
ENV = {"SEARCH_SNAPSHOT_SECONDS": "0.5", "EMBEDDING_PROVIDER": "none", "ENGINE_TRACING": "off",
       "AGENTMEMORY_SEARCH": "on"}  # fmt: skip


def payload(i: int) -> dict[str, Any]:
    return {
        "hookType": "post_tool_use", "sessionId": f"s{i % 4}", "project": f"proj{i % 2}",
        "cwd": "/w", "timestamp": f"2026-11-{1 + i % 28:02d}T10:{i % 60:02d}:00.000Z",
        "eventId": f"toolu_old_{i:04d}",
        "data": {"tool_name": "Bash", "tool_input": {"command": f"run {TOPICS[i % 6]} {i}"},
                 "tool_output": f"{TOPICS[i % len(TOPICS)]} case {i} marker{i}"},
    }  # fmt: skip


def _drain(stream: Any) -> None:
    for _ in stream:
        pass


async def main() -> None:
    from engine import Client, connect
    from engine.server import NatsServer

    tmp = Path(tempfile.mkdtemp(prefix="kv-layout-"))
    srv = NatsServer(store_dir=tmp / "js").start()
    env = dict(os.environ, ENGINE_NATS_URL=srv.url, HOME=str(tmp / "home"), **ENV)
    env["SEARCH_INDEX_DIR"] = str(tmp / "search")
    worker = subprocess.Popen(
        [sys.executable, "-m", "workers.memory"], env=env, stderr=subprocess.PIPE
    )
    assert worker.stderr is not None
    for raw in worker.stderr:
        if b"ENGINE_WORKER_READY" in raw:
            break
    threading.Thread(target=_drain, args=(worker.stderr,), daemon=True).start()
    client = Client(await connect(srv.url))
    expected: dict[str, Any] = {"observations": {}, "sessions": {}, "search": {}}
    ids = []
    for i in range(60):
        out = await client.call("mem::observe", payload(i), timeout=10)
        ids.append(out["observationId"])
    for i in (3, 17):  # replays: duplicates
        assert (await client.call("mem::observe", payload(i), timeout=10))["status"] == "duplicate"
    forgotten = ids[5]
    await client.call("mem::forget", {"observationIds": [forgotten]}, timeout=10)
    expected["forgotten"] = forgotten
    await asyncio.sleep(2.0)  # the index applied everything
    for oid in ids:
        if oid != forgotten:
            got = await client.call("mem::observation", {"id": oid}, timeout=10)
            expected["observations"][oid] = got["observation"]
    for s in range(4):
        got = await client.call("mem::observations", {"sessionId": f"s{s}"}, timeout=10)
        expected["sessions"][f"s{s}"] = [o["id"] for o in got["observations"]]
    for q in QUERIES:
        for project in ("proj0", "proj1"):
            got = await client.call(
                "mem::smart-search", {"query": q, "project": project, "limit": 10}, timeout=10
            )
            expected["search"][f"{project}|{q}"] = [
                [r["obsId"], r["score"]] for r in got["results"]
            ]
    await client.nc.close()
    worker.terminate()
    worker.wait(30)
    srv.kill()
    (tmp / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True))
    with tarfile.open(OUT, "w:gz") as tar:
        tar.add(tmp / "js", arcname="js")
        tar.add(tmp / "expected.json", arcname="expected.json")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    asyncio.run(main())
