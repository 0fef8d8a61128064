"""Weighted reciprocal-rank fusion of ranked streams, and per-session diversification."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Protocol

RRF_K = 10


class SessionLookup(Protocol):
    def __getitem__(self, doc: int, /) -> str: ...


@dataclass(frozen=True)
class FusionWeights:
    bm25: float = 1.0
    session: float = 0.5
    vector: float = 0.5
    graph: float = 0.0
    time: float = 1.5
    agreement: float = 0.0
    """Added per extra stream that ranked a document in its top `agreement_depth`,
    in units of the best possible single-stream contribution (1 / (k + 1))."""
    agreement_depth: int = 20

    def of(self, stream: str) -> float:
        return float(getattr(self, stream, 0.0))


def rrf(
    streams: Mapping[str, Sequence[int]],
    weights: FusionWeights,
    k: int = RRF_K,
) -> list[tuple[int, float]]:
    """Fuse ranked lists of doc ids; streams that returned nothing take no part."""
    scores: dict[int, float] = {}
    votes: dict[int, int] = {}
    count_votes = weights.agreement > 0  # off by default: skip the second dict
    get = scores.get
    for name, ranked in streams.items():
        w = weights.of(name)
        if not ranked or w <= 0:
            continue
        for rank, doc in enumerate(ranked, k + 1):
            scores[doc] = get(doc, 0.0) + w / rank
        if count_votes:
            for doc in ranked[: weights.agreement_depth]:
                votes[doc] = votes.get(doc, 0) + 1
    if count_votes:
        unit = weights.agreement / (k + 1)
        for doc, v in votes.items():
            if v > 1:
                scores[doc] += unit * (v - 1)
    # by score descending, then doc: two stable C-keyed sorts, no key tuple per item
    by_doc = sorted(scores.items(), key=itemgetter(0))
    return sorted(by_doc, key=itemgetter(1), reverse=True)


def diversify(
    ranked: Sequence[tuple[int, float]],
    session_of: SessionLookup,
    per_session: int,
    limit: int | None = None,
) -> list[tuple[int, float]]:
    """Keep at most `per_session` results of one session ahead of the rest; the surplus is
    moved behind, in order, rather than dropped, so deep pages still hold everything."""
    if per_session <= 0:
        return list(ranked)
    seen: dict[str, int] = {}
    head: list[tuple[int, float]] = []
    tail: list[tuple[int, float]] = []
    for doc, score in ranked:
        s = session_of[doc]
        n = seen.get(s, 0)
        if not s or n < per_session:
            head.append((doc, score))
            if limit is not None and len(head) >= limit:
                return head
        else:
            tail.append((doc, score))
        seen[s] = n + 1
    return head + tail
