"""`SearchIndex.fuse` for every question at once, in numpy: what cross-validation re-runs
for each configuration of the fusion knobs (a Python loop over a thousand questions costs
~50x more). It gives the same lists as `rrf` + `diversify` (tests/search/test_eval_fusion.py):
contributions are summed per document in stream order, as `rrf` adds them; ties go to the
smaller document id; the diversification counts every earlier result of a session.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from functions.search.fusion import FusionWeights

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
ORDER = ("bm25", "session", "vector", "time", "graph")
"""The order `SearchIndex.streams` builds its streams in (the order `rrf` sums in)."""


@dataclass(frozen=True)
class Flat:
    """One stream's ranking of every question, flattened: entry i is document `doc[i]` at
    position `rank[i]` of question `q[i]`'s list."""

    q: I64
    doc: I64
    rank: I64


def flatten(lists: Sequence[Sequence[int]]) -> Flat:
    lens = np.fromiter((len(x) for x in lists), np.int64, len(lists))
    total = int(lens.sum())
    doc = np.fromiter((d for x in lists for d in x), np.int64, total)
    q = np.repeat(np.arange(len(lists), dtype=np.int64), lens)
    starts = np.repeat(np.cumsum(lens) - lens, lens)
    return Flat(q, doc, np.arange(total, dtype=np.int64) - starts)


@dataclass(frozen=True)
class Fused:
    """Every question's fused list, cut at the limit: sorted by question, then position."""

    q: I64
    doc: I64
    rank: I64


def _within(group: I64) -> I64:
    """Position of each entry among the entries before it with the same (sorted) group."""
    n = len(group)
    if not n:
        return np.zeros(0, np.int64)
    first = np.ones(n, np.bool_)
    first[1:] = group[1:] != group[:-1]
    starts = np.flatnonzero(first)
    return np.arange(n, dtype=np.int64) - np.repeat(starts, np.diff(np.append(starts, n)))


def fuse(
    streams: Mapping[str, Flat],
    weights: FusionWeights,
    k: int,
    per_session: int,
    limit: int,
    n_docs: int,
    session_of_doc: I64,
) -> Fused:
    parts_key: list[I64] = []
    parts_val: list[F64] = []
    votes: list[I64] = []
    for name in ORDER:
        s = streams.get(name)
        w = weights.of(name)
        if s is None or not len(s.doc) or w <= 0:
            continue
        key = s.q * n_docs + s.doc
        parts_key.append(key)
        parts_val.append(w / (s.rank + k + 1).astype(np.float64))
        if weights.agreement > 0:
            votes.append(key[s.rank < weights.agreement_depth])
    if not parts_key:
        empty = np.zeros(0, np.int64)
        return Fused(empty, empty, empty)
    keys = np.concatenate(parts_key)
    vals = np.concatenate(parts_val)
    # one sum per (question, document), in stream order as rrf adds them: a stable sort
    # keeps each key's contributions in that order, and a cumulative sum per run would
    # round differently, so the sums are taken by np.add.reduceat over the runs
    order = np.argsort(keys, kind="stable")
    keys, vals = keys[order], vals[order]
    first = np.ones(len(keys), np.bool_)
    first[1:] = keys[1:] != keys[:-1]
    starts = np.flatnonzero(first)
    uniq = keys[starts]
    scores = _sums_in_order(vals, starts)
    if votes:
        v_keys, v_counts = np.unique(np.concatenate(votes), return_counts=True)
        extra = np.zeros(len(uniq))
        at = np.searchsorted(uniq, v_keys)
        bonus = np.where(v_counts > 1, (weights.agreement / (k + 1)) * (v_counts - 1), 0.0)
        extra[at] = bonus
        scores = np.where(extra > 0, scores + extra, scores)
    q = uniq // n_docs
    doc = uniq % n_docs
    # by question, score descending, then id: `uniq` is in (question, id) order, so two
    # stable sorts (score, then question) keep ids ascending among equal scores
    by_score = np.argsort(-scores, kind="stable")
    ranked = by_score[np.argsort(q[by_score], kind="stable")]
    q, doc = q[ranked], doc[ranked]
    pos = _within(q)
    if per_session > 0:
        # entries are in (question, position) order: a stable sort by (question, session)
        # counts each result's earlier results of its session
        sess = session_of_doc[doc]
        group = q * (int(sess.max()) + 1) + sess
        by_session = np.argsort(group, kind="stable")
        count = np.empty(len(q), np.int64)
        count[by_session] = _within(group[by_session])
        final = np.argsort(q * 2 + (count >= per_session), kind="stable")
        q, doc = q[final], doc[final]
        pos = _within(q)
    keep = pos < limit
    return Fused(q[keep], doc[keep], pos[keep])


def _sums_in_order(vals: F64, starts: I64) -> F64:
    """Sum of each run, added left to right one value at a time (as a Python loop adds)."""
    n_runs = len(starts)
    lens = np.diff(np.append(starts, len(vals)))
    out = vals[starts].copy()
    for j in range(1, int(lens.max(initial=1))):
        more = np.flatnonzero(lens > j)
        out[more] = out[more] + vals[starts[more] + j]
    return out if n_runs else np.zeros(0)


def metrics(
    fused: Fused,
    n_questions: int,
    n_docs: int,
    gold_turns: npt.NDArray[np.bool_],
    gold_sessions: npt.NDArray[np.bool_],
    session_of_doc: I64,
) -> tuple[F64, F64, F64]:
    """Per question: session R@5 (sessions by first appearance), turn R@5, turn MRR cut at
    20, as `ops.eval.locomo_data.Scores` counts them. `gold_turns` is indexed by
    question * n_docs + doc, `gold_sessions` by (question, session number)."""
    q, doc, pos = fused.q, fused.doc, fused.rank
    hit = gold_turns[q * n_docs + doc]
    t_r5 = np.zeros(n_questions)
    t_r5[q[hit & (pos < 5)]] = 1.0
    first = np.full(n_questions, 20, np.int64)
    sel = hit & (pos < 20)
    np.minimum.at(first, q[sel], pos[sel])
    mrr = np.where(first < 20, 1.0 / (first + 1), 0.0)
    # sessions in order of first appearance: each (question, session)'s first position
    sess = session_of_doc[doc]
    width = int(sess.max(initial=0)) + 1
    group = q * width + sess
    by_group = np.argsort(group, kind="stable")  # entries come in (question, position) order
    g = group[by_group]
    lead = np.ones(len(g), np.bool_)
    lead[1:] = g[1:] != g[:-1]
    sq, ss, sp = q[by_group][lead], sess[by_group][lead], pos[by_group][lead]
    order = np.argsort(sq * (int(pos.max(initial=0)) + 1) + sp, kind="stable")
    sq, ss = sq[order], ss[order]
    top5 = _within(sq) < 5
    s_r5 = np.zeros(n_questions)
    good = gold_sessions[sq[top5], ss[top5]]
    s_r5[sq[top5][good]] = 1.0
    return s_r5, t_r5, mrr
