"""The search worker: `python -m workers.search`. Its own read model of MEM_EVENTS (BM25,
vectors, graph) and the retrieval functions (mem::search, mem::smart-search, mem::context…).

Run apart from the write path (the memory worker with AGENTMEMORY_SEARCH=off) so that
indexing never sits on an observe's event loop, and at a lower CPU priority so a burst of
ingest wins the CPU and the index catches up after; queries wait for the events already
acknowledged (SEARCH_FRESHNESS_SECONDS), so a write is visible to the next search.
"""

from __future__ import annotations

from engine import Worker
from engine.heap import map_large_allocations
from functions.search.embed_queue import QUEUE, EmbedService
from functions.search.feeder import IndexHolder
from functions.search.held_service import HeldService
from functions.search.search_service import SearchService


def serve_search(worker: Worker, holder: IndexHolder | None = None) -> SearchService:
    """The search operations on `worker`; the index starts and stops with it. Where the
    index embeds through the queue, `mem::embed` and its queue trigger too."""
    svc = SearchService(holder or IndexHolder())
    worker.on_start(svc.start)
    worker.on_stop(svc.stop)
    worker.serve(svc)
    held = HeldService(svc.holder)
    worker.on_start(held.start)
    worker.serve(held)
    if svc.holder.queue is not None and svc.holder.embedder is not None:
        worker.serve(EmbedService(svc.holder.embedder))
        worker.trigger(
            "queue", "mem::embed", queue=QUEUE, concurrency=2, timeout=300, max_attempts=8
        )
    return svc


def build() -> Worker:
    # The index grows and drops large arrays for the life of the process: each gets its own
    # mapping, not a place in the heap that stays resident once freed (engine/_heap.py).
    map_large_allocations()
    worker = Worker("search", description="agentmemory retrieval: BM25 + vectors + graph, fused")
    serve_search(worker)
    return worker


if __name__ == "__main__":
    build().run()
