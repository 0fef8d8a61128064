"""Sealed postings (functions/search/postings.py) rank exactly as the in-memory lists did:
sealed at any point, queried between writes, through a snapshot, an index gives the same
hits, scores and per-stream rankings as one that never sealed, and holds no list object
per term and partition once sealed."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from functions.kernel.records import MemEvent
from functions.search import index_snapshot
from functions.search.index import SearchIndex
from tests.search.ranking_corpus import build, events, rankings

pytestmark = pytest.mark.unit


def _sealing_every(n: int, query_between: bool) -> SearchIndex:
    index = SearchIndex()
    for i, ev in enumerate(events(), 1):
        index.apply(msgspec.convert(ev, MemEvent), seq=i)
        if query_between and i % 7 == 0:
            index.search("cache timeout", project="p1", limit=5)
        if i % n == 0:
            index.bm25.seal()
    return index


def test_sealed_postings_rank_like_the_lists_they_replace() -> None:
    plain = rankings(build(SearchIndex, MemEvent))
    assert sum(len(r["hits"]) for r in plain) > 500
    for every, between in ((1, False), (97, True), (400, False), (10_000, True)):
        index = _sealing_every(every, between)
        got: list[dict[str, Any]] = rankings(index)
        assert got == plain, (every, between)
    index.bm25.seal()
    assert not index.bm25.postings and len(index.bm25.sealed) > 10_000  # all flat now
    assert rankings(index) == plain


def test_a_snapshot_stores_the_sealed_arrays_and_ranks_the_same() -> None:
    index = _sealing_every(499, True)  # a tail left unsealed at the end
    assert index.bm25.postings
    again = index_snapshot.load(index_snapshot.dump(index), SearchIndex())
    assert not again.bm25.postings  # restored flat: no list per term and partition
    assert rankings(again) == rankings(build(SearchIndex, MemEvent))
    assert again.bm25.term_count() == index.bm25.term_count()
    # writes after the restore go to a new tail and are found
    again.apply(msgspec.convert(events(1)[0], MemEvent), seq=again.seq + 1)
    assert again.bm25.postings
