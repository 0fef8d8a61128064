"""The top-k cut of every stream is the same on every machine: entries tied with the k-th
score are chosen by id, not left in the order numpy's partition happens to give them."""

from __future__ import annotations

import numpy as np
import pytest

from functions.search import ranking
from functions.search.entity_expansion import _best, _best_dense
from functions.search.ranking import ranked, top

pytestmark = pytest.mark.unit


def test_ties_at_the_cut_go_to_the_smallest_ids() -> None:
    rng = np.random.default_rng(7)
    scores = np.round(rng.random(5000) * 4) / 4 + 0.25  # five distinct values, many ties
    got = top(scores, 300)
    want = sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:300]
    assert got == want


def test_a_long_array_cut_above_its_sampled_floor_gives_the_full_ranking() -> None:
    # Over 4 x FLOOR_SAMPLE entries `top` ranks only those at or above the k-th best of a
    # sample: the same k, ties at the cut included, as ranking every positive entry.
    rng = np.random.default_rng(11)
    n = 5 * ranking.FLOOR_SAMPLE
    sparse = np.where(rng.random(n) < 0.3, np.round(rng.random(n) * 8) / 8, 0.0)
    few = np.zeros(n)
    few[rng.choice(n, 20, replace=False)] = 1.0  # fewer positive than k: no floor found
    skewed = np.zeros(n)
    skewed[-40:] = np.arange(40, 0, -1)  # the best entries all outside the sample
    skewed[:: n // ranking.FLOOR_SAMPLE] = 0.5
    for scores in (sparse, few, skewed):
        positive = np.sort(scores[scores > 0])
        assert 0 < ranking._floor(scores, 30) <= positive[-min(30, len(positive))]
        for k in (1, 30, 500):
            want = sorted(np.flatnonzero(scores > 0).tolist(), key=lambda i: (-scores[i], i))
            assert top(scores, k) == want[:k]


def test_ranked_orders_by_score_then_id_whatever_the_input_order() -> None:
    ids = np.array([9, 3, 7, 1, 5, 8, 2], np.int64)
    scores = np.array([1.0, 2.0, 1.0, 1.0, 2.0, 0.5, 1.0])
    assert ids[ranked(scores, ids, 4)].tolist() == [3, 5, 1, 2]
    assert ids[ranked(scores, ids, 10)].tolist() == [3, 5, 1, 2, 7, 9, 8]


def test_the_graph_cuts_break_ties_by_document() -> None:
    docs = np.repeat(np.arange(400, dtype=np.int32)[::-1], 2)
    weights = np.ones(len(docs))
    assert _best(docs, weights, 25) == list(range(25))
    ids = np.arange(400, dtype=np.int32)
    assert _best_dense(docs, weights, 25, ids, ids) == list(range(25))
