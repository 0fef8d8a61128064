"""Weighted RRF: ties go to the lower document id, agreement adds its bonus, and the
faster loop and sorts rank exactly like the plain formulation."""

from __future__ import annotations

import random

import pytest

from functions.search.fusion import RRF_K, FusionWeights, rrf

pytestmark = pytest.mark.unit


def reference(
    streams: dict[str, list[int]], weights: FusionWeights, k: int = RRF_K
) -> list[tuple[int, float]]:
    scores: dict[int, float] = {}
    votes: dict[int, int] = {}
    for name, ranked in streams.items():
        w = weights.of(name)
        if not ranked or w <= 0:
            continue
        for rank, doc in enumerate(ranked):
            scores[doc] = scores.get(doc, 0.0) + w / (k + rank + 1)
            if rank < weights.agreement_depth:
                votes[doc] = votes.get(doc, 0) + 1
    if weights.agreement > 0:
        for doc, v in votes.items():
            if v > 1:
                scores[doc] += weights.agreement / (k + 1) * (v - 1)
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


def test_ties_go_to_the_lower_id() -> None:
    fused = rrf({"bm25": [9, 4], "session": [4, 9]}, FusionWeights(session=1.0))
    assert [d for d, _ in fused] == [4, 9]


def test_agreement_lifts_a_document_several_streams_rank() -> None:
    streams = {"bm25": [1, 2, 3], "graph": [3]}
    assert rrf(streams, FusionWeights(graph=0.01))[0][0] == 1
    assert rrf(streams, FusionWeights(graph=0.01, agreement=1.0))[0][0] == 3


def test_rrf_equals_the_plain_formulation() -> None:
    rnd = random.Random(1)
    for trial in range(200):
        streams = {
            name: rnd.sample(range(80), rnd.randint(0, 40))
            for name in ("bm25", "session", "graph", "time", "vector")
        }
        weights = FusionWeights(agreement=0.5 if trial % 2 else 0.0, graph=trial % 3 * 0.2)
        assert rrf(streams, weights) == reference(streams, weights)
