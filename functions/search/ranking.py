"""The session and time streams, and the top-k cut every stream ends with.

Everything here is numpy over the documents a query matched, never over every slot of the
index: on a large index a single dense pass costs as much as the rest of the query.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from functions.search.bm25 import F64, I32, Clause, Scope
from functions.search.temporal import query_ranges

Ids = npt.NDArray[np.integer[Any]]

SESSION_MAX_SHARE = 0.5
"""A term on more than this share of the visible records ranks no session."""
DENSE_SESSIONS = 4
DENSE_SESSIONS_MIN = 8192
"""Session tfs are summed with a dense `bincount` over all sessions when there are at most
DENSE_SESSIONS_MIN + DENSE_SESSIONS * (matched records) sessions (a bincount over a few
thousand bins costs less than `np.unique`'s fixed overhead); otherwise by sorting the
matches, so the cost follows the matches, not the number of sessions."""


FLOOR_SAMPLE = 16384
"""Entries `top` samples for its floor, on arrays over four times this long."""


def top(scores: F64, k: int, among: Ids | None = None) -> list[int]:
    """The `k` best positive entries (by score, then id) of `scores`, restricted to `among`
    (sorted ids) when given."""
    if not len(scores):
        return []
    nz: Ids
    if among is not None:
        nz = among[scores[among] > 0]
    else:
        nz = np.flatnonzero(scores >= _floor(scores, k))
    out: list[int] = nz[ranked(scores[nz], nz, k)].tolist()
    return out


def _floor(scores: F64, k: int) -> float:
    """A score every one of the `k` best positive entries reaches: the k-th best of an even
    sample (never above the k-th best of all), or the smallest positive float. On a million
    scores the ranking then sorts the few hundred entries above it, not every positive one:
    the same entries, ties at the cut included, so the same answer."""
    n = len(scores)
    if n > 4 * FLOOR_SAMPLE and k <= FLOOR_SAMPLE:
        sample = scores[:: n // FLOOR_SAMPLE]
        kth = float(np.partition(sample, len(sample) - k)[len(sample) - k])
        if kth > 0:
            return kth
    return float(np.nextafter(0.0, 1.0))


def ranked(scores: npt.NDArray[Any], ids: Ids, k: int) -> Ids:
    """Positions of the `k` best entries, by score then id, in that order. A partition
    alone leaves ties at the cut in whatever order its implementation has (numpy's differs
    between CPUs: AVX-512 machines sort with another algorithm), so the entries tied with
    the k-th score are chosen by id: the same answer on every machine."""
    if len(scores) > k:
        kth = -np.partition(-scores, k - 1)[k - 1]
        above = np.flatnonzero(scores > kth)
        tied = np.flatnonzero(scores == kth)
        need = k - len(above)
        if len(tied) > need:
            tied = tied[np.argsort(ids[tied], kind="stable")[:need]]
        sel = np.concatenate([above, tied])
    else:
        sel = np.arange(len(scores))
    return sel[np.lexsort((ids[sel], -scores[sel]))]


def session_tf(sess: I32, docs: I32, tf: F64, n_sess: int) -> tuple[I32, F64]:
    """(sessions, summed tf) of one term's matches; sessions ascending. Both paths add
    a session's tfs in match order, so they give the same floats."""
    s = sess[docs]
    if _dense(n_sess, len(docs)):
        hit = np.flatnonzero(np.bincount(s, minlength=n_sess)).astype(np.int32)
        return hit, cast(F64, np.bincount(s, weights=tf, minlength=n_sess)[hit])
    uniq, inv = np.unique(s, return_inverse=True)
    return uniq.astype(np.int32), cast(F64, np.bincount(inv, weights=tf))


Own = Callable[[Ids], F64]
"""Records' own BM25 scores, by slot (documents of the scope)."""


def session_stream(
    clauses: Sequence[Clause],
    matches: Callable[[str], tuple[I32, F64]],
    count: Callable[[str], int],
    sess: I32,
    scope: Scope,
    sscope: Scope,
    sess_len: F64,
    members: Mapping[int, array[int]],
    own_scores: Own,
    depth: int,
    session_depth: int,
    k1: float,
    b: float,
) -> list[int]:
    """BM25 with a session as the document (term frequencies summed over its records);
    the records of the best sessions, best session first, then by their own score.
    `matches(term)` gives (positions, tf) and `sess` the session of each position, both
    over the scope's positions (`Scope.numbering`); `count(term)` is `len(matches(term)[0])`
    (a term on most records is passed over without gathering its matches);
    `own_scores(slots)` are the records' own scores."""
    n_sess = len(sscope.mask)
    used: list[Clause] = []
    matched: list[tuple[I32, F64]] = []
    for c in clauses:
        df = count(c.term)
        if not df or df > SESSION_MAX_SHARE * scope.n:
            continue  # on most records, so on nearly every session: it ranks none
        used.append(c)
        matched.append(matches(c.term))
    if not used:
        return []
    args = (used, matched, sess, sscope, sess_len, k1, b)
    if _dense(n_sess, sum(len(d) for d, _ in matched)):
        local, cols = _dense_totals(*args)
        # the scope's sessions ascending: the same candidates in the same order as a scan
        # of every session, so the same top
        best = cols[top(local, session_depth)].tolist()
    else:
        total, among = _sparse_totals(*args)
        best = top(total, session_depth, among)
    # Records of the best session first, each session's by their own score (a stable
    # sort, so ties keep member order); only as many sessions as fill `depth` are read.
    out: list[int] = []
    for s in best:
        cand = np.frombuffer(members[s], dtype=np.int32)
        cand = cand[cand < len(scope.mask)]
        cand = cand[scope.mask[cand]]
        if not len(cand):
            continue
        own = own_scores(cand)
        out.extend(cand[np.argsort(-own, kind="stable")][: depth - len(out)].tolist())
        if len(out) >= depth:
            break
    return out


def _sparse_totals(
    used: list[Clause], matched: list[tuple[I32, F64]], sess: I32, sscope: Scope,
    sess_len: F64, k1: float, b: float,
) -> tuple[F64, I32]:  # fmt: skip
    """Session BM25 totals, term by term over the sessions each term is in; and the
    sessions touched (sorted)."""
    total = np.zeros(len(sscope.mask), np.float64)
    touched: list[I32] = []
    for c, (dd, dtf) in zip(used, matched, strict=True):
        hit, t = session_tf(sess, dd, dtf, len(total))
        idf = math.log(1.0 + (sscope.n - len(hit) + 0.5) / (len(hit) + 0.5))
        norm = k1 * (1.0 - b + b * sess_len[hit] / sscope.avgdl)
        total[hit] += c.weight * idf * t * (k1 + 1.0) / (t + norm)
        touched.append(hit)
    return total, np.unique(np.concatenate(touched)).astype(np.int32)


def _dense_totals(
    used: list[Clause], matched: list[tuple[I32, F64]], sess: I32, sscope: Scope,
    sess_len: F64, k1: float, b: float,
) -> tuple[F64, I32]:  # fmt: skip
    """What `_sparse_totals` computes, over the scope's sessions only (a project's hundred,
    not every session), as a (term x session) matrix from one `bincount`: a handful of
    numpy calls per query instead of per term. Returns (totals, their sessions). Each cell
    sums its tfs in match order and takes the same expression; a cell the term is not in
    is 0 (0 * x / norm) and adds 0.0, so the totals are equal bit for bit. Every session a
    term is in scores > 0, so the touched sessions are the positive totals."""
    cols, pos = sscope.numbering()
    n_cols = len(cols)
    rows = len(used)
    col = sscope.by_position.get("column")  # each record position's session column
    if col is None:
        col = sscope.by_position["column"] = pos[sess]
    docs = matched[0][0] if rows == 1 else np.concatenate([d for d, _ in matched])
    tfs = matched[0][1] if rows == 1 else np.concatenate([tf for _, tf in matched])
    keys = col[docs]
    if rows > 1:
        keys = keys + np.repeat(np.arange(rows) * n_cols, [len(d) for d, _ in matched])
    size = rows * n_cols
    count = np.bincount(keys, minlength=size).reshape(rows, n_cols)
    t = np.bincount(keys, weights=tfs, minlength=size).reshape(rows, n_cols)
    scale = np.array([
        c.weight * math.log(1.0 + (sscope.n - h + 0.5) / (h + 0.5))
        for c, h in zip(used, np.count_nonzero(count, axis=1).tolist(), strict=True)
    ])  # fmt: skip
    if sscope.norms is None:  # once per scope
        sscope.norms = k1 * (1.0 - b + b * sess_len[cols] / sscope.avgdl)
        sscope.norms_positive = bool((sscope.norms > 0).all())
    norm = sscope.norms
    if sscope.norms_positive:
        cells = scale[:, None] * t * (k1 + 1.0) / (t + norm)
    else:  # b = 1 and an empty session: 0 / 0 in cells the term is not in
        with np.errstate(divide="ignore", invalid="ignore"):
            cells = scale[:, None] * t * (k1 + 1.0) / (t + norm)
        cells[count == 0] = 0.0
    local = cells[0].copy()
    for row in cells[1:]:
        local += row
    return cast(F64, local), cols


def _dense(n_sess: int, matched: int) -> bool:
    return n_sess <= DENSE_SESSIONS_MIN + DENSE_SESSIONS * matched


def time_stream(query: str, day: I32, scope: Scope, own_scores: Own, depth: int) -> list[int]:
    """Records dated inside a range the query names, best text match first
    (`own_scores(slots)`: the records' own scores)."""
    ranges = query_ranges(query)
    if not ranges:
        return []
    day = day[: len(scope.mask)]
    inside = np.zeros(len(day), bool)
    for lo, hi in ranges:
        inside |= (day >= lo) & (day <= hi)
    cand = np.flatnonzero(inside & scope.mask)
    if not len(cand):
        return []
    own = own_scores(cand)
    order = np.lexsort((cand, -own))
    out: list[int] = cand[order][:depth].tolist()
    return out
