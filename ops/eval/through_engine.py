"""LoCoMo through the product: a real nats-server, the real memory worker process, turns
written with `mem::observe` (hook `prompt_submit`), questions asked with `mem::smart-search`.
"""

from __future__ import annotations

import asyncio
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from engine import Client, connect
from engine.server import NatsServer
from ops.bench.harness import spawn_python
from ops.eval.locomo_data import Conversation, Scores, session_of


def _drain(stream: Any) -> None:
    for _ in stream:
        pass


def _spawn(url: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return spawn_python(
        ["-m", "workers.memory"],
        env={"ENGINE_NATS_URL": url, **env},
        ready_mark="ENGINE_WORKER_READY",
    )


async def _ingest(client: Client, convs: list[Conversation]) -> dict[str, str]:
    dia: dict[str, str] = {}
    sem = asyncio.Semaphore(16)

    async def one(conv: Conversation, i: int) -> None:
        t = conv.turns[i]
        async with sem:
            out = await client.call("mem::observe", {
                "hookType": "prompt_submit", "sessionId": f"{conv.sample_id}-s{t.session}",
                "project": conv.sample_id, "timestamp": t.timestamp,
                "data": {"prompt": t.text}, "eventId": f"{conv.sample_id}:{t.dia_id}",
            }, timeout=60)  # fmt: skip
        dia[str(out["observationId"])] = t.dia_id
        if out.get("held"):  # the corpus is clean: a held turn is a false positive
            held.append(f"{t.dia_id} {out.get('reasons')}: {t.text[:80]!r}")

    held: list[str] = []
    for conv in convs:
        for s in sorted(conv.sessions()):
            await client.call(
                "mem::session-start",
                {"sessionId": f"{conv.sample_id}-s{s}", "project": conv.sample_id},
            )
        await asyncio.gather(*(one(conv, i) for i in range(len(conv.turns))))
    print(f"held at write: {len(held)} of {len(dia)} turns", *held[:20], sep="\n  ", flush=True)
    return dia


async def _wait_indexed(client: Client, n: int, embeddings: bool, timeout: float = 1800) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = await client.call("mem::search-status", {})
        if (
            st["documents"] >= n
            and st["lag"] == 0
            and (not embeddings or st["pendingEmbeddings"] == 0)
        ):
            return
        await asyncio.sleep(0.5)
    raise TimeoutError("the index did not catch up")


async def _run(convs: list[Conversation], url: str, provider: str) -> Scores:
    proc = _spawn(url, {"EMBEDDING_PROVIDER": provider})
    nc = await connect(url)
    client = Client(nc)
    try:
        dia = await _ingest(client, convs)
        await _wait_indexed(client, len(dia), provider != "none")
        scores = Scores()
        for conv in convs:
            for q in conv.questions:
                out = await client.call(
                    "mem::smart-search",
                    {"query": q.question, "project": conv.sample_id, "limit": 50},
                    timeout=60,
                )
                turns = [dia[r["obsId"]] for r in out["results"] if r["obsId"] in dia]
                scores.add(q, turns, [session_of(d) for d in turns])
        return scores
    finally:
        await nc.close()
        proc.terminate()
        proc.wait(timeout=30)


def run_through_engine(convs: list[Conversation], provider: str = "none") -> Scores:
    with tempfile.TemporaryDirectory(prefix="locomo-eval-") as tmp:
        srv = NatsServer(store_dir=Path(tmp) / "js").start()
        try:
            return asyncio.run(_run(convs, srv.url, provider))
        finally:
            srv.kill()
