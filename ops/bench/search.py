"""Search latency on a synthetic coding-agent corpus, next to tantivy on the same documents.

100,000 deterministic observations (tools, files, errors, prose) in 20 projects; 200
queries (files, symbols, error codes, prose) each searched within its project.
Figures: `mem::smart-search` p50/p99 through NATS against a real memory worker (which
boots from the snapshot this script builds, the product's own boot path), in-process
query p50 (and with one new document added before each query: search under ingest) and
tantivy query p50 on the same text (measured in alternation, query by
query), index build rate, RSS.
The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import tantivy  # noqa: E402

from engine import Client, connect  # noqa: E402
from engine.server import NatsServer  # noqa: E402
from engine.settings import environ  # noqa: E402
from functions.kernel.records import Observation  # noqa: E402
from functions.search import index_snapshot  # noqa: E402
from functions.search.index import SearchIndex  # noqa: E402
from ops.bench.harness import spawn_python  # noqa: E402
from ops.bench.search_corpus import corpus, queries  # noqa: E402


def _text(o: Observation) -> str:
    return " ".join([o.title, o.narrative, o.raw, *o.facts, *o.concepts, *o.files])


def tantivy_searcher(docs: list[Observation]) -> Callable[[str, str], list[str]]:
    """tantivy over the same text: a function running one query within a project, top 10
    ids (what our in-process search returns)."""
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("body", stored=False, tokenizer_name="en_stem")
    sb.add_text_field("project", stored=False, tokenizer_name="raw")
    sb.add_text_field("id", stored=True, tokenizer_name="raw")
    schema = sb.build()
    index = tantivy.Index(schema)
    w = index.writer(heap_size=200_000_000, num_threads=1)
    for o in docs:
        w.add_document(tantivy.Document(body=_text(o), project=o.project, id=o.id))
    w.commit()
    index.reload()
    searcher = index.searcher()

    def search(q: str, proj: str) -> list[str]:
        text_q = index.parse_query_lenient(q, ["body"])[0]
        filt = tantivy.Query.term_query(schema, "project", proj)
        query = tantivy.Query.boolean_query(
            [(tantivy.Occur.Must, text_q), (tantivy.Occur.Must, filt)]
        )
        hits = searcher.search(query, 10).hits
        return [searcher.doc(a)["id"] for _s, a in hits]

    return search


def _spawn(url: str) -> subprocess.Popen[bytes]:
    env = environ(
        ENGINE_NATS_URL=url,
        PYTHONPATH=str(ROOT),
        EMBEDDING_PROVIDER="none",
        SEARCH_SNAPSHOT_SECONDS="3600",
    )
    return spawn_python(["-m", "workers.memory"], env=env, ready_mark="ENGINE_WORKER_READY")


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def through_nats(
    blob: bytes, qs: list[tuple[str, str]], warm: list[tuple[str, str]], rounds: int
) -> tuple[list[float], float]:
    with tempfile.TemporaryDirectory(prefix="bench-search-") as tmp:
        srv = NatsServer(store_dir=Path(tmp) / "js").start()
        nc = await connect(srv.url)
        proc = None
        try:
            js = nc.jetstream()
            store = await js.create_object_store("mem_search_snapshots")
            await store.put("index", blob)
            proc = _spawn(srv.url)
            client = Client(nc)
            for q, proj in warm:
                await client.call("mem::smart-search", {"query": q, "project": proj, "limit": 10})
            times: list[float] = []
            for _ in range(rounds):
                for q, proj in qs:
                    t = time.perf_counter()
                    await client.call(
                        "mem::smart-search", {"query": q, "project": proj, "limit": 10}
                    )
                    times.append(time.perf_counter() - t)
            return times, _rss_mb(proc.pid)
        finally:
            if proc is not None:
                proc.terminate()
                proc.wait(timeout=30)
            await nc.close()
            srv.kill()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    args = ap.parse_args()
    rounds = 1 if args.quick else 3
    docs = corpus(args.docs)
    qs = queries(args.queries)

    index = SearchIndex()
    t = time.perf_counter()
    for o in docs:
        index.add(o)
    build = time.perf_counter() - t
    blob = index_snapshot.dump(index)

    # Warm-up uses other queries (another seed), so the measured ones are unseen. Ours and
    # tantivy run query by query in alternation: on a shared machine a burst of load then
    # hits both alike instead of whichever block it fell in.
    tan_search = tantivy_searcher(docs)
    warm = queries(args.queries, seed=8)
    for q, proj in warm:
        index.search(q, project=proj, limit=10)
        tan_search(q, proj)
    inproc: list[float] = []
    tan_times: list[float] = []
    for _ in range(rounds):
        for q, proj in qs:
            t = time.perf_counter()
            index.search(q, project=proj, limit=10)
            inproc.append(time.perf_counter() - t)
            t = time.perf_counter()
            tan_search(q, proj)
            tan_times.append(time.perf_counter() - t)
    tan = statistics.median(tan_times) * 1000
    # Under ingest: one new document before each query (the scope of its filter grows).
    after_write: list[float] = []
    for o, (q, proj) in zip(corpus(args.docs + len(qs))[args.docs :], qs, strict=True):
        index.add(o)
        t = time.perf_counter()
        index.search(q, project=proj, limit=10)
        after_write.append(time.perf_counter() - t)
    smart, worker_rss = asyncio.run(through_nats(blob, qs, warm, rounds))
    smart.sort()
    inproc_p50 = statistics.median(inproc) * 1000
    out = {
        "docs": len(docs),
        "queries": len(qs),
        "smart_p50_ms": round(statistics.median(smart) * 1000, 3),
        "smart_p99_ms": round(smart[int(0.99 * (len(smart) - 1))] * 1000, 3),
        "inproc_p50_ms": round(inproc_p50, 3),
        "inproc_after_write_p50_ms": round(statistics.median(after_write) * 1000, 3),
        "tantivy_p50_ms": round(tan, 3),
        "ratio": round(inproc_p50 / tan, 2),
        "index_build_obs_per_s": round(len(docs) / build),
        "rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "worker_rss_mb": round(worker_rss, 1),
        "snapshot_mb": round(len(blob) / 1e6, 1),
    }
    print(
        f"ours in-process p50 {out['inproc_p50_ms']} ms vs tantivy {out['tantivy_p50_ms']} ms: ratio {out['ratio']}"
    )
    print(json.dumps(out))


if __name__ == "__main__":
    main()
