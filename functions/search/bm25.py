"""An incremental BM25 inverted index over pre-analysed, field-weighted term frequencies.

Postings are append-only `array`s per term (4 bytes per doc id and per tf), viewed as numpy
arrays without copying when a query reads them. Removal is a tombstone in the caller's
scope mask, so collection statistics (N, df, avgdl) are computed over the documents the
query may see: a filter is applied *before* ranking, and a small project is scored with its
own statistics rather than those of a large neighbour.
"""

from __future__ import annotations

import bisect
import math
from array import array
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from functions.search.mapped import Spill
from functions.search.postings import Sealed, SealedBuffers

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]
I32 = npt.NDArray[np.int32]
Mask = npt.NDArray[np.bool_]

PREFIX_MIN_LEN = 3
PREFIX_MAX_EXPANSIONS = 12
ALT_CAP = 0.5
"""A synonym or prefix match earns at most this share of the weakest exact match."""
CACHE_TERMS = 512
"""Terms remembered per scope before its caches start over."""
CACHE_BYTES = 64 << 20
"""Bytes of matches a scope remembers (its own and those carried from the scope before it)
before its caches start over. A common term's matches and contributions are 24 bytes per
document of the scope: bounded by count alone, 512 of them could hold 12 GB at a million
documents. 64 MB keeps a few queries' worth of common terms at that size."""


@dataclass
class Clause:
    """One query term, with the alternatives (synonyms, prefix completions) that may stand
    in for it in a document that lacks the exact term."""

    term: str
    weight: float = 1.0
    synonyms: tuple[str, ...] = ()
    prefix: bool = False


@dataclass
class Scope:
    """The documents a query may see, and their statistics."""

    mask: Mask
    n: int
    avgdl: float
    parts: tuple[int, ...] | None = None
    """Posting partitions that can hold documents of the scope (None: all)."""
    whole: bool = False
    """Every document of those partitions (as of the scope's making) is in the scope, so
    postings need no selection by the mask."""
    cache: dict[str, tuple[I32, F64]] = field(default_factory=dict)
    """term -> (positions, tf) inside the scope."""
    contrib: dict[str, tuple[I32, F64]] = field(default_factory=dict)
    """term -> (positions, BM25 contribution): a pure function of the scope's statistics, so it
    is computed once per scope (a write makes a new scope) rather than once per query."""
    entities: dict[int, I32] = field(default_factory=dict)
    """Entity-graph node -> its records inside the scope (kept here for the same reason)."""
    entity_links: dict[int, list[int]] = field(default_factory=dict)
    """Entity-graph node -> the entities on its latest records inside the scope."""
    carried: dict[str, tuple[I32, F64, int]] = field(default_factory=dict)
    """term -> (positions, tf, lo): matches found by an older scope over the slots below
    `lo` (positions the same here), to be extended rather than gathered again."""
    norms: F64 | None = None
    """BM25 length normalisation per position (`BM25Index._norms`)."""
    norms_positive: bool = False
    by_position: dict[str, npt.NDArray[Any]] = field(default_factory=dict)
    """Per-document arrays gathered to the scope's positions (filled by their users)."""
    dfs: dict[str, int] = field(default_factory=dict)
    """term -> documents of the scope holding it (functions/search/pruning.py)."""
    carried_dfs: dict[str, tuple[int, int]] = field(default_factory=dict)
    """term -> (df, lo): an older scope's count over the slots below `lo`, to be extended."""
    mins: dict[str, float] = field(default_factory=dict)
    """term -> its weakest BM25 contribution in the scope (the alternatives' cap)."""
    _numbering: tuple[I32, I32] | None = None
    _held: int = 0
    """Bytes in `cache`, `contrib` and `carried` (as `remember` and `carry` count them)."""

    def numbering(self) -> tuple[I32, I32]:
        """(ids, pos): the scope's ids ascending, and each id's position among them (-1
        outside), so per-query work can run over the scope's own few columns."""
        if self._numbering is None:
            ids = np.flatnonzero(self.mask).astype(np.int32)
            pos = np.full(len(self.mask), -1, np.int32)
            pos[ids] = np.arange(len(ids), dtype=np.int32)
            self._numbering = (ids, pos)
        return self._numbering

    def remember(
        self, store: dict[str, tuple[I32, F64]], key: str,
        value: tuple[I32, F64],
    ) -> None:  # fmt: skip
        size = value[0].nbytes + value[1].nbytes
        if len(store) > CACHE_TERMS or self._held + size > CACHE_BYTES:
            # every cache is a pure function of the scope: dropping one costs time only
            self.cache.clear()
            self.contrib.clear()
            self.carried.clear()
            self._held = 0
        store[key] = value
        self._held += size


@dataclass
class BM25Index:
    k1: float = 1.2
    b: float = 0.75
    synonym_weight: float = 0.6
    prefix_weight: float = 0.4
    postings: dict[str, dict[int, tuple[array[int], array[float]]]] = field(default_factory=dict)
    """The tail: term -> partition (the project's code) -> (doc ids, tfs) of the postings
    added since the last seal. A query scoped to a project reads only that project's
    postings, however large the others are."""
    sealed: Sealed = field(default_factory=Sealed)
    """Everything before the last seal, in flat arrays (functions/search/postings.py)."""
    spill: Spill = field(default_factory=Spill)
    """Where sealed postings live: mapped files in the index dir, or the heap."""
    doc_len: array[float] = field(default_factory=lambda: array("f"))
    _len64: F64 = field(default_factory=lambda: np.zeros(0, np.float64))
    """`doc_len` widened to float64 (what scoring computes in), kept in step on write so
    a query gathers lengths without converting them; grown by doubling."""
    _vocab: list[str] = field(default_factory=list)
    _pending_vocab: list[str] = field(default_factory=list)

    # ---- writes ------------------------------------------------------------------
    def add(self, doc: int, tfs: Mapping[str, float], length: float, part: int = 0) -> None:
        if doc >= len(self.doc_len):
            self.doc_len.extend([0.0] * (doc + 1 - len(self.doc_len)))
        self.doc_len[doc] += length
        if doc >= len(self._len64):
            grown = np.zeros(max(2 * len(self._len64), doc + 1, 1024), np.float64)
            grown[: len(self._len64)] = self._len64
            self._len64 = grown
        self._len64[doc] = self.doc_len[doc]
        for term, tf in tfs.items():
            parts = self.postings.get(term)
            if parts is None:
                parts = self.postings[term] = {}
                if term not in self.sealed.term_id:
                    self._pending_vocab.append(term)
            p = parts.get(part)
            if p is None:
                p = parts[part] = (array("i"), array("f"))
            p[0].append(doc)
            p[1].append(tf)

    def size(self) -> int:
        return len(self.doc_len)

    def seal(self) -> None:
        """Fold the tail into the sealed arrays (what a query reads is unchanged)."""
        if self.postings:
            self.sealed = self.sealed.merged(self.postings, self.spill)
            self.postings = {}

    def has(self, term: str) -> bool:
        return term in self.postings or term in self.sealed.term_id

    def term_count(self) -> int:
        return len(self.sealed.terms) + sum(
            1 for t in self.postings if t not in self.sealed.term_id
        )

    def lengths64(self) -> F64:
        return self._len64[: len(self.doc_len)]

    def lengths(self) -> F32:
        return (
            np.frombuffer(self.doc_len, dtype=np.float32)
            if self.doc_len
            else np.zeros(0, np.float32)
        )

    def scope(
        self, mask: Mask, parts: tuple[int, ...] | None = None, in_parts: int | None = None
    ) -> Scope:
        """`in_parts`: how many slots (removed ones included) the partitions hold; when the
        scope has them all, postings are read without selection."""
        n = int(mask.sum())
        lens = self.lengths()[: len(mask)]
        avgdl = float(lens[mask[: len(lens)]].mean()) if n else 1.0
        whole = in_parts is not None and in_parts == n
        return Scope(mask, n, max(avgdl, 1e-6), parts, whole)

    def carry(self, old: Scope, new: Scope) -> None:
        """Give `new` (the documents of `old`, plus the visible ones among the slots appended
        since) what `old` found that appends leave true: its numbering, extended, and its
        terms' matches, which `matches` extends by the new postings when a query asks for
        the term. Contributions and norms follow the statistics: `new` computes them."""
        lo = len(old.mask)
        ids0, pos0 = old.numbering()
        tail = new.mask[lo:]
        fresh = (lo + np.flatnonzero(tail)).astype(np.int32)
        ids = np.concatenate([ids0, fresh])
        tail_pos = np.full(len(tail), -1, np.int32)
        tail_pos[fresh - lo] = np.arange(len(ids0), len(ids), dtype=np.int32)
        new._numbering = (ids, np.concatenate([pos0, tail_pos]))
        dl = old.by_position.get("length")
        if dl is not None:  # a slot's length is set once, when it is added
            new.by_position["length"] = np.concatenate([dl, self.lengths64()[fresh]])
        carried = dict(old.carried)
        carried.update((t, (local, tf, lo)) for t, (local, tf) in old.cache.items())
        if len(carried) > 2 * CACHE_TERMS:
            carried = {t: carried[t] for t in old.cache}
        held = sum(a.nbytes + b.nbytes for a, b, _ in carried.values())
        if held > CACHE_BYTES:  # the newest scope's own matches first
            carried = {t: carried[t] for t in old.cache}
            held = sum(a.nbytes + b.nbytes for a, b, _ in carried.values())
        new.carried = carried
        new._held = held
        dfs = dict(old.carried_dfs)
        dfs.update((t, (df, lo)) for t, df in old.dfs.items())
        if len(dfs) > 2 * CACHE_TERMS:
            dfs = {t: (df, lo) for t, df in old.dfs.items()}
        new.carried_dfs = dfs

    def _carried(self, term: str, scope: Scope) -> tuple[I32, F64] | None:
        """A term's matches in an older scope (slots below its `lo`) extended by the term's
        postings from `lo` on, when they come from one partition: then old + new is the
        order a fresh scope reads them in (from several, partitions would interleave)."""
        got = scope.carried.pop(term, None)
        if got is None:
            return None
        local, tf, lo = got
        scope._held -= local.nbytes + tf.nbytes
        parts = self._pieces(term, scope)
        if len(parts) != 1:
            return None
        kept = [(d, f) for d, f in parts[0] if len(d) and d[-1] >= lo]
        if not kept:
            more, more_tf = np.zeros(0, np.int32), np.zeros(0, np.float32)
        else:  # postings are in slot order: only the pieces reaching past lo matter
            starts = [int(np.searchsorted(d, lo)) for d, _ in kept]
            more = np.concatenate([d[i:] for (d, _), i in zip(kept, starts, strict=True)])
            more_tf = np.concatenate([f[i:] for (_, f), i in zip(kept, starts, strict=True)])
        if len(more) and more[-1] >= len(scope.mask):
            return None  # postings past a held scope: the plain path copes
        at = scope.numbering()[1][more]
        if not scope.whole:
            sel = at >= 0
            at, more_tf = at[sel], more_tf[sel]
        return np.concatenate([local, at]), np.concatenate([tf, more_tf])

    # ---- reads -------------------------------------------------------------------
    def vocabulary(self) -> list[str]:
        if self._pending_vocab:
            if len(self._pending_vocab) < 1000:
                for t in self._pending_vocab:
                    bisect.insort(self._vocab, t)
            else:
                self._vocab = sorted(set(self._vocab).union(self._pending_vocab))
            self._pending_vocab = []
        return self._vocab

    def completions(self, prefix: str) -> list[str]:
        vocab = self.vocabulary()
        i = bisect.bisect_left(vocab, prefix)
        out: list[str] = []
        while i < len(vocab) and vocab[i].startswith(prefix) and len(out) < PREFIX_MAX_EXPANSIONS:
            if vocab[i] != prefix:
                out.append(vocab[i])
            i += 1
        return out

    def matches(self, term: str, scope: Scope) -> tuple[I32, F64]:
        """(positions, tf) of one term inside the scope, positions as in `Scope.numbering`;
        remembered for the scope's lifetime so the streams of one query (and repeated
        queries) select postings once. Keyed by the term alone: a scope's answer never
        changes, since a write appends postings only for new slots, past its mask (and a
        write makes the index take a new scope anyway)."""
        hit = scope.cache.get(term)
        if hit is None and scope.carried:
            hit = self._carried(term, scope)
            if hit is not None:
                scope.remember(scope.cache, term, hit)
        if hit is None:
            arrays = self._arrays(term, scope)
            if not arrays:
                return np.zeros(0, np.int32), np.zeros(0, np.float64)
            hit = self._matches(arrays, scope)
            scope.remember(scope.cache, term, hit)
        return hit

    def _pieces(self, term: str, scope: Scope) -> list[list[tuple[I32, F32]]]:
        """The term's postings the scope reads, per partition (the scope's partitions in
        its order, or all in the order they first had postings of the term): its sealed
        postings, then its tail's, as separate pieces (views, no copy)."""
        lists = self.sealed.lists(term, scope.parts) if term in self.sealed.term_id else []
        tail = self.postings.get(term)
        if not lists and not tail:
            return []
        by_part: dict[int, list[tuple[I32, F32]]] = {p: [(d, f)] for p, d, f in lists}
        for p, (d2, f2) in (tail or {}).items():
            if scope.parts is not None and p not in scope.parts:
                continue
            more = np.frombuffer(d2, dtype=np.int32), np.frombuffer(f2, dtype=np.float32)
            by_part.setdefault(p, []).append(more)
        if scope.parts is None:
            return list(by_part.values())
        return [by_part[p] for p in scope.parts if p in by_part]

    def _arrays(self, term: str, scope: Scope) -> list[tuple[I32, F32]]:
        """`_pieces`, one after another: what a reader concatenates (once)."""
        return [piece for part in self._pieces(term, scope) for piece in part]

    def _matches(self, arrays: list[tuple[I32, F32]], scope: Scope) -> tuple[I32, F64]:
        if scope.n == 0:
            return np.zeros(0, np.int32), np.zeros(0, np.float64)
        mask = scope.mask
        if len(arrays) == 1:
            docs, tfs = arrays[0]
        else:
            docs = np.concatenate([d for d, _ in arrays])
            tfs = np.concatenate([f for _, f in arrays])
        # postings are appended in slot order, so a partition's last doc is its largest
        if any(d[-1] >= len(mask) for d, _ in arrays):
            inside = docs < len(mask)
            docs, tfs = docs[inside], tfs[inside]
        # the gather makes new arrays: no view pins the postings' buffers (they must grow)
        local = scope.numbering()[1][docs]
        if scope.whole:  # every document of the scope's partitions is visible
            return local, tfs.astype(np.float64)
        sel = local >= 0
        return local[sel], tfs[sel].astype(np.float64)

    def term_scores(self, term: str, scope: Scope) -> tuple[I32, F64]:
        """(docs, BM25 contribution) of one term over the scope; unsorted, unique docs."""
        local, contrib = self.local_scores(term, scope)
        return scope.numbering()[0][local], contrib

    def local_scores(self, term: str, scope: Scope) -> tuple[I32, F64]:
        """`term_scores` with documents as positions in the scope (`Scope.numbering`)."""
        hit = scope.contrib.get(term)
        if hit is not None:
            return hit
        dd, tf = self.matches(term, scope)
        df = len(dd)
        if df == 0:
            out: tuple[I32, F64] = (dd, np.zeros(0, np.float64))
        else:
            idf = math.log(1.0 + (scope.n - df + 0.5) / (df + 0.5))
            out = (dd, idf * tf * (self.k1 + 1.0) / (tf + self._norms(scope)[dd]))
        scope.remember(scope.contrib, term, out)
        return out

    def prefetch(self, terms: Iterable[str], scope: Scope) -> None:
        """Fill the scope's caches for every term not in them yet, all terms in one batch:
        a query's terms (with synonyms and prefix completions, often ten or more) then
        cost a dozen numpy calls together rather than a dozen each. Element by element the
        arithmetic is `_matches` and `local_scores`' own (the idf repeated per posting is
        the same scalar product), so the cached values are equal bit for bit."""
        todo: list[tuple[str, list[tuple[I32, F32]]]] = []
        seen: set[str] = set()
        for t in terms:
            if t in seen or t in scope.contrib or t in scope.cache or t in scope.carried:
                continue  # (matches known from an older scope are extended, not gathered)
            seen.add(t)
            arrays = self._arrays(t, scope)
            if arrays:
                todo.append((t, arrays))
        flat = [a for _, arrays in todo for a in arrays]
        if len(todo) < 2 or scope.n == 0 or any(d[-1] >= len(scope.mask) for d, _ in flat):
            return  # nothing to batch, or postings past a held scope: the plain path
        docs = np.concatenate([d for d, _ in flat])
        tfs = np.concatenate([f for _, f in flat])
        lens = np.array([sum(len(d) for d, _ in arrays) for _, arrays in todo])
        local = scope.numbering()[1][docs]
        if not scope.whole:
            sel = local >= 0
            ends = np.cumsum(sel)[np.cumsum(lens) - 1]
            lens = np.diff(ends, prepend=0)
            local, tfs = local[sel], tfs[sel]
        tf = tfs.astype(np.float64)
        dfs: list[int] = lens.tolist()
        idf = np.repeat(
            [math.log(1.0 + (scope.n - df + 0.5) / (df + 0.5)) for df in dfs], dfs
        )  # fmt: skip
        contrib = idf * tf * (self.k1 + 1.0) / (tf + self._norms(scope)[local])
        start = 0
        for (key, _), df in zip(todo, dfs, strict=True):
            piece = slice(start, start + df)
            scope.remember(scope.cache, key, (local[piece], tf[piece]))
            scope.remember(scope.contrib, key, (local[piece], contrib[piece]))
            start += df

    def _norms(self, scope: Scope) -> F64:
        # The length normalisation of every position in the scope, once per scope: the
        # same expression, element by element, as computing it per term.
        if scope.norms is None:
            dl = scope.by_position.get("length")
            if dl is None:
                dl = scope.by_position["length"] = self.lengths64()[scope.numbering()[0]]
            scope.norms = self.k1 * (1.0 - self.b + self.b * dl / scope.avgdl)
        return scope.norms

    def score(self, clauses: Iterable[Clause], scope: Scope) -> F64:
        """Scores over the scope's positions (`Scope.numbering`: a project's few thousand
        records, not every slot of the index); 0 where no clause matched."""
        scores = np.zeros(len(scope.numbering()[0]), np.float64)
        plan: list[tuple[Clause, list[tuple[str, float]]]] = []
        for c in clauses:
            alts: list[tuple[str, float]] = [(s, self.synonym_weight) for s in c.synonyms]
            if c.prefix and len(c.term) >= PREFIX_MIN_LEN:
                alts.extend((t, self.prefix_weight) for t in self.completions(c.term))
            plan.append((c, alts))
        self.prefetch([t for c, alts in plan for t in (c.term, *(a for a, _ in alts))], scope)
        for c, alts in plan:
            dd, contrib = self.local_scores(c.term, scope)
            if alts:
                self._add_alternatives(scores, dd, contrib, alts, c.weight, scope)
            if len(dd):
                # 1.0 * x is x: skip the multiplication for the common weight. A term's
                # positions are unique, so add.at adds what `scores[dd] += x` does, element
                # by element, without gathering the old values first (half the time).
                np.add.at(scores, dd, contrib if c.weight == 1.0 else c.weight * contrib)
        return scores

    def _add_alternatives(
        self,
        scores: F64,
        exact_docs: I32,
        exact: F64,
        alts: list[tuple[str, float]],
        weight: float,
        scope: Scope,
    ) -> None:
        # Each document takes its best alternative; documents with the exact term take none,
        # and no alternative may reach the weakest exact match of the same term.
        # Work is sparse, over the matched documents only: a dense pass over every slot
        # costs more than the whole query on a large index.
        parts_d: list[I32] = []
        parts_c: list[F64] = []
        for term, w in alts:
            d, c = self.local_scores(term, scope)
            if len(d):
                parts_d.append(d)
                parts_c.append(c * w)
        if not parts_d:
            return
        docs = parts_d[0] if len(parts_d) == 1 else np.concatenate(parts_d)
        best = parts_c[0] if len(parts_c) == 1 else np.concatenate(parts_c)
        if len(parts_d) > 1:  # a document matched by several alternatives takes the best
            order = np.lexsort((-best, docs))
            docs, best = docs[order], best[order]
            first = np.ones(len(docs), np.bool_)
            np.not_equal(docs[1:], docs[:-1], out=first[1:])
            docs, best = docs[first], best[first]
        if len(exact_docs):
            exact_mark = np.zeros(len(scores), np.bool_)
            exact_mark[exact_docs] = True
            keep = ~exact_mark[docs]
            docs, best = docs[keep], np.minimum(best[keep], ALT_CAP * float(exact.min()))
        np.add.at(scores, docs, weight * best)  # unique docs: as `scores[docs] +=`

    # ---- persistence -------------------------------------------------------------
    def load(self, sealed: SealedBuffers, doc_len: bytes) -> None:
        self.sealed = Sealed.of(sealed, self.spill)
        self.postings = {}
        self._load_lengths(doc_len)

    def load_lists(
        self, postings: Mapping[str, list[tuple[int, bytes, bytes]]], doc_len: bytes
    ) -> None:
        """An older snapshot's postings (one entry per term and partition), sealed."""
        self.postings = {}
        for t, parts in postings.items():
            out = self.postings[t] = {}
            for part, d, f in parts:
                da, fa = array("i"), array("f")
                da.frombytes(d)
                fa.frombytes(f)
                out[part] = (da, fa)
        self.sealed = Sealed()
        self.seal()
        self._load_lengths(doc_len)

    def _load_lengths(self, doc_len: bytes) -> None:
        self.doc_len = array("f")
        self.doc_len.frombytes(doc_len)
        self._len64 = self.lengths().astype(np.float64)
        self._vocab = sorted(self.sealed.terms)
        self._pending_vocab = []
