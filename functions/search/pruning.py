"""Exact top-k BM25 over a large scope, reading only where the top can be (block-max).

A query over a million records of one project matches most of them when its words are
common; scoring every match costs tens of milliseconds. Here the sealed postings are cut
into blocks of slots (`postings.Blocks`: 32 slots each) that carry bounds on what a term
can add to a document inside them. A query sums its terms' bounds per block, scores
exactly every document a rare term or the unsealed tail holds, then the blocks in order of
their bound, and stops when no block left can reach the k-th best score found (tantivy's
block-max WAND, done a block at a time in numpy).

Every score it computes is the dense computation's (`BM25Index.score`), element by
element: the same statistics (n, df, avgdl over the scope), the same float expressions in
the same order, the same cap of alternatives at the weakest exact match; the top is taken
by score then position as `ranking.top` takes it. So the answer is the dense answer, ties
included (tests/search/test_pruning.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from functions.search.bm25 import ALT_CAP, F64, I32, PREFIX_MIN_LEN, BM25Index, Clause, Scope
from functions.search.postings import BLOCK_SHIFT, F32, Blocks
from functions.search.ranking import Ids, ranked

PRUNE_MIN = 500_000
"""Scopes of at least this many documents are ranked by blocks; smaller ones densely. The
dense path keeps each term's contributions while the scope lasts, which pays while the
scope is small: one project, two-word Zipf queries (ops/bench/search.py --one-scope), the
whole search p50 at 300k records 5.8 ms pruned against 3.6 ms dense (8.5 against 10.6 ms
with a write before each query), at 1M 7.1 against 17.8 ms (11.3 against 24.6 ms)."""
RARE_SHARE = 64
"""A term on at most 1/RARE_SHARE of the scope's documents is read whole: its documents
are scored first, and blocks are bounded by the common terms alone."""
SLACK = 1e-9
"""Relative margin on every bound: a bound is real arithmetic, a score is floats (each off
by a few units in the last place)."""
FIRST_BLOCKS = 16
"""Blocks read in the first round (the best bounded): they set the bar the others must reach.
Each round after reads four times as many."""

DENSE_SPAN = 8
"""Slots looked up (or lists joined) spanning at most this many times their count go through
a table over the span (a gather per posting) rather than a binary search each."""

_SIZE = 1 << BLOCK_SHIFT


@dataclass
class _Term:
    name: str
    rows: list[tuple[I32, F32, Blocks]]
    """Sealed lists of the scope's partitions, with their block bounds."""
    tail: list[tuple[I32, F32]]
    """Lists of the unsealed tail: read whole."""
    df: int
    idf: float
    rare: bool


class Pruned:
    """One query's BM25 over one scope: `top(k)` and `at(slots)` give what `BM25Index.score`
    would, without scoring every document."""

    def __init__(self, index: BM25Index, clauses: Sequence[Clause], scope: Scope) -> None:
        self.index = index
        self.scope = scope
        self.limit = len(scope.mask)
        self.pos = scope.numbering()[1]
        self.k1, self.b = index.k1, index.b
        self.lengths = index.lengths64()
        self.scored = 0
        """Documents scored so far (of the scope's `n`)."""
        self.read = 0
        """Postings read so far: the lists read whole, the postings of every block opened,
        and the matches a lookup by slot found (`at`). Compare `exhaustive()`."""
        self.plan: list[tuple[Clause, list[tuple[str, float]]]] = []
        self.terms: dict[str, _Term] = {}
        for c in clauses:
            alts: list[tuple[str, float]] = [(s, index.synonym_weight) for s in c.synonyms]
            if c.prefix and len(c.term) >= PREFIX_MIN_LEN:
                alts.extend((t, index.prefix_weight) for t in index.completions(c.term))
            self.plan.append((c, alts))
            for t in (c.term, *(a for a, _ in alts)):
                if t not in self.terms:
                    self.terms[t] = self._term(t)

    # ---- what a term reads -----------------------------------------------------------
    def _term(self, term: str) -> _Term:
        ix, scope = self.index, self.scope
        rows = [(*ix.sealed.row(r), ix.sealed.blocks(r, self.lengths, self._shape()))
                for r in ix.sealed.rows(term, scope.parts)]  # fmt: skip
        # copies: a view would pin the tail's arrays, and a write appending to them fails
        # while a query's `Pruned` (or a stream holding its `at`) is alive
        tail = [
            (np.array(d, dtype=np.int32), np.array(f, dtype=np.float32))
            for p, (d, f) in (ix.postings.get(term) or {}).items()
            if (scope.parts is None or p in scope.parts) and len(d)
        ]
        df = self._df(term, [d for d, _, _ in rows] + [d for d, _ in tail])
        idf = math.log(1.0 + (scope.n - df + 0.5) / (df + 0.5))
        return _Term(term, rows, tail, df, idf, df * RARE_SHARE <= scope.n)

    def _below(self, docs: I32) -> I32:
        """The postings of slots the scope covers (a held scope ends before later slots)."""
        if len(docs) and docs[-1] >= self.limit:
            return docs[: int(np.searchsorted(docs, self.limit))]
        return docs

    def _inside(self, docs: I32) -> int:
        return int(np.count_nonzero(self.pos[self._below(docs)] >= 0))

    def _df(self, term: str, lists: list[I32]) -> int:
        """Documents of the scope holding the term: the `len(matches)` of the dense path,
        counted without gathering them (and kept by the scope, extended after appends)."""
        scope = self.scope
        df = scope.dfs.get(term)
        if df is not None:
            return df
        known = scope.cache.get(term)
        if known is not None:
            df = len(known[0])
        elif scope.whole:
            df = sum(len(self._below(d)) for d in lists)
        else:
            carried = scope.carried_dfs.pop(term, None)
            if carried is not None:
                before, lo = carried
                df = before + sum(self._inside(d[int(np.searchsorted(d, lo)) :]) for d in lists)
            else:
                df = sum(self._inside(d) for d in lists)
        scope.dfs[term] = df
        return df

    def _pieces(self, t: _Term) -> list[tuple[I32, F32]]:
        return [(d, f) for d, f, _ in t.rows] + t.tail

    # ---- scores ------------------------------------------------------------------------
    def _norm(self, slots: I32) -> F64:
        # `BM25Index._norms`' expression, element by element
        dl = self.lengths[slots]
        out: F64 = self.k1 * (1.0 - self.b + self.b * dl / self.scope.avgdl)
        return out

    def _contrib(self, t: _Term, tf: F64, norm: F64) -> F64:
        out: F64 = t.idf * tf * (self.k1 + 1.0) / (tf + norm)  # `local_scores`' expression
        return out

    def _lookup(self, t: _Term, slots: I32, table: I32 | None) -> tuple[I32, F64]:
        """(indices into `slots`, tf) of the slots holding the term (`slots` ascending;
        `table`: each slot's index over slots[0]..slots[-1], -1 between, or None)."""
        hits: list[npt.NDArray[np.intp] | I32] = []
        tfs: list[F32] = []
        for i, (d, f) in enumerate(self._pieces(t)):
            lo = int(np.searchsorted(d, slots[0]))
            hi = int(np.searchsorted(d, slots[-1], "right"))
            if lo == hi:
                continue
            d, f = d[lo:hi], f[lo:hi]
            if table is not None:  # every posting of the range, one gather each
                at = table[d - slots[0]]
                sel = at >= 0
                h: npt.NDArray[np.intp] | I32 = at[sel]
                tf = f[sel]
            else:  # few slots over a wide range: a binary search each
                j = np.searchsorted(d, slots)
                np.minimum(j, len(d) - 1, out=j)
                h = np.flatnonzero(d[j] == slots)
                tf = f[j[h]]
            hits.append(h)
            if not t.rare and i < len(t.rows):  # (other lists: counted whole)
                self.read += len(h)
            tfs.append(tf)
        if not hits:
            return np.zeros(0, np.int32), np.zeros(0, np.float64)
        found = hits[0] if len(hits) == 1 else np.concatenate(hits)
        tf_all = tfs[0] if len(tfs) == 1 else np.concatenate(tfs)
        return found.astype(np.int32), tf_all.astype(np.float64)

    def _evaluate(self, slots: I32, find: Callable[[_Term], tuple[I32, F64]] | None = None) -> F64:
        """Scores of `slots` (ascending, unique, in the scope unless `find` is given): per
        document the clauses' parts added in clause order, as `BM25Index.score` adds them.
        `find(term)`: (indices into `slots`, tf) of its matches, by default looked up."""
        scores = np.zeros(len(slots), np.float64)
        self.scored += len(slots)
        if not len(slots):
            return scores
        norm = self._norm(slots)
        if find is None:
            table: I32 | None = None
            span = int(slots[-1]) - int(slots[0]) + 1
            if span <= DENSE_SPAN * len(slots):
                table = np.full(span, -1, np.int32)
                table[slots - slots[0]] = np.arange(len(slots), dtype=np.int32)
            find = lambda t: self._lookup(t, slots, table)  # noqa: E731
        for c, alts in self.plan:
            e = self.terms[c.term]
            he, tfe = find(e)
            ce = self._contrib(e, tfe, norm[he])
            if alts:
                best: F64 | None = None
                for term, w in alts:
                    t = self.terms[term]
                    h, tf = find(t)
                    if not len(h):
                        continue
                    if best is None:
                        best = np.zeros(len(slots), np.float64)
                    best[h] = np.maximum(best[h], self._contrib(t, tf, norm[h]) * w)
                if best is not None:
                    best[he] = 0.0  # documents with the exact term take no alternative
                    sel = np.flatnonzero(best > 0)
                    vals = best[sel]
                    if e.df and len(vals) and float(vals.max()) > ALT_CAP * self._min_below(e):
                        vals = np.minimum(vals, ALT_CAP * self._min(e))
                    np.add.at(scores, sel, c.weight * vals)
            if len(he):
                np.add.at(scores, he, ce if c.weight == 1.0 else c.weight * ce)
        return scores

    def at(self, slots: Ids) -> F64:
        """The scores of `slots` (documents of the scope, any order)."""
        if not len(slots):
            return np.zeros(0, np.float64)
        order = np.argsort(slots, kind="stable")
        got = self._evaluate(np.ascontiguousarray(slots[order], dtype=np.int32))
        out = np.empty(len(slots), np.float64)
        out[order] = got
        return out

    # ---- the weakest exact match (the alternatives' cap) ------------------------------
    def _min_below(self, t: _Term) -> float:
        """A floor under the term's weakest contribution in the scope (from the blocks'
        bounds): while no alternative reaches ALT_CAP times it, the cap changes nothing."""
        scope = self.scope
        if t.tail or t.rare or not t.rows:
            return self._min(t)
        known = scope.mins.get(t.name)
        if known is not None:
            return known
        alpha, beta = self._shape()
        lo = min(float((1.0 / (1.0 + blk.most(alpha, beta))).min())
                 for _, _, blk in t.rows)  # fmt: skip
        return t.idf * (self.k1 + 1.0) * lo * (1.0 - SLACK)

    def _min(self, t: _Term) -> float:
        """The term's weakest contribution over the scope: the dense path's `exact.min()`.
        Blocks are read from the lowest floor up, until none left can go below."""
        got = self.scope.mins.get(t.name)
        if got is not None:
            return got
        best = math.inf
        for d, f in t.tail + ([(d, f) for d, f, _ in t.rows] if t.rare else []):
            best = min(best, self._weakest(t, d, f))
        if not t.rare and t.rows:
            alpha, beta = self._shape()
            top = t.idf * (self.k1 + 1.0)
            floors = np.concatenate([
                top / (1.0 + blk.most(alpha, beta)) * (1.0 - SLACK)
                for _, _, blk in t.rows
            ])  # fmt: skip
            row_of = np.repeat(np.arange(len(t.rows)), [len(blk.ids) for _, _, blk in t.rows])
            first = np.concatenate([[0], np.cumsum([len(blk.ids) for _, _, blk in t.rows])])
            order = np.argsort(floors, kind="stable")
            at, step = 0, FIRST_BLOCKS
            while at < len(order) and floors[order[at]] <= best:
                chunk = order[at : at + step]
                chunk = chunk[floors[chunk] <= best]
                at += step
                step *= 4
                for r in np.unique(row_of[chunk]).tolist():
                    d, f, blk = t.rows[r]
                    mine = chunk[row_of[chunk] == r] - first[r]
                    idx = _spans(blk.starts[mine], blk.starts[mine + 1])
                    best = min(best, self._weakest(t, d[idx], f[idx]))
        self.scope.mins[t.name] = best
        return best

    def _weakest(self, t: _Term, docs: I32, tfs: F32) -> float:
        docs = self._below(docs)
        self.read += len(docs)
        tfs = tfs[: len(docs)]
        if not self.scope.whole:
            keep = self.pos[docs] >= 0
            docs, tfs = docs[keep], tfs[keep]
        if not len(docs):
            return math.inf
        return float(self._contrib(t, tfs.astype(np.float64), self._norm(docs)).min())

    def _shape(self) -> tuple[float, float]:
        """(alpha, beta) of a posting's part 1 / (1 + alpha u + beta v) (`Blocks`)."""
        return self.k1 * (1.0 - self.b), self.k1 * self.b / self.scope.avgdl

    # ---- the top -----------------------------------------------------------------------
    def _bounds(self) -> F64:
        """Per block, a bound on the score of any document in it that no rare term and no
        tail list holds (those are scored apart)."""
        n_blocks = ((self.limit - 1) >> BLOCK_SHIFT) + 1
        alpha, beta = self._shape()
        total = np.zeros(n_blocks, np.float64)

        def bound(t: _Term) -> F64:
            out = np.zeros(n_blocks, np.float64)
            if t.rare:
                return out
            top = t.idf * (self.k1 + 1.0)
            for _, _, blk in t.rows:
                ids = blk.ids
                ok = ids < n_blocks
                b = top / (1.0 + blk.least(alpha, beta)[ok])
                ids = ids[ok]  # unique within a list; a document is in one list
                out[ids] = np.maximum(out[ids], b)
            return out

        for c, alts in self.plan:
            e = self.terms[c.term]
            part = bound(e)
            alt = np.zeros(n_blocks, np.float64)
            for term, w in alts:
                t = self.terms[term]
                if t.rows and not t.rare:
                    np.maximum(alt, w * bound(t), out=alt)
            if e.df and alt.any():
                np.minimum(alt, ALT_CAP * self._min(e), out=alt)
            np.maximum(part, alt, out=part)
            total += c.weight * part
        total *= 1.0 + SLACK
        return total

    def top(self, k: int) -> I32:
        """The slots of the `k` best documents with a positive score, best first (by score,
        then slot): `ranking.top` over the dense scores."""
        if self.scope.n == 0 or not self.plan:
            return np.zeros(0, np.int32)
        whole: list[I32] = []
        for t in self.terms.values():
            for d, _ in t.tail if not t.rare else self._pieces(t):
                d = self._below(d)
                self.read += len(d)
                whole.append(d if self.scope.whole else d[self.pos[d] >= 0])
        first = _union(whole)
        got = self._evaluate(first)
        keep = got > 0
        slots, scores = first[keep], got[keep]
        slots, scores = _best(slots, scores, k)
        if any(t.rows and not t.rare for t in self.terms.values()):
            bounds = self._bounds()
            done = np.zeros(len(bounds), np.bool_)
            step = FIRST_BLOCKS
            while True:
                bar = float(scores[-1]) if len(scores) >= k else 0.0
                open_ = np.flatnonzero((bounds >= bar) & (bounds > 0) & ~done)
                if not len(open_):
                    break
                if len(open_) > step:
                    open_ = np.sort(open_[np.argpartition(-bounds[open_], step - 1)[:step]])
                step *= 4
                done[open_] = True
                # every slot of the blocks, scored from the blocks' postings alone (what a
                # rare term or the tail adds is on `first`'s documents only), then kept if
                # in the scope and not scored already
                grid = (open_[:, None] * _SIZE + np.arange(_SIZE)[None, :]).ravel()
                grid = grid[grid < self.limit].astype(np.int32)  # the last block may cross
                got = self._evaluate(grid, lambda t: self._in_blocks(t, open_))  # noqa: B023
                keep = (got > 0) & (self.pos[grid] >= 0)
                if len(first):
                    j = np.minimum(np.searchsorted(first, grid), len(first) - 1)
                    keep &= first[j] != grid
                slots, scores = _best(
                    np.concatenate([slots, grid[keep]]), np.concatenate([scores, got[keep]]), k
                )
        return slots

    def df(self, term: str) -> int:
        t = self.terms.get(term)
        return t.df if t is not None else self._term(term).df

    def exhaustive(self) -> int:
        """Postings the dense path (`BM25Index.score`) reads for the same query: every
        posting of the query's terms in the scope's partitions, below the scope's end."""
        return sum(len(self._below(d)) for t in self.terms.values() for d, _ in self._pieces(t))

    def _in_blocks(self, t: _Term, blocks: npt.NDArray[np.intp]) -> tuple[I32, F64]:
        """(index in the grid of `blocks`' slots, tf) of the term's sealed postings inside
        `blocks` (ascending): the postings read, block by block, none between."""
        hits: list[I32] = []
        tfs: list[F32] = []
        for d, f, blk in [] if t.rare else t.rows:
            if not len(blk.ids):
                continue
            i = np.searchsorted(blk.ids, blocks)
            np.minimum(i, len(blk.ids) - 1, out=i)
            ok = blk.ids[i] == blocks
            rank, i = np.flatnonzero(ok), i[ok]
            if not len(i):
                continue
            lo, hi = blk.starts[i], blk.starts[i + 1]
            idx = _spans(lo, hi)
            docs = d[idx]
            at = np.repeat(rank * _SIZE, hi - lo) + (docs & (_SIZE - 1))
            self.read += len(idx)
            keep = docs < self.limit  # postings past a held scope's end
            hits.append(at[keep].astype(np.int32))
            tfs.append(f[idx][keep])
        if not hits:
            return np.zeros(0, np.int32), np.zeros(0, np.float64)
        found = hits[0] if len(hits) == 1 else np.concatenate(hits)
        tf = tfs[0] if len(tfs) == 1 else np.concatenate(tfs)
        return found, tf.astype(np.float64)


def _union(lists: list[I32]) -> I32:
    """The distinct slots of `lists` (each ascending), ascending."""
    lists = [d for d in lists if len(d)]
    if not lists:
        return np.zeros(0, np.int32)
    lo = min(int(d[0]) for d in lists)
    span = max(int(d[-1]) for d in lists) - lo + 1
    if span > DENSE_SPAN * sum(len(d) for d in lists):
        return np.unique(np.concatenate(lists)).astype(np.int32)
    mark = np.zeros(span, np.bool_)
    for d in lists:
        mark[d - lo] = True
    out: I32 = (np.flatnonzero(mark) + lo).astype(np.int32)
    return out


def _best(slots: I32, scores: F64, k: int) -> tuple[I32, F64]:
    """The k best (score, then slot), best first."""
    sel = ranked(scores, slots, k)
    return slots[sel], scores[sel]


def _spans(lo: npt.NDArray[np.int64], hi: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Every index of the half-open ranges [lo[i], hi[i]), in order."""
    sizes = hi - lo
    total = int(sizes.sum())
    if not total:
        return np.zeros(0, np.int64)
    shift = np.repeat(lo - np.concatenate([[0], np.cumsum(sizes)[:-1]]), sizes)
    out: npt.NDArray[np.int64] = np.arange(total, dtype=np.int64) + shift
    return out
