"""The search worker: `python -m workers.search`. Its own read model of MEM_EVENTS (BM25,
vectors, graph) and the retrieval functions (mem::search, mem::smart-search, mem::context…).

Run apart from the write path (the memory worker with AGENTMEMORY_SEARCH=off) so that
indexing never sits on an observe's event loop, and at a lower CPU priority so a burst of
ingest wins the CPU and the index catches up after; queries wait for the events already
acknowledged (SEARCH_FRESHNESS_SECONDS), so a write is visible to the next search.
"""

from __future__ import annotations

from engine import Worker
from functions.search.handlers import register

worker = Worker("search", description="agentmemory retrieval: BM25 + vectors + graph, fused")
register(worker)

if __name__ == "__main__":
    worker.run()
