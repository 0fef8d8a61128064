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


def top(scores: F64, k: int, among: Ids | None = None) -> list[int]:
    """The `k` best positive entries (by score, then id) of `scores`, restricted to `among`
    (sorted ids) when given."""
    if not len(scores):
        return []
    nz: Ids
    if among is not None:
        nz = among[scores[among] > 0]
    else:
        nz = np.flatnonzero(scores > 0)
    if len(nz) > k:
        part = np.argpartition(-scores[nz], k - 1)[:k]
        nz = nz[part]
    order = np.lexsort((nz, -scores[nz]))
    out: list[int] = nz[order].tolist()
    return out


def session_tf(sess: I32, docs: I32, tf: F64, n_sess: int) -> tuple[I32, F64]:
    """(sessions, summed tf) of one term's matches; sessions ascending. Both paths add
    a session's tfs in match order, so they give the same floats."""
    s = sess[docs]
    if _dense(n_sess, len(docs)):
        hit = np.flatnonzero(np.bincount(s, minlength=n_sess)).astype(np.int32)
        return hit, cast(F64, np.bincount(s, weights=tf, minlength=n_sess)[hit])
    uniq, inv = np.unique(s, return_inverse=True)
    return uniq.astype(np.int32), cast(F64, np.bincount(inv, weights=tf))


def session_stream(
    clauses: Sequence[Clause],
    matches: Callable[[str], tuple[I32, F64]],
    sess: I32,
    scope: Scope,
    sscope: Scope,
    sess_len: F64,
    members: Mapping[int, array[int]],
    doc_scores: F64,
    depth: int,
    session_depth: int,
    k1: float,
    b: float,
) -> list[int]:
    """BM25 with a session as the document (term frequencies summed over its records);
    the records of the best sessions, best session first, then by their own score."""
    n_sess = len(sscope.mask)
    total = np.zeros(n_sess, np.float64)
    touched: list[I32] = []
    for c in clauses:
        dd, dtf = matches(c.term)
        if not len(dd) or len(dd) > SESSION_MAX_SHARE * scope.n:
            continue  # on most records, so on nearly every session: it ranks none
        hit, t = session_tf(sess, dd, dtf, n_sess)
        idf = math.log(1.0 + (sscope.n - len(hit) + 0.5) / (len(hit) + 0.5))
        norm = k1 * (1.0 - b + b * sess_len[hit] / sscope.avgdl)
        total[hit] += c.weight * idf * t * (k1 + 1.0) / (t + norm)
        touched.append(hit)
    if not touched:
        return []
    # every touched session scored > 0, so a dense scan finds the same (sorted) set
    dense = _dense(n_sess, sum(len(h) for h in touched))
    among = None if dense else np.unique(np.concatenate(touched))
    # Records of the best session first, each session's by their own score (a stable
    # sort, so ties keep member order); only as many sessions as fill `depth` are read.
    out: list[int] = []
    for s in top(total, session_depth, among):
        cand = np.frombuffer(members[s], dtype=np.int32)
        cand = cand[cand < len(scope.mask)]
        cand = cand[scope.mask[cand]]
        if not len(cand):
            continue
        own = doc_scores[cand] if len(doc_scores) else np.zeros(len(cand))
        out.extend(cand[np.argsort(-own, kind="stable")][: depth - len(out)].tolist())
        if len(out) >= depth:
            break
    return out


def _dense(n_sess: int, matched: int) -> bool:
    return n_sess <= DENSE_SESSIONS_MIN + DENSE_SESSIONS * matched


def time_stream(query: str, day: I32, scope: Scope, doc_scores: F64, depth: int) -> list[int]:
    """Records dated inside a range the query names, best text match first."""
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
    own = doc_scores[cand] if len(doc_scores) else np.zeros(len(cand))
    order = np.lexsort((cand, -own))
    out: list[int] = cand[order][:depth].tolist()
    return out
