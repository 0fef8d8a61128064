"""The entity graph: files, symbols, concepts and error codes linked to the records naming
them. A query's entities are matched to nodes and expanded a bounded number of hops through
the records they share, so a question about `auth.py` also reaches records about the
symbols and errors that keep company with it."""

from __future__ import annotations

import math
import re
from array import array
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import chain
from operator import itemgetter

import numpy as np
import numpy.typing as npt

from functions.search.analysis import STOPWORDS, entities
from functions.search.mapped import Spill
from functions.search.postings import Sealed
from functions.search.ranking import ranked
from functions.search.tables import DocEntities

_WORDS = re.compile(r"[\w][\w./-]*[\w]", re.UNICODE)
Mask = npt.NDArray[np.bool_]
I32 = npt.NDArray[np.int32]
DENSE_FACTOR = 8
DENSE_MIN = 8192
"""Scores are summed densely over the scope when it has at most DENSE_MIN + DENSE_FACTOR x
(matched records) documents, else by sorting the matches."""


def _aliases(name: str) -> list[str]:
    out = [name]
    if "/" in name:
        base = name.rsplit("/", 1)[1]
        if base:
            out.append(base)
    return out


@dataclass
class EntityGraph:
    max_hops: int = 2
    fanout: int = 4
    """Neighbouring entities followed per hop (the strongest co-occurrences)."""
    hop_decay: float = 0.35
    sample: int = 64
    """Most recent records of a node whose other entities are followed to the next hop."""
    max_share: float = 0.1
    """Nodes on a larger share of the visible records are skipped: they discriminate nothing."""
    nodes: dict[str, int] = field(default_factory=dict)
    names: list[str] = field(default_factory=list)
    docs_of: dict[int, dict[int, array[int]]] = field(default_factory=dict)
    """The tail: node -> partition (project code) -> records naming it since the last
    seal."""
    sealed: Sealed = field(default_factory=Sealed)
    """The same before the last seal, by node name, in flat arrays (mapped when `spill`
    is): functions/search/postings.py, its weights left empty."""
    spill: Spill = field(default_factory=Spill)
    ents_of: DocEntities = field(default_factory=DocEntities)
    """Document -> its nodes (sorted), one flat array (functions/search/tables.py)."""

    def _node(self, name: str) -> int:
        nid = self.nodes.get(name)
        if nid is None:
            nid = self.nodes[name] = len(self.names)
            self.names.append(name)
        return nid

    def add(self, doc: int, names: Iterable[str], part: int = 0) -> None:
        ids: set[int] = set()
        for n in names:
            n = n.strip().lower()
            if len(n) < 3:
                continue
            for alias in _aliases(n):
                ids.add(self._node(alias))
        for nid in ids:
            by_part = self.docs_of.get(nid)
            if by_part is None:
                by_part = self.docs_of[nid] = {}
            arr = by_part.get(part)
            if arr is None:
                arr = by_part[part] = array("i")
            arr.append(doc)
        if ids:
            self.ents_of.put(doc, sorted(ids))

    def match(self, query: str) -> list[int]:
        """Nodes a query names: its code entities, and plain words that are concept nodes."""
        keys = entities(query)
        keys += [w.lower() for w in _WORDS.findall(query) if w.lower() not in STOPWORDS]
        found: list[int] = []
        for k in keys:
            for alias in _aliases(k):
                nid = self.nodes.get(alias)
                if nid is not None and nid not in found:
                    found.append(nid)
        return found

    def seal(self) -> None:
        """Fold the tail into the sealed arrays (what a query reads is unchanged)."""
        if not self.docs_of:
            return
        none = array("f")
        tail = {
            self.names[nid]: {p: (a, none) for p, a in by_part.items()}
            for nid, by_part in sorted(self.docs_of.items())
        }
        self.sealed = self.sealed.merged(tail, self.spill)
        self.docs_of = {}

    def _parts(self, nid: int, parts: tuple[int, ...] | None) -> list[I32]:
        """The node's records per partition (the given ones in their order, or all in the
        order they first had one), sealed before the tail's: one after another, the
        records in slot order within each partition."""
        by_part: dict[int, list[I32]] = {
            p: [d] for p, d, _ in self.sealed.lists(self.names[nid], parts)
        }
        for p, a in self.docs_of.get(nid, {}).items():
            if parts is None or p in parts:
                by_part.setdefault(p, []).append(np.frombuffer(a, dtype=np.int32))
        groups = by_part.values() if parts is None else [by_part[p] for p in parts if p in by_part]
        return [a for group in groups for a in group if len(a)]

    def visible(
        self, nid: int, mask: Mask, parts: tuple[int, ...] | None, cache: dict[int, I32] | None,
        whole: bool = False,
    ) -> I32:  # fmt: skip
        """A node's records inside the filter. A scope's mask never changes (a write makes a
        new scope, and new records take slots past its end), so `cache` may keep the answer
        for the scope's lifetime. `whole`: every record of the partitions is in the scope
        (`Scope.whole`), so they need no selection."""
        docs = cache.get(nid) if cache is not None else None
        if docs is None:
            arrays = self._parts(nid, parts)
            if not arrays:
                docs = np.zeros(0, np.int32)
            else:
                # a copy either way: a view would pin the array's buffer (it must grow)
                docs = np.concatenate(arrays)
                # records are appended in slot order: a partition's last is its largest
                if not whole or any(a[-1] >= len(mask) for a in arrays):
                    docs = docs[docs < len(mask)]
                    docs = docs[mask[docs]]
            if cache is not None:
                cache[nid] = docs
        return docs

    def _links(self, nid: int, docs: I32, links: dict[int, list[int]] | None) -> list[int]:
        """Entities on the node's most recent visible records, in order (repeats kept:
        they are counted); like `visible`, fixed for a scope's lifetime, so `links` may
        keep it."""
        found = links.get(nid) if links is not None else None
        if found is None:
            ents = self.ents_of
            sample = docs[-self.sample :].tolist()
            found = list(chain.from_iterable(ents.get(d, ()) for d in sample))
            if links is not None:
                links[nid] = found
        return found

    def search(
        self,
        query: str,
        mask: Mask,
        limit: int,
        parts: tuple[int, ...] | None = None,
        visible: int | None = None,
        cache: dict[int, I32] | None = None,
        numbering: tuple[I32, I32] | None = None,
        links: dict[int, list[int]] | None = None,
        whole: bool = False,
    ) -> list[int]:
        """`numbering`: the scope's (ids, positions), see `Scope.numbering`; `cache` and
        `links`: per-scope memories of `visible` and `_links`; `whole` as in `visible`."""
        seeds = self.match(query)
        if not seeds:
            return []
        n_docs = max(visible if visible is not None else int(mask.sum()), 1)
        parts_d: list[I32] = []
        gains: list[float] = []
        frontier = {nid: 1.0 for nid in seeds}
        visited = set(frontier)
        for hop in range(self.max_hops):
            linked: list[list[int]] = []
            for nid, strength in frontier.items():
                docs = self.visible(nid, mask, parts, cache, whole)
                if not len(docs) or len(docs) > self.max_share * n_docs:
                    continue  # an entity on most records ranks nothing
                # rare entities say more about a record than ubiquitous ones
                gain = strength * math.log(1.0 + n_docs / len(docs))
                parts_d.append(docs)
                gains.append(gain)
                if hop + 1 < self.max_hops:
                    linked.append(self._links(nid, docs, links))
            # counted in C, in first-seen order (most_common's tie-break); visited nodes are
            # dropped after, which leaves the order of the others unchanged
            neighbours = Counter(chain.from_iterable(linked))
            for nid in visited:
                neighbours.pop(nid, None)
            # most_common's order (count, then first seen) from one C sort, not a heap in Python
            strongest = sorted(neighbours.items(), key=itemgetter(1), reverse=True)
            frontier = {nid: self.hop_decay ** (hop + 1) for nid, _ in strongest[: self.fanout]}
            visited.update(frontier)
            if not frontier:
                break
        if not parts_d:
            return []
        docs_all = parts_d[0] if len(parts_d) == 1 else np.concatenate(parts_d)
        weights = np.repeat(np.array(gains), [len(d) for d in parts_d])
        if numbering is not None and len(numbering[0]) <= DENSE_FACTOR * len(docs_all) + DENSE_MIN:
            return _best_dense(docs_all, weights, limit, *numbering)
        return _best(docs_all, weights, limit)


def _best_dense(
    docs: I32, weights: npt.NDArray[np.float64], limit: int, ids: I32, pos: I32
) -> list[int]:
    """`_best` through a `bincount` over the scope's positions (a small scope: cheaper
    than sorting). Sums take the weights in the same order; every weight is > 0, so the
    nonzero positions, ascending, are the distinct documents `_best` finds."""
    sums = np.bincount(pos[docs], weights=weights, minlength=len(ids))
    nz = np.flatnonzero(sums > 0)  # a scan of a boolean is faster than of floats
    scores = sums[nz]
    out: list[int] = ids[nz[ranked(scores, nz, limit)]].tolist()
    return out


def _best(docs: I32, weights: npt.NDArray[np.float64], limit: int) -> list[int]:
    """Documents by summed weight (then id), the best `limit`. A stable sort groups each
    document's weights in their original order, so the sums equal a `bincount` over
    `np.unique`'s inverse bit for bit, without its overhead."""
    order = np.argsort(docs, kind="stable")
    docs, weights = docs[order], weights[order]
    first = np.ones(len(docs), np.bool_)
    np.not_equal(docs[1:], docs[:-1], out=first[1:])
    uniq = docs[first]
    scores = np.bincount(np.cumsum(first) - 1, weights=weights)
    out: list[int] = uniq[ranked(scores, uniq, limit)].tolist()
    return out
