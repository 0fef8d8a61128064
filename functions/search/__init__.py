"""Retrieval: BM25 + vectors + graph + time, fused by weighted RRF, over a read model of
MEM_EVENTS. `register(worker)` adds the search functions to a worker."""

from functions.search.feeder import IndexHolder
from functions.search.handlers import register
from functions.search.index import Hit, SearchConfig, SearchIndex

__all__ = ["Hit", "IndexHolder", "SearchConfig", "SearchIndex", "register"]
