"""`EntityTally`: how many live records of one group (a project's records of one agent and
kind) name each entity-graph node, and the first of them, kept on every add and remove so
a project's most named files and concepts are read without a pass over its records.

The order is `Counter.most_common`'s over the records in slot order: the most named first,
a tie going to the node named first (the lower slot; within a slot, the lower node id, the
order a record's nodes are stored in). A record leaving that was a node's first leaves its
first unknown (-1) until a reader needs it (`ContextIndex` finds it in the graph)."""

from __future__ import annotations

from array import array
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

I32 = npt.NDArray[np.int32]
UNKNOWN = -1
Resolve = Callable[["EntityTally", "npt.NDArray[np.int64]"], list[int]]
"""The first live slot naming each of these nodes among the tally's records."""


class EntityTally:
    __slots__ = ("counts", "first", "nodes", "of")

    def __init__(self) -> None:
        self.of: dict[int, int] = {}
        """Node id -> its row in the arrays."""
        self.nodes = array("i")
        self.counts = array("i")
        self.first = array("i")
        """The first live slot naming the node, UNKNOWN once that one left."""

    def add(self, slot: int, nodes: tuple[int, ...]) -> None:
        of, counts, first = self.of, self.counts, self.first
        for v in nodes:
            i = of.get(v)
            if i is None:
                of[v] = len(self.nodes)
                self.nodes.append(v)
                counts.append(1)
                first.append(slot)
                continue
            if counts[i] == 0:
                first[i] = slot
            counts[i] += 1

    def remove(self, slot: int, nodes: tuple[int, ...]) -> None:
        of, counts, first = self.of, self.counts, self.first
        for v in nodes:
            i = of.get(v)
            if i is None or counts[i] == 0:
                continue
            counts[i] -= 1
            if counts[i] == 0 or first[i] == slot:
                first[i] = UNKNOWN

    def arrays(self) -> tuple[I32, I32, I32]:
        """(nodes, counts, first) as views (valid until the next add)."""
        return (
            np.frombuffer(self.nodes, dtype=np.int32),
            np.frombuffer(self.counts, dtype=np.int32),
            np.frombuffer(self.first, dtype=np.int32),
        )

    def set_first(self, node: int, slot: int) -> None:
        self.first[self.of[node]] = slot

    def count(self, node: int) -> int:
        i = self.of.get(node)
        return self.counts[i] if i is not None else 0

    def dump(self) -> list[bytes]:
        return [self.nodes.tobytes(), self.counts.tobytes(), self.first.tobytes()]

    @classmethod
    def load(cls, raw: list[Any]) -> EntityTally:
        t = cls()
        t.nodes.frombytes(raw[0])
        t.counts.frombytes(raw[1])
        t.first.frombytes(raw[2])
        t.of = {v: i for i, v in enumerate(t.nodes)}
        return t


def most_named(tallies: list[EntityTally], n: int, resolve: Resolve) -> list[int]:
    """The `n` nodes named by most live records over the tallies together (the records of
    several groups), in `Counter.most_common` order. `resolve(tally, nodes)` gives the first
    live slot of each node whose first is unknown in that tally."""
    tallied = [t for t in tallies if len(t.nodes)]
    parts = [t.arrays() for t in tallied]
    if not parts:
        return []
    nodes: npt.NDArray[np.int64]
    counts: npt.NDArray[np.int64]
    if len(parts) == 1:
        nodes, counts = parts[0][0].astype(np.int64), parts[0][1].astype(np.int64)
    else:
        every = np.concatenate([p[0] for p in parts])
        nodes, inverse = np.unique(every, return_inverse=True)
        weights = np.concatenate([p[1] for p in parts])
        counts = np.bincount(inverse, weights=weights).astype(np.int64)
    live = counts > 0
    if int(live.sum()) > n:
        kth = np.partition(counts[live], -n)[-n]
        chosen = np.flatnonzero(counts >= kth)
    else:
        chosen = np.flatnonzero(live)
    picked = nodes[chosen]
    firsts = _firsts(tallied, picked, resolve)
    order = np.lexsort((picked, firsts, -counts[chosen]))
    return [int(v) for v in picked[order[:n]]]


def _firsts(
    tallies: list[EntityTally], picked: npt.NDArray[np.int64], resolve: Resolve
) -> npt.NDArray[np.int64]:
    """The first live slot naming each picked node, over the tallies (each tally's unknown
    firsts resolved and kept)."""
    out = np.full(len(picked), np.iinfo(np.int64).max, dtype=np.int64)
    for t in tallies:
        rows = np.array([t.of.get(int(v), -1) for v in picked], dtype=np.int64)
        has = rows >= 0
        _, counts, first = t.arrays()
        mine = np.zeros(len(picked), dtype=np.bool_)
        mine[has] = counts[rows[has]] > 0
        unknown = mine.copy()
        unknown[mine] = first[rows[mine]] == UNKNOWN
        if unknown.any():
            for v, slot in zip(picked[unknown].tolist(), resolve(t, picked[unknown]), strict=True):
                t.set_first(v, slot)
            _, counts, first = t.arrays()
        got = np.where(mine, first[np.where(has, rows, 0)], out)
        out = np.minimum(out, got)
    return out
