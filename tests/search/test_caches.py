"""Per-scope caches and sparse scoring give exactly what a fresh index and the plain
dense computation give: a write invalidates what it changes, and no shortcut moves a score."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from functions.kernel.records import MemEvent, Observation, ObservationAdded, RecordsRemoved
from functions.search import ranking
from functions.search.bm25 import ALT_CAP, BM25Index, Clause, Scope
from functions.search.index import SearchIndex, _Held

pytestmark = pytest.mark.unit

WORDS = "cache cached caching timeout auth authz login parser parse config deploy retry".split()
FILES = ["src/app/main.py", "src/app/cache.py", "lib/auth.ts"]
QUERIES = ["cache timeout", "auth login", "pars", "src/app/main.py retry", "cach deploy"]


def events(n: int, seed: int = 3) -> list[MemEvent]:
    rnd = random.Random(seed)
    out: list[MemEvent] = []
    for i in range(n):
        if i % 9 == 8:
            out.append(RecordsRemoved(ids=[f"o{rnd.randrange(i)}"], reason="forget"))
            continue
        text = " ".join(rnd.choices(WORDS, k=6))
        out.append(ObservationAdded(observation=Observation(
            id=f"o{i}", session_id=f"s{i % 7}", project=f"p{i % 2}", hook_type="post_tool_use",
            timestamp=f"2026-01-{1 + i % 28:02d}T00:00:00Z", title=text[:20], narrative=text,
            files=[rnd.choice(FILES)], concepts=[rnd.choice(WORDS)],
        )))  # fmt: skip
    return out


def results(idx: SearchIndex) -> list[list[tuple[str, float]]]:
    return [
        [(h.id, h.score) for h in idx.search(q, project=p, limit=20)]
        for q in QUERIES
        for p in (None, "p0", "p1")
    ]


def test_an_index_queried_between_writes_ranks_like_a_fresh_one() -> None:
    evs = events(240)
    live = SearchIndex()
    for i, e in enumerate(evs, 1):
        live.apply(e)
        if i % 30 == 0:
            fresh = SearchIndex()
            for f in evs[:i]:
                fresh.apply(f)
            # twice: the second answer comes from the caches the first one filled
            assert results(live) == results(fresh)
            assert results(live) == results(fresh)
    assert any(results(live))


def _dense_reference(
    index: BM25Index, clauses: list[Clause], scope: Scope
) -> np.ndarray:  # the scoring as first written: dense arrays over every slot
    scores = np.zeros(len(scope.mask), np.float64)
    for c in clauses:
        dd, contrib = index.term_scores(c.term, scope)
        alts = [(s, index.synonym_weight) for s in c.synonyms]
        if c.prefix:
            alts += [(t, index.prefix_weight) for t in index.completions(c.term)]
        best = np.zeros(len(scores), np.float64)
        for t, w in alts:
            d, v = index.term_scores(t, scope)
            np.maximum.at(best, d, v * w)
        if len(dd):
            best[dd] = 0.0
            np.minimum(best, ALT_CAP * float(contrib.min()), out=best)
        scores += c.weight * best
        scores[dd] += c.weight * contrib
    return scores


def test_sparse_alternatives_score_exactly_like_the_dense_reference() -> None:
    rnd = random.Random(5)
    index = BM25Index()
    vocab = ["cache", "cached", "caching", "cacheline", "auth", "authz", "author", "zone"]
    for d in range(300):
        tfs = {w: float(rnd.randint(1, 3)) for w in rnd.sample(vocab, rnd.randint(1, 4))}
        index.add(d, tfs, float(sum(tfs.values())), part=d % 3)
    mask = np.array([rnd.random() < 0.8 for _ in range(300)])
    scope = index.scope(mask)
    for clauses in (
        [Clause("cache", prefix=True), Clause("auth", 2.0, synonyms=("authz",), prefix=True)],
        [Clause("cach", prefix=True)],  # no exact match: the alternatives are uncapped
        [Clause("zone", synonyms=("cached", "caching"))],
    ):
        scores = index.score(clauses, scope)  # over the scope's positions
        reference = _dense_reference(index, clauses, scope)
        ids, pos = scope.numbering()
        assert np.array_equal(ids, np.flatnonzero(mask)) and np.all(pos[ids] == np.arange(len(ids)))
        assert np.array_equal(scores, reference[ids])
        assert not reference[~mask].any()
        assert np.array_equal(ids[scores > 0], np.flatnonzero(reference > 0))


def test_contributions_follow_the_scope_statistics() -> None:
    index = BM25Index()
    for d in range(10):
        index.add(d, {"cache": 1.0, "x": float(d)}, 1.0 + d)
    small = index.scope(np.arange(10) < 4)
    large = index.scope(np.ones(10, np.bool_))
    _, in_small = index.term_scores("cache", small)
    _, in_large = index.term_scores("cache", large)
    idf = math.log(1.0 + (4 - 4 + 0.5) / (4 + 0.5))
    assert math.isclose(float(in_small[0]), idf * 2.2 / (1.0 + 1.2 * (0.25 + 0.75 / 2.5)))
    assert len(in_small) == 4 and len(in_large) == 10
    index.add(10, {"cache": 1.0}, 1.0)
    grown = index.scope(np.ones(11, np.bool_))
    assert len(index.term_scores("cache", grown)[0]) == 11
    # a scope held across a write answers for its own documents, from fresh postings
    assert np.array_equal(index.term_scores("cache", large)[1], in_large)


def test_session_tf_dense_and_sorted_paths_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    rnd = np.random.default_rng(2)
    sess = rnd.integers(0, 50, 400).astype(np.int32)
    docs = np.sort(rnd.choice(400, 120, replace=False)).astype(np.int32)
    tf = rnd.random(120) * 3
    dense = ranking.session_tf(sess, docs, tf, 50)
    monkeypatch.setattr(ranking, "DENSE_SESSIONS_MIN", 0)
    sorted_path = ranking.session_tf(sess, docs, tf, 10_000)
    assert np.array_equal(dense[0], sorted_path[0])
    assert np.array_equal(dense[1], sorted_path[1])  # bit for bit: same order of additions
    assert np.array_equal(dense[0], np.unique(sess[docs]))


@pytest.mark.parametrize("b", [0.75, 1.0])
def test_dense_and_sparse_session_totals_agree(b: float) -> None:
    rnd = np.random.default_rng(4)
    n_docs, n_sess = 500, 40
    sess = rnd.integers(0, n_sess, n_docs).astype(np.int32)
    sess[sess == 7] = 8  # a session with no records: the dense path must leave it at 0
    present = np.bincount(sess, minlength=n_sess) > 0
    sess_len = np.bincount(sess, weights=rnd.random(n_docs) * 9, minlength=n_sess)
    sess_len[3] = 0.0  # with b = 1 its norm is 0: cells of terms not in it are 0 / 0
    sscope = Scope(present, int(present.sum()), float(sess_len[present].mean()))
    used = [Clause("a", 1.0), Clause("b", 2.0), Clause("c", 1.0)]
    matched = []
    for size in (30, 200, 3):
        d = np.sort(rnd.choice(n_docs, size, replace=False)).astype(np.int32)
        matched.append((d, rnd.random(size) * 2 + 0.5))
    local, cols = ranking._dense_totals(used, matched, sess, sscope, sess_len, 1.2, b)
    assert np.array_equal(cols, np.flatnonzero(present))
    dense = np.zeros(n_sess)
    dense[cols] = local
    sparse, touched = ranking._sparse_totals(used, matched, sess, sscope, sess_len, 1.2, b)
    assert np.array_equal(dense, sparse)
    assert np.array_equal(np.flatnonzero(dense > 0), touched)
    assert dense[7] == 0.0 and len(touched) > 10
    assert sscope.norms_positive == (b < 1.0)


def test_reading_whole_partitions_ranks_like_selecting_by_mask() -> None:
    idx = SearchIndex()
    for e in events(120):
        if isinstance(e, ObservationAdded):
            idx.apply(e)
    before = results(idx)
    scope, _ = idx._scope("p0", None, None)
    assert scope.whole  # nothing removed: the project's postings are read without selection
    for key in list(idx._scopes):  # the same scopes, made to select by mask
        docs = idx._scopes[key].docs
        docs.whole = False
        for memory in (docs.cache, docs.contrib, docs.entities, docs.entity_links):
            memory.clear()
    assert results(idx) == before


def test_a_removal_or_a_filter_turns_off_reading_whole_partitions() -> None:
    idx = SearchIndex()
    for i in range(6):
        idx.add(Observation(id=f"o{i}", session_id="s", project=f"p{i % 2}",
                            hook_type="x", narrative="cache timeout", agent_id="a",
                            timestamp="2026-01-01T00:00:00Z"))  # fmt: skip
    assert idx._scope("p0", None, None)[0].whole and idx._scope(None, None, None)[0].whole
    idx.remove(["o1"])  # in p1
    assert idx._scope("p0", None, None)[0].whole
    assert not idx._scope("p1", None, None)[0].whole
    assert not idx._scope(None, None, None)[0].whole
    assert not idx._scope("p0", "b", None)[0].whole  # agent b has none of p0's records
    assert [h.id for h in idx.search("cache", project="p1")] == ["o3", "o5"]


def test_a_scope_grown_by_appends_ranks_like_a_fresh_one(monkeypatch: pytest.MonkeyPatch) -> None:
    # Queried after every write: scopes grow by the appended slots (global memories,
    # summaries, agents, several projects) and are made again after a removal; at every
    # checkpoint the answers equal a fresh index's, bit for bit.
    import msgspec

    from tests.search.ranking_corpus import events as corpus

    evs = [msgspec.convert(e, MemEvent) for e in corpus(600)]
    filters = [(None, None), ("p0", None), ("p2", None), ("p1", "a1")]
    queries = ["cache timeout", "flaky test retry", "src/app/main.py", "webhook signature token"]

    def answers(idx: SearchIndex) -> list[list[tuple[str, float, list[str]]]]:
        return [
            [(h.id, h.score, h.matched) for h in idx.search(q, project=p, agent_id=a, limit=20)]
            for q in queries
            for p, a in filters
        ]

    live = SearchIndex()
    grown = 0
    grow = live._grown

    def counting(held: _Held, key: tuple[object, ...], parts: tuple[int, ...] | None) -> _Held:
        nonlocal grown
        grown += 1
        return grow(held, key, parts)

    monkeypatch.setattr(live, "_grown", counting)
    for i, e in enumerate(evs, 1):
        live.apply(e)
        got = answers(live)
        if i % 50 == 0:
            fresh = SearchIndex()
            for f in evs[:i]:
                fresh.apply(f)
            assert got == answers(fresh), i
    assert grown > 1000  # the appends took the growing path, not a rebuild
    assert any(any(a) for a in answers(live))


def test_a_scopes_caches_stay_within_their_byte_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Matches of common terms are 12 bytes per document of the scope: the caches a scope
    keeps (its own, and those carried from the scope before it) are bounded in bytes, and
    the bound changes no answer."""
    from functions.search import bm25

    evs = events(600)
    roomy = SearchIndex()
    for e in evs:
        roomy.apply(e)
    expected = results(roomy)
    monkeypatch.setattr(bm25, "CACHE_BYTES", 2048)
    tight = SearchIndex()
    peak = 0
    for i, e in enumerate(evs, 1):
        tight.apply(e)
        if i % 50 == 0:
            results(tight)
            for held in tight._scopes.values():
                for scope in (held.docs, held.sessions):
                    real = sum(a.nbytes + b.nbytes for a, b in scope.cache.values())
                    real += sum(a.nbytes + b.nbytes for a, b in scope.contrib.values())
                    real += sum(a.nbytes + b.nbytes for a, b, _ in scope.carried.values())
                    assert real <= 2048 + max(  # one entry may be larger than the budget
                        [a.nbytes + b.nbytes for a, b in scope.cache.values()] + [0]
                    ) + max([a.nbytes + b.nbytes for a, b in scope.contrib.values()] + [0])
                    peak = max(peak, real)
    assert results(tight) == expected
    assert peak > 0  # the caches were used
