"""The cross-validation's batched fusion (ops/eval/batch_fusion.py) ranks every question
exactly as `SearchIndex.fuse` does, and scores it as the eval's `Scores` does: the CV
figures are the product's figures."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from functions.search.fusion import FusionWeights, diversify, rrf
from ops.eval import batch_fusion
from ops.eval.locomo_data import Question, Scores

pytestmark = pytest.mark.unit

N_DOCS = 60
SESSIONS = np.array([d % 7 for d in range(N_DOCS)], np.int64)


class _Sessions:
    def __getitem__(self, doc: int) -> str:
        return str(SESSIONS[doc])


def _streams(rnd: random.Random, n_q: int) -> list[dict[str, list[int]]]:
    out = []
    for _ in range(n_q):
        out.append({
            name: rnd.sample(range(N_DOCS), rnd.randint(0, 30))
            for name in batch_fusion.ORDER
            if rnd.random() < 0.8
        })  # fmt: skip
    return out


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 10_000),
    st.sampled_from([0.0, 0.25, 1.0]),
    st.sampled_from([0.0, 0.2, 0.5]),
    st.sampled_from([0.0, 0.5]),
    st.sampled_from([5, 10, 60]),
    st.sampled_from([0, 1, 3]),
    st.sampled_from([5, 20]),
)
def test_batched_fusion_and_metrics_equal_the_products(
    seed: int, session: float, graph: float, agreement: float, k: int, per_session: int,
    limit: int,
) -> None:  # fmt: skip
    rnd = random.Random(seed)
    per_q = _streams(rnd, 12)
    weights = FusionWeights(session=session, graph=graph, agreement=agreement, vector=0.7)
    flat = {
        name: batch_fusion.flatten([s.get(name, []) for s in per_q]) for name in batch_fusion.ORDER
    }
    got = batch_fusion.fuse(flat, weights, k, per_session, limit, N_DOCS, SESSIONS)
    gold_turns = np.zeros(len(per_q) * N_DOCS, np.bool_)
    gold_sessions = np.zeros((len(per_q), 7), np.bool_)
    expected = Scores()
    for qi, s in enumerate(per_q):
        want = diversify(rrf(s, weights, k), _Sessions(), per_session, limit)[:limit]
        docs = got.doc[got.q == qi].tolist()
        assert docs == [d for d, _ in want]
        assert got.rank[got.q == qi].tolist() == list(range(len(docs)))
        gold = set(rnd.sample(range(N_DOCS), 3))
        sessions = {int(SESSIONS[d]) for d in rnd.sample(range(N_DOCS), 2)}
        for d in gold:
            gold_turns[qi * N_DOCS + d] = True
        gold_sessions[qi, sorted(sessions)] = True
        q = Question("q", 1, sessions, {f"D{d}" for d in gold})
        expected.add(q, [f"D{d}" for d in docs], [int(SESSIONS[d]) for d in docs])
    s_r5, t_r5, mrr = batch_fusion.metrics(
        got, len(per_q), N_DOCS, gold_turns, gold_sessions, SESSIONS
    )
    rows = expected.rows["all"]
    assert s_r5.tolist() == [r["session_r5"] for r in rows]
    assert t_r5.tolist() == [r["turn_r5"] for r in rows]
    assert mrr.tolist() == [r["turn_mrr"] for r in rows]
