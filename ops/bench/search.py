"""Search latency on a synthetic coding-agent corpus, next to tantivy on the same documents.

100,000 deterministic observations (tools, files, errors, prose) in 20 projects; 200
queries (files, symbols, error codes, prose) each searched within its project.
Figures: `mem::smart-search` p50/p99 through NATS against a real memory worker (which
boots from the snapshot this script builds, the product's own boot path), in-process
query p50 (and with one new document added before each query: search under ingest) and
tantivy query p50 on the same text (measured in alternation, query by
query), index build rate, RSS.

`--one-scope`: one project of 1,000,000 observations shaped like the load benches' (a test
command and eight lines of twelve words of a Zipf draw; `--quick`: 50,000; the last 12,000,
or a tenth, added after the seal), two-word Zipf queries over the whole project, in
process, query by query in alternation: ours pruned (functions/search/pruning.py), ours
exhaustive (the dense path) and tantivy's block-max WAND top 10 on the same text; for
`SearchIndex.search` (every stream and fusion) and for the BM25 top alone, with the share
of the query's postings the pruned top read; then both of ours with one new document
before each query.
The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import tantivy  # noqa: E402

from engine import Client, connect  # noqa: E402
from engine.server import NatsServer  # noqa: E402
from engine.settings import environ  # noqa: E402
from functions.kernel.records import Observation  # noqa: E402
from functions.search import index_snapshot, pruning  # noqa: E402
from functions.search.index import SearchIndex  # noqa: E402
from functions.search.ranking import top  # noqa: E402
from ops.bench.harness import PROJECT, WORDS, emit, machine, pct, spawn_python, words  # noqa: E402
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


def scope_corpus(n: int, start: int = 0) -> list[Observation]:
    """Observations as the load benches' hooks make them (functions/memory/compress.py's
    shape for a Bash call: the command, its output's first line, the eight most frequent
    words as concepts), all in one project, 64 sessions per client of 50. Words are drawn
    as `harness.words` draws them (int(paretovariate(1.1)) - 1 is floor(numpy's Lomax
    draw)), all at once."""
    rng = np.random.default_rng(1000 + start)
    drawn = np.minimum(len(WORDS) - 1, np.floor(rng.pareto(1.1, (n, 8, 12)))).astype(np.int64)
    vocab = np.array(WORDS, dtype=object)
    out: list[Observation] = []
    for j, i in enumerate(range(start, start + n)):
        word = WORDS[i % len(WORDS)]
        path = f"tests/test_{word}.py"
        lines = [" ".join(row) for row in vocab[drawn[j]].tolist()]
        counts = Counter(" ".join(lines).split())
        out.append(Observation(
            id=f"obs{i:07d}", session_id=f"c{i % 50}-s{(i // 50) % 64}", project=PROJECT,
            hook_type="post_tool_use", timestamp="2026-11-29T10:00:00.000Z", type="command",
            title=f"Ran: pytest -q {path}", narrative=f"Bash on {path}. Output: {lines[0]}",
            facts=[f"files: {path}"],
            concepts=["python", "bash", *(w for w, _ in counts.most_common(8)), "pytest"],
            files=[path], tool_name="Bash", importance=4,
            raw=f'{{"command": "pytest -q {path}"}}\n' + "\n".join(lines),
        ))  # fmt: skip
    return out


def tantivy_scope(docs: list[Observation]) -> Callable[[str], list[str]]:
    """tantivy over the same text, one query a disjunction of its words (block-max WAND):
    the top 10 ids. Every document is in the one project, so no filter."""
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("body", stored=False, tokenizer_name="en_stem")
    sb.add_text_field("id", stored=True, tokenizer_name="raw")
    schema = sb.build()
    index = tantivy.Index(schema)
    w = index.writer(heap_size=400_000_000, num_threads=1)
    for o in docs:
        w.add_document(tantivy.Document(body=_text(o), id=o.id))
    w.commit()
    w.wait_merging_threads()
    index.reload()
    searcher = index.searcher()

    def search(q: str) -> list[str]:
        hits = searcher.search(index.parse_query_lenient(q, ["body"])[0], 10).hits
        return [searcher.doc(a)["id"] for _s, a in hits]

    return search


def _timed(f: Callable[[], object], into: list[float]) -> None:
    t = time.perf_counter()
    f()
    into.append(time.perf_counter() - t)


def one_scope(n: int, n_queries: int, tail: int) -> None:
    """Ours pruned, ours exhaustive (the dense path: every posting of the query's words in
    the scope, with the contributions a scope keeps between queries) and tantivy, query by
    query in alternation; the pruned BM25 top is checked equal to the dense one."""
    t0 = time.perf_counter()
    docs = scope_corpus(n)
    index = SearchIndex()
    for o in docs[: n - tail]:
        index.add(o)
    index.bm25.seal()  # what a snapshot leaves; the tail is what came after it
    for o in docs[n - tail :]:
        index.add(o)
    build = time.perf_counter() - t0
    t0 = time.perf_counter()
    tan = tantivy_scope(docs)
    tan_build = time.perf_counter() - t0
    del docs
    # pruned or exhaustive whatever the size (a scope under `pruning.PRUNE_MIN` is scored
    # densely by the product)
    prune, dense = 0, 1 << 62
    pruning.PRUNE_MIN = prune
    rng = random.Random(99)  # the paced soak's queries
    qs = [words(rng, 2) for _ in range(n_queries)]
    warm = random.Random(98)
    for _ in range(min(50, n_queries)):
        q = words(warm, 2)
        index.search(q, project=PROJECT, limit=10)
        tan(q)
    t: dict[str, list[float]] = {k: [] for k in ("ours", "dense", "bm25", "bm25_dense", "peer")}
    read: list[float] = []
    scored: list[float] = []
    unequal = 0
    scope = index.scope(PROJECT)
    ids = scope.numbering()[0]
    for q in qs:
        _timed(lambda: index.search(q, project=PROJECT, limit=10), t["ours"])  # noqa: B023
        _timed(lambda: tan(q), t["peer"])  # noqa: B023
        pruning.PRUNE_MIN = dense
        _timed(lambda: index.search(q, project=PROJECT, limit=10), t["dense"])  # noqa: B023
        pruning.PRUNE_MIN = prune
        clauses = index.clauses(q)
        pruned = pruning.Pruned(index.bm25, clauses, scope)
        got: list[np.ndarray] = []
        _timed(lambda: got.append(pruned.top(30)), t["bm25"])  # noqa: B023
        want: list[list[int]] = []
        _timed(
            lambda: want.append(ids[top(index.bm25.score(clauses, scope), 30)].tolist()),  # noqa: B023
            t["bm25_dense"],
        )
        unequal += got[0].tolist() != want[0]
        read.append(pruned.read / max(1, pruned.exhaustive()))
        scored.append(pruned.scored / scope.n)
    # Under ingest: one new document before each query (a new scope: new statistics, so
    # no contribution kept from the query before), pruned and exhaustive in alternation.
    after: list[float] = []
    after_dense: list[float] = []
    fresh = iter(scope_corpus(2 * len(qs), start=n))
    for q in qs:
        index.add(next(fresh))
        _timed(lambda: index.search(q, project=PROJECT, limit=10), after)  # noqa: B023
        index.add(next(fresh))
        pruning.PRUNE_MIN = dense
        _timed(lambda: index.search(q, project=PROJECT, limit=10), after_dense)  # noqa: B023
        pruning.PRUNE_MIN = prune
    ms = lambda xs, p: round(1000 * pct(xs, p), 3)  # noqa: E731
    out = {
        "bench": "search_one_scope",
        "docs": n,
        "tail": tail,
        "queries": len(qs),
        "p50_ms": ms(t["ours"], 50),
        "p99_ms": ms(t["ours"], 99),
        "exhaustive_p50_ms": ms(t["dense"], 50),
        "exhaustive_p99_ms": ms(t["dense"], 99),
        "bm25_p50_ms": ms(t["bm25"], 50),
        "bm25_p99_ms": ms(t["bm25"], 99),
        "bm25_exhaustive_p50_ms": ms(t["bm25_dense"], 50),
        "bm25_exhaustive_p99_ms": ms(t["bm25_dense"], 99),
        "after_write_p50_ms": ms(after, 50),
        "after_write_p99_ms": ms(after, 99),
        "after_write_exhaustive_p50_ms": ms(after_dense, 50),
        "after_write_exhaustive_p99_ms": ms(after_dense, 99),
        "tantivy_p50_ms": ms(t["peer"], 50),
        "tantivy_p99_ms": ms(t["peer"], 99),
        "ratio": round(pct(t["ours"], 50) / pct(t["peer"], 50), 2),
        "bm25_ratio": round(pct(t["bm25"], 50) / pct(t["peer"], 50), 2),
        "exhaustive_over_pruned_bm25": round(pct(t["bm25_dense"], 50) / pct(t["bm25"], 50), 2),
        "postings_read_p50": round(pct(read, 50), 4),
        "postings_read_p99": round(pct(read, 99), 4),
        "postings_read_mean": round(statistics.mean(read), 4),
        "scored_share_mean": round(statistics.mean(scored), 4),
        "pruned_unequal": unequal,
        "build_s": round(build, 1),
        "tantivy_build_s": round(tan_build, 1),
        "rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        **machine(),
    }
    print(
        f"one scope of {n}: search p50 {out['p50_ms']} ms pruned, {out['exhaustive_p50_ms']} "
        f"exhaustive; BM25 top alone {out['bm25_p50_ms']} pruned, "
        f"{out['bm25_exhaustive_p50_ms']} exhaustive; tantivy {out['tantivy_p50_ms']} ms: "
        f"ratio {out['ratio']} (BM25 alone {out['bm25_ratio']}); postings read "
        f"{out['postings_read_p50']} (p50); {unequal} pruned tops unequal to the dense ones"
    )
    emit(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--docs", type=int, default=None)
    ap.add_argument("--queries", type=int, default=None)
    ap.add_argument("--one-scope", action="store_true", help="one project, Zipf queries")
    ap.add_argument(
        "--tail", type=int, default=12_000,
        help="--one-scope: documents added after the seal (a minute at 200/s)",
    )  # fmt: skip
    args = ap.parse_args()
    if args.one_scope:
        n = args.docs or (50_000 if args.quick else 1_000_000)
        one_scope(n, args.queries or (100 if args.quick else 500), min(args.tail, n // 10))
        return
    args.docs = args.docs or 100_000
    args.queries = args.queries or 200
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
