"""Retrieval: BM25 + vectors + graph + time, fused by weighted RRF, over a read model of
MEM_EVENTS. `functions.search.handlers.register(worker)` adds the search functions to a worker."""
