"""Retrieval: BM25 + vectors + graph + time, fused by weighted RRF, over a read model of
MEM_EVENTS. Served by `workers.search` (or inline by `workers.memory`)."""
