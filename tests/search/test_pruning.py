"""The pruned BM25 top (functions/search/pruning.py) is the dense computation's, bit for
bit: the same k documents in the same order, ties at the cut included, and the same score
for any document the other streams ask about; over sealed blocks and the unsealed tail,
whole partitions and filtered scopes, rare and common terms, synonyms and prefixes."""

from __future__ import annotations

import random

import msgspec
import numpy as np
import pytest

from functions.kernel.records import MemEvent
from functions.search import pruning
from functions.search.bm25 import BM25Index, Clause
from functions.search.index import SearchIndex
from functions.search.postings import BLOCK_SHIFT, Blocks
from functions.search.ranking import top
from tests.search.ranking_corpus import events, rankings

VOCAB = [f"w{i}" for i in range(60)] + ["cache", "cached", "caching", "cacheline", "auth", "authz"]


def _zipf(rnd: random.Random) -> str:
    return VOCAB[min(len(VOCAB) - 1, int(rnd.paretovariate(0.9)) - 1)]


def _bm25(n: int, seed: int, seal_at: int | None) -> BM25Index:
    rnd = random.Random(seed)
    index = BM25Index(k1=0.3, b=0.5)
    for d in range(n):
        tfs: dict[str, float] = {}
        for _ in range(rnd.choice([3, 6, 12])):  # few lengths and tfs: many ties
            w = _zipf(rnd)
            tfs[w] = tfs.get(w, 0.0) + rnd.choice([1.0, 1.0, 0.5])
        index.add(d, tfs, float(sum(tfs.values())), part=d % 3 if d % 11 else 0)
        if d == seal_at:
            index.seal()
    return index


CLAUSES = [
    [Clause("w0"), Clause("w1")],  # two common words
    [Clause("w0"), Clause("w40")],  # one common, one rare
    [Clause("w2", 2.0), Clause("w3"), Clause("w9")],
    [Clause("cache", prefix=True), Clause("auth", synonyms=("authz",), prefix=True)],
    [Clause("cach", prefix=True)],  # no exact match: the alternatives go uncapped
    [Clause("w0", prefix=True)],  # w0 completes to every w0* word
    [Clause("w5", synonyms=("w0", "w1"))],  # common alternatives, capped
    [Clause("absent")],
]


@pytest.mark.parametrize("rare_share", [1, 64, 10**9])
@pytest.mark.parametrize("seal_at", [None, 1500, 2999])
def test_the_pruned_top_is_the_dense_top(
    monkeypatch: pytest.MonkeyPatch, rare_share: int, seal_at: int | None
) -> None:
    monkeypatch.setattr(pruning, "RARE_SHARE", rare_share)  # every term rare ... none
    monkeypatch.setattr(pruning, "FIRST_BLOCKS", 1)  # many rounds
    index = _bm25(3000, 5, seal_at)
    rnd = np.random.default_rng(3)
    scopes = [
        index.scope(np.ones(3000, np.bool_), None, 3000),  # everything, read whole
        index.scope(rnd.random(3000) < 0.7),  # filtered: postings selected by the mask
        index.scope(rnd.random(2600) < 0.9),  # held before the last slots were added
        index.scope(np.arange(3000) % 3 == 1, (1,), 1000 - 1000 // 11),
    ]
    for scope in scopes:
        ids, pos = scope.numbering()
        for clauses in CLAUSES:
            for k in (1, 10, 30, 400):
                scores = index.score(clauses, scope)
                pruned = pruning.Pruned(index, clauses, scope)
                assert pruned.top(k).tolist() == ids[top(scores, k)].tolist(), (clauses, k)
            asked = rnd.choice(ids, min(len(ids), 500), replace=False)
            want = scores[pos[asked]]
            got = pruning.Pruned(index, clauses, scope).at(asked)
            assert np.array_equal(got, want)  # bit for bit
            for c in clauses:
                assert pruned.df(c.term) == len(index.matches(c.term, scope)[0])


def test_block_bounds_hold_every_posting() -> None:
    index = _bm25(2000, 9, 1999)
    lengths = index.lengths64()
    for r in range(len(index.sealed.part)):
        docs, tfs = index.sealed.row(r)
        blk = index.sealed.blocks(r, lengths, (0.2, 0.01))
        assert np.array_equal(np.unique(docs >> BLOCK_SHIFT), blk.ids)
        for i, b in enumerate(blk.ids.tolist()):
            d = docs[blk.starts[i] : blk.starts[i + 1]]
            assert len(d) and (d >> BLOCK_SHIFT == b).all()
            tf = tfs[blk.starts[i] : blk.starts[i + 1]].astype(np.float64)
            u, v = 1.0 / tf, lengths[d] / tf
            assert blk.min_u[i] <= u.min() and blk.max_u[i] >= u.max()
            assert blk.min_v[i] <= v.min() and blk.max_v[i] >= v.max()
            # at the shape they were made for and at others (another scope's avgdl, b = 0
            # or 1): every posting's alpha u + beta v lies between the block's floor and
            # ceiling, which are attained at the reference shape
            for alpha, beta in SHAPES:
                w = alpha * u + beta * v
                lo, hi = blk.least(alpha, beta)[i], blk.most(alpha, beta)[i]
                assert lo <= w.min() * (1 + 1e-12) and hi >= w.max() * (1 - 1e-12)
            w = 0.2 * u + 0.01 * v
            assert blk.least(0.2, 0.01)[i] == w.min() and blk.most(0.2, 0.01)[i] == w.max()
    empty = Blocks.of(np.zeros(0, np.int32), np.zeros(0, np.float32), lengths, (0.2, 0.01))
    assert empty.ids.size == 0


SHAPES = [(0.2, 0.01), (0.2, 0.003), (0.2, 0.05), (0.0, 0.02), (0.5, 0.0), (0.1, 0.1)]


def _answers(idx: SearchIndex, queries: list[str]) -> list[object]:
    filters = [(None, None), ("p0", None), ("p1", None), ("p1", "a1"), ("p2", "")]
    return [
        [(h.id, h.score, h.matched) for h in idx.search(q, project=p, agent_id=a, limit=20)]
        for q in queries
        for p, a in filters
    ]


def test_a_pruned_index_answers_like_a_dense_one(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every stream (bm25, sessions, time) through the search: the ranking corpus has
    # removals, global memories, summaries, agents and dated queries.
    evs = [msgspec.convert(e, MemEvent) for e in events()]
    dense = SearchIndex()
    for e in evs:
        dense.apply(e)
    want = rankings(dense)
    monkeypatch.setattr(pruning, "PRUNE_MIN", 0)
    monkeypatch.setattr(pruning, "FIRST_BLOCKS", 1)
    pruned = SearchIndex()
    for e in evs[:900]:
        pruned.apply(e)
    pruned.bm25.seal()  # sealed blocks and a tail
    for e in evs[900:]:
        pruned.apply(e)
    assert rankings(pruned) == want
    monkeypatch.setattr(pruning, "RARE_SHARE", 10**9)  # no term read whole
    pruned.forget_scopes()
    assert rankings(pruned) == want


def test_queried_between_writes_a_pruned_index_answers_like_a_dense_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Scopes grow by appends and carry their counts; removals make them again.
    evs = [msgspec.convert(e, MemEvent) for e in events(360)]
    queries = ["cache timeout", "src/app/main.py", "flaky test retry in february"]
    monkeypatch.setattr(pruning, "FIRST_BLOCKS", 1)
    live = SearchIndex()
    for i, e in enumerate(evs, 1):
        live.apply(e)
        if i == 200:
            live.bm25.seal()
        monkeypatch.setattr(pruning, "PRUNE_MIN", 0)
        got = _answers(live, queries)
        if i % 60 == 0:
            monkeypatch.setattr(pruning, "PRUNE_MIN", 10**9)
            fresh = SearchIndex()
            for f in evs[:i]:
                fresh.apply(f)
            assert got == _answers(fresh, queries), i
    assert any(any(a) for a in _answers(live, queries))


def _skewed(n: int, seed: int) -> BM25Index:
    """Zipf words, lengths 5..30: the two commonest on most documents."""
    rnd = random.Random(seed)
    index = BM25Index()
    for d in range(n):
        tfs: dict[str, float] = {}
        for _ in range(rnd.randint(5, 30)):
            w = f"w{min(200, int(rnd.paretovariate(0.7)) - 1)}"
            tfs[w] = tfs.get(w, 0.0) + 1.0
        index.add(d, tfs, float(sum(tfs.values())))
    return index


def test_two_common_words_read_a_part_of_their_postings() -> None:
    n = 40_000
    index = _skewed(n, 7)
    index.seal()
    rnd = np.random.default_rng(1)
    mask = np.ones(n, np.bool_)
    mask[rnd.choice(n, n // 10, replace=False)] = False  # deleted or held records
    for scope in (index.scope(np.ones(n, np.bool_), (0,), n), index.scope(mask, (0,), n)):
        ids, _ = scope.numbering()
        for words in (["w0", "w1"], ["w0", "w2"], ["w0", "w1", "w5"]):
            clauses = [Clause(w) for w in words]
            pruned = pruning.Pruned(index, clauses, scope)
            assert all(pruned.df(w) * pruning.RARE_SHARE > scope.n for w in words)  # common
            got = pruned.top(10).tolist()
            assert got == ids[top(index.score(clauses, scope), 10)].tolist()
            # every posting of both words is what the dense path reads
            assert pruned.exhaustive() == sum(len(index.matches(w, index.scope(
                np.ones(n, np.bool_), (0,), n))[0]) for w in words)  # fmt: skip
            assert pruned.read < pruned.exhaustive() / 2, (words, pruned.read)
            assert pruned.scored < scope.n / 2


def test_a_query_kept_alive_does_not_stop_writes() -> None:
    # The tail's postings are arrays that grow on write: a view of them held by a query
    # (a stream's `at`) would make the next append fail.
    index = _skewed(3000, 2)
    index.seal()
    for d in range(3000, 3100):
        index.add(d, {"w0": 2.0, "w1": 1.0}, 3.0)
    scope = index.scope(np.ones(3100, np.bool_), (0,), 3100)
    pruned = pruning.Pruned(index, [Clause("w0"), Clause("w1")], scope)
    assert len(pruned.top(10)) == 10
    index.add(3100, {"w0": 1.0}, 1.0)
    assert pruned.at(np.array([3000], np.int32))[0] > 0
