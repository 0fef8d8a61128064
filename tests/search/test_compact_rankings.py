"""The packed index ranks exactly as the one-object-per-document index did: the same hits,
scores and per-stream rankings on a fixed corpus (memories, supersessions, summaries,
removals, agents, global memories) for every query and project filter. The expected lists
were written by the index before the change (tests/search/ranking_corpus.py); a snapshot
round trip keeps them too, and so does a snapshot in the older format.

The fixture: `python -m tests.search.ranking_corpus` run on that older index (5ff9d6f^) with
one change, the tie-break at the top-k cut (functions/search/ranking.py `ranked`): without it
the entries tied with the k-th score were left in numpy's partition order, which differs
between CPUs (7 of 72 lists on an AVX-512 machine against the fixture another wrote)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from functions.kernel.records import MemEvent
from functions.search import index_snapshot
from functions.search.index import SearchIndex
from tests.search.ranking_corpus import build, rankings

pytestmark = pytest.mark.unit

EXPECTED: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "fixtures" / "rankings.json").read_text()
)


def _normal(got: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = json.loads(json.dumps(got))  # tuples as the fixture's lists
    return out


def test_the_packed_index_ranks_like_the_old_one() -> None:
    got = _normal(rankings(build(SearchIndex, MemEvent)))
    assert len(got) == len(EXPECTED) > 50
    for g, e in zip(got, EXPECTED, strict=True):
        assert g == e, (e["query"], e["project"])
    assert sum(len(e["hits"]) for e in EXPECTED) > 500  # the corpus answers most queries


def test_a_snapshot_round_trip_ranks_the_same() -> None:
    index = build(SearchIndex, MemEvent)
    again = index_snapshot.load(index_snapshot.dump(index), SearchIndex())
    assert _normal(rankings(again)) == EXPECTED
    assert len(again) == len(index) and again.seq == index.seq


def test_a_snapshot_of_the_older_format_loads_and_ranks_the_same() -> None:
    index = build(SearchIndex, MemEvent)
    new = msgspec.msgpack.decode(index_snapshot.dump(index))
    # format 3: one Meta per slot (None once removed) and entities as a dict
    old = dict(new, format=3, meta=[msgspec.to_builtins(m) for m in index.meta])
    ents = index.graph.ents_of
    old["graph_ents"] = {d: list(ents.get(d)) for d in range(len(index.meta)) if ents.get(d)}
    for k in ("meta_buf", "meta_end", "meta_live", "graph_ents_flat", "graph_ents_end"):
        old.pop(k)
    sealed = index.bm25.sealed  # format 3's postings: one entry per term and partition
    old["postings"] = {
        t: [(p, d.tobytes(), f.tobytes()) for p, d, f in sealed.lists(t)] for t in sealed.terms
    }
    old.pop("sealed")
    loaded = index_snapshot.load(msgspec.msgpack.encode(old), SearchIndex())
    assert _normal(rankings(loaded)) == EXPECTED
