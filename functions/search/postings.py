"""Sealed postings: every (term, partition) posting list frozen into four flat numpy arrays
instead of two `array`s, a tuple and a dict entry each (~170 bytes of objects per list, 36k
lists at 100k documents). New postings go to the index's small in-memory tail; a seal folds
the tail in (at a snapshot) and a snapshot stores the flat arrays as they are, so a restore
reads them back without building an object per list.

A term's lists keep the order a dict of its partitions had (first seen first), and within
a partition the sealed postings come before the tail's (slot order), so every reader
concatenates the same numbers in the same order as before and scores stay bit for bit.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TypeAlias

import msgspec
import numpy as np
import numpy.typing as npt

from functions.search.mapped import Spill

I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]
F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]
Tail: TypeAlias = "Mapping[str, Mapping[int, tuple[array[int], array[float]]]]"


BLOCK_SHIFT = 5
"""Slots per block (1 << BLOCK_SHIFT): the unit a pruned query reads or skips. The BM25 top
alone, two-word Zipf queries over one project of 1M records (the corpus of
ops/bench/search.py --one-scope): 64 slots read 7.5% of the query's postings in 5.9 ms p50,
32 slots 2.9% in 2.8 ms, 16 slots 2.0% in 3.5 ms (more blocks to bound than postings
saved); 32 keep a million slots' bounds to 2 MB a term."""
BLOCKS_BYTES = 64 << 20
"""Bytes of block bounds a seal remembers before it starts over (each is computed again,
from its list, when next asked)."""


@dataclass(frozen=True)
class Blocks:
    """One posting list cut at every multiple of 1 << BLOCK_SHIFT slots: the blocks it has
    postings in, where each starts in the list, and per block the extremes of what BM25's
    term-frequency part depends on. With u = 1/tf and v = length/tf a posting's part is
    1 / (1 + alpha u + beta v) (alpha = k1 (1 - b), beta = k1 b / avgdl), so
    1 / (1 + alpha min_u + beta min_v) bounds a block's best from above and
    1 / (1 + alpha max_u + beta max_v) its worst from below, whatever the scope's avgdl.
    Those take u and v from different postings; `low` and `high` take alpha u + beta v per
    posting at the shape the bounds were first asked for (`shape`: (alpha, beta), the first
    asker's statistics), which bounds it at another shape by the ratio of the two: far tighter
    while a scope's avgdl stays near that of its first query."""

    ids: I64
    starts: I64
    """ids[i]'s postings are [starts[i], starts[i + 1]) of the list (len(ids) + 1 entries)."""
    min_u: F64
    min_v: F64
    max_u: F64
    max_v: F64
    low: F64
    """Per block, the least alpha u + beta v of its postings at `shape`."""
    high: F64
    """Per block, the greatest."""
    shape: tuple[float, float]

    @classmethod
    def of(cls, docs: I32, tfs: F32, lengths: F64, shape: tuple[float, float]) -> Blocks:
        """`docs` ascending; `lengths` every slot's length (float64)."""
        if not len(docs):
            e = np.zeros(0, np.float64)
            return cls(np.zeros(0, np.int64), np.zeros(1, np.int64), e, e, e, e, e, e, shape)
        block = docs.astype(np.int64) >> BLOCK_SHIFT
        cut = np.flatnonzero(block[1:] != block[:-1]) + 1
        starts = np.concatenate([[0], cut, [len(docs)]]).astype(np.int64)
        tf = tfs.astype(np.float64)
        u = 1.0 / tf
        v = lengths[docs] / tf
        at = starts[:-1]
        w = shape[0] * u + shape[1] * v
        return cls(
            block[at], starts, np.minimum.reduceat(u, at), np.minimum.reduceat(v, at),
            np.maximum.reduceat(u, at), np.maximum.reduceat(v, at),
            np.minimum.reduceat(w, at), np.maximum.reduceat(w, at), shape,
        )  # fmt: skip

    def least(self, alpha: float, beta: float) -> F64:
        """Per block, a floor under alpha u + beta v of its postings."""
        out: F64 = alpha * self.min_u + beta * self.min_v
        r = _ratio(alpha, beta, self.shape, min)
        if r is not None:
            np.maximum(out, r * self.low, out=out)
        return out

    def most(self, alpha: float, beta: float) -> F64:
        """Per block, a ceiling over alpha u + beta v of its postings."""
        out: F64 = alpha * self.max_u + beta * self.max_v
        if (alpha and not self.shape[0]) or (beta and not self.shape[1]):
            return out  # a part the reference left out: no ratio bounds it
        r = _ratio(alpha, beta, self.shape, max)
        if r is not None:
            np.minimum(out, r * self.high, out=out)
        return out

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.ids, self.starts, self.min_u, self.min_v,
                                      self.max_u, self.max_v, self.low, self.high))  # fmt: skip


def _ratio(
    alpha: float, beta: float, shape: tuple[float, float],
    pick: Callable[[Iterable[float]], float],
) -> float | None:  # fmt: skip
    """alpha u + beta v against a u + b v at shape (a, b), u and v >= 0: between the least
    and the greatest of alpha / a and beta / b (a part whose reference is 0 adds nothing
    to the reference, so it only raises the left side: a floor may leave it out)."""
    ratios = [x / ref for x, ref in zip((alpha, beta), shape, strict=True) if ref > 0]
    return pick(ratios) if ratios else None


class SealedBuffers(msgspec.Struct, kw_only=True):
    """A seal on the wire (the snapshot): the arrays' bytes and the terms in order."""

    terms: list[str]
    first: bytes
    part: bytes
    end: bytes
    docs: bytes
    tfs: bytes


class Sealed:
    """`terms[t]`'s lists are rows first[t]..first[t+1]-1; row r is partition part[r], its
    postings docs/tfs[end[r-1]:end[r]]."""

    def __init__(self) -> None:
        self.terms: list[str] = []
        self.term_id: dict[str, int] = {}
        self.first: I64 = np.zeros(1, np.int64)
        self.part: I32 = np.zeros(0, np.int32)
        self.end: I64 = np.zeros(0, np.int64)
        self.docs: I32 = np.zeros(0, np.int32)
        self.tfs: F32 = np.zeros(0, np.float32)
        self._blocks: dict[int, Blocks] = {}
        self._blocks_bytes = 0

    def __len__(self) -> int:
        return len(self.docs)

    def rows(self, term: str, only: tuple[int, ...] | None = None) -> list[int]:
        """The rows of the term's lists, in the order `lists` gives them."""
        t = self.term_id.get(term)
        if t is None:
            return []
        rows = range(int(self.first[t]), int(self.first[t + 1]))
        if only is None:
            return list(rows)
        return [r for r in rows if int(self.part[r]) in only]

    def row(self, r: int) -> tuple[I32, F32]:
        """(docs, tfs) of row r (views, no copy)."""
        lo = int(self.end[r - 1]) if r else 0
        hi = int(self.end[r])
        return self.docs[lo:hi], self.tfs[lo:hi]

    def blocks(self, r: int, lengths: F64, shape: tuple[float, float]) -> Blocks:
        """Row r's block bounds (`Blocks`, at `shape` when first asked), kept while this
        seal lasts: its lists never change, nor do the lengths of the slots they hold."""
        got = self._blocks.get(r)
        if got is None:
            docs, tfs = self.row(r)
            got = Blocks.of(docs, tfs, lengths, shape)
            if self._blocks_bytes + got.nbytes > BLOCKS_BYTES:
                self._blocks.clear()
                self._blocks_bytes = 0
            self._blocks[r] = got
            self._blocks_bytes += got.nbytes
        return got

    def lists(self, term: str, only: tuple[int, ...] | None = None) -> list[tuple[int, I32, F32]]:
        """(partition, docs, tfs) of each of the term's lists, in order (views, no copy);
        `only`: of these partitions alone."""
        t = self.term_id.get(term)
        if t is None:
            return []
        out = []
        for r in range(int(self.first[t]), int(self.first[t + 1])):
            if only is not None and int(self.part[r]) not in only:
                continue
            lo = int(self.end[r - 1]) if r else 0
            hi = int(self.end[r])
            out.append((int(self.part[r]), self.docs[lo:hi], self.tfs[lo:hi]))
        return out

    def merged(self, tail: Tail, spill: Spill | None = None) -> Sealed:
        """A seal holding these lists with the tail's postings after them (new terms, and a
        term's new partitions, after the ones already here, as a dict would have them).
        The work follows the tail: the stretches of old postings between the lists the
        tail touches are copied whole, into `spill`'s mapped arrays when given."""
        grow: list[tuple[int, int, int, int]] = []
        """(boundary row, 0: more for the row before it / 1: a new row, part, piece)"""
        pieces: list[tuple[array[int], array[float]]] = []
        new_terms: list[str] = []
        first_l: list[int] = self.first.tolist()
        part_l: list[int] = self.part.tolist()
        end_l: list[int] = self.end.tolist()
        for term, parts in tail.items():
            t = self.term_id.get(term)
            if t is None:
                new_terms.append(term)
                continue
            lo, hi = first_l[t], first_l[t + 1]
            row_of = {part_l[r]: r for r in range(lo, hi)}
            for p, lists in parts.items():
                r = row_of.get(p)
                pieces.append(lists)
                if r is not None:
                    grow.append((r + 1, 0, p, len(pieces) - 1))
                else:
                    grow.append((hi, 1, p, len(pieces) - 1))
        grow.sort(key=lambda g: (g[0], g[1]))  # stable: the tail's order within a kind
        docs: list[npt.NDArray[np.int32]] = []
        tfs: list[npt.NDArray[np.float32]] = []
        cursor = 0
        for boundary, _kind, _p, k in grow:
            at = end_l[boundary - 1] if boundary else 0
            docs.append(self.docs[cursor:at])
            tfs.append(self.tfs[cursor:at])
            cursor = at
            docs.append(np.frombuffer(pieces[k][0], dtype=np.int32))
            tfs.append(np.frombuffer(pieces[k][1], dtype=np.float32))
        docs.append(self.docs[cursor:])
        tfs.append(self.tfs[cursor:])
        sizes = np.diff(self.end, prepend=np.int64(0)).astype(np.int64)
        added = [(b - 1, len(pieces[k][0])) for b, kind, _p, k in grow if kind == 0]
        if added:
            np.add.at(sizes, [r for r, _ in added], [n for _, n in added])
        inserts = [(b, p, len(pieces[k][0])) for b, kind, p, k in grow if kind == 1]
        at_rows = [b for b, _, _ in inserts]
        part = np.insert(self.part, at_rows, [p for _, p, _ in inserts]).astype(np.int32)
        sizes = np.insert(sizes, at_rows, [n for _, _, n in inserts]).astype(np.int64)
        first = self.first + np.searchsorted(np.array(at_rows, np.int64), self.first, "right")
        new_parts: list[int] = []
        new_sizes: list[int] = []
        new_first: list[int] = []
        rows = len(part)
        for term in new_terms:
            for p, (d, f) in tail[term].items():
                docs.append(np.frombuffer(d, dtype=np.int32))
                tfs.append(np.frombuffer(f, dtype=np.float32))
                new_parts.append(p)
                new_sizes.append(len(d))
            new_first.append(rows + len(new_parts))
        out = Sealed()
        out.terms = self.terms + new_terms
        out.term_id = dict(self.term_id)
        out.term_id.update((t, len(self.terms) + i) for i, t in enumerate(new_terms))
        out.first = np.concatenate([first, np.array(new_first, np.int64)]).astype(np.int64)
        out.part = np.concatenate([part, np.array(new_parts, np.int32)]).astype(np.int32)
        out.end = np.cumsum(np.concatenate([sizes, np.array(new_sizes, np.int64)]), dtype=np.int64)
        spill = spill or Spill()
        out.docs = spill.concat(docs, np.int32)
        out.tfs = spill.concat(tfs, np.float32)
        return out

    @classmethod
    def of(cls, b: SealedBuffers, spill: Spill | None = None) -> Sealed:
        out = cls()
        out.terms = list(b.terms)
        out.term_id = {t: i for i, t in enumerate(out.terms)}
        if spill is not None and spill.mapped:
            # copied: a view would pin the whole buffer it was read from (a mapped file)
            out.first = np.frombuffer(b.first, dtype=np.int64).copy()
            out.part = np.frombuffer(b.part, dtype=np.int32).copy()
            out.end = np.frombuffer(b.end, dtype=np.int64).copy()
            out.docs = spill.copy(b.docs, np.int32)
            out.tfs = spill.copy(b.tfs, np.float32)
            return out
        # views on the decoded bytes (read-only, never written): no copy
        out.first = np.frombuffer(b.first, dtype=np.int64)
        out.part = np.frombuffer(b.part, dtype=np.int32)
        out.end = np.frombuffer(b.end, dtype=np.int64)
        out.docs = np.frombuffer(b.docs, dtype=np.int32)
        out.tfs = np.frombuffer(b.tfs, dtype=np.float32)
        return out
