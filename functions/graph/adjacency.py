"""Per-node adjacency (`a.<nodeId>`): the node's strongest edges, so a walk and the edges
among a page of nodes are read by key instead of by scanning every edge.

A record holds at most `ADJ_CAP` edge keys, ranked live first, then by weight, then by the
last feed batch that changed the edge (`seq`), so a hub never makes a value grow without
bound. `total` counts every stored edge touching the node, kept or not: `total > len(edges)`
says the list is a cut (a walk through that node reports `truncated`).

Exactness: every change to an edge passes through the feed or compaction, which upsert its
entry at both ends; an evicted edge comes back as soon as it outranks the weakest kept one
(ranks only rise with new mentions). Closing an edge lowers its rank, which may leave a
stronger evicted live edge out until its next mention; compaction refills lists it shrank
from the edges themselves.

Replays: an entry is replaced only by the same edge at a later or equal `seq` (the edge's
own guard) or in the same state, and `total` counts a new edge only when its birth sequence is past the record's
`seq`. The feed writes adjacency before edges, so a crash between them replays the edge's
birth into a record that already counted it, and skips it.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from engine import Bucket, Entry
from functions.graph.keys import parse_edge_key
from functions.kernel.records import GraphEdge

ADJ_CAP = 64
"""Edges kept per node."""
ADJ_VERSION = 1
"""`GraphStats.adjacency` once every node's record is built (new graphs: from the start)."""


class AdjEdge(msgspec.Struct, array_like=True, frozen=True):
    """One edge as seen from one end (a compact array: a record holds up to 64)."""

    key: str
    """`e.<src>.<dst>.<kind>`: both ends and the kind, and where to read the edge."""
    weight: int
    live: bool
    seq: int
    """The edge's own `seq`: the last feed batch that changed it."""

    def other(self, nid: str) -> str:
        src, dst, _ = parse_edge_key(self.key)
        return dst if src == nid else src


class Adjacency(msgspec.Struct, kw_only=True):
    """`a.<nodeId>`"""

    edges: list[AdjEdge] = msgspec.field(default_factory=list)
    total: int = 0
    seq: int = 0


def seen_from_an_end(key: str, e: GraphEdge) -> AdjEdge:
    """The entry of edge `e` (at `key`): live while it holds and is not stale."""
    return AdjEdge(key, e.weight, e.valid_to is None and not e.stale, e.seq)


def adj_key(nid: str) -> str:
    return f"a.{nid}"


def rank(a: AdjEdge) -> tuple[bool, int, int, str]:
    return (a.live, a.weight, a.seq, a.key)


def merge(
    cur: Adjacency | None,
    upserts: Iterable[tuple[AdjEdge, int]],
    hi: int,
    *,
    removed: Iterable[str] = (),
    cap: int = ADJ_CAP,
) -> Adjacency:
    """`cur` with these edge states upserted (each with its birth sequence, 0 when the edge
    existed before) and these edge keys removed (deleted edges), ranked and cut at `cap`."""
    done = cur.seq if cur else 0
    total = cur.total if cur else 0
    kept = {a.key: a for a in cur.edges} if cur else {}
    for a, born in upserts:
        old = kept.get(a.key)
        # A replay with other boundaries may bring an older state of the edge than a
        # crashed run left here: keep the later one (the replay's next batch brings the
        # edge there too), unless they are the same state (then the edge's own seq wins).
        if old is None or a.seq >= old.seq or (a.weight, a.live) == (old.weight, old.live):
            kept[a.key] = a
        if born > done:
            total += 1
    for key in removed:
        kept.pop(key, None)
        total -= 1
    ordered = sorted(kept.values(), key=rank, reverse=True)[:cap]
    return Adjacency(edges=ordered, total=max(total, len(ordered)), seq=max(done, hi))


async def read_many(state: Bucket, ids: list[str]) -> list[Entry[Adjacency] | None]:
    return await state.entries([adj_key(n) for n in ids], Adjacency)
