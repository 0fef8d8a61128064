"""Compaction's share of the adjacency index (`a.<id>`).

Compaction changes edges (closes those that lost all provenance, deletes those closed past
the retention) and deletes nodes; it hands the changes here, which upserts and removes the
entries at both ends. A list that lost entries while more edges touch its node than it
holds, or that keeps closed edges while more edges exist, is rebuilt from the edges
themselves (one pass over `e.>` for all such nodes), so a hub's list does not stay short,
or hold closed edges, after its strongest edges closed or went. A graph older than the index
gets every list built the same way (`rebuild`), in rounds of `ROUND` nodes.
"""

from __future__ import annotations

import heapq
from collections import defaultdict

from engine import Bucket
from functions.graph.adjacency import (
    ADJ_CAP,
    Adjacency,
    AdjEdge,
    adj_key,
    merge,
    rank,
    read_many,
    seen_from_an_end,
)
from functions.kernel.records import GraphEdge

ROUND = 20_000
"""Nodes rebuilt per pass over the edges: what a pass holds is `ROUND` x `ADJ_CAP` entries."""


class Changes:
    """Edge changes seen by one compaction, per node (only nodes whose edges changed)."""

    def __init__(self) -> None:
        self.upserts: dict[str, list[tuple[AdjEdge, int]]] = defaultdict(list)
        self.removed: dict[str, list[str]] = defaultdict(list)

    def changed(self, key: str, e: GraphEdge) -> None:
        entry = seen_from_an_end(key, e)
        for nid in (e.src, e.dst):
            self.upserts[nid].append((entry, 0))

    def deleted(self, key: str, e: GraphEdge) -> None:
        for nid in (e.src, e.dst):
            self.removed[nid].append(key)

    def node_deleted(self, nid: str) -> None:
        self.upserts.pop(nid, None)
        self.removed.pop(nid, None)


async def drop(state: Bucket, nid: str) -> None:
    """A deleted node's list goes with it (purged: no tombstone, as compaction does)."""
    await state.purge(adj_key(nid))


async def apply(state: Bucket, ch: Changes) -> int:
    """Write the changed lists; refill those left short. Returns lists written."""
    ids = sorted(set(ch.upserts) | set(ch.removed))
    short: list[str] = []
    written = 0
    for nid, cur in zip(ids, await read_many(state, ids), strict=True):
        if cur is None and not ch.upserts.get(nid):
            continue  # nothing indexed, nothing to add
        new = merge(
            cur.value if cur else None,
            ch.upserts.get(nid, []),
            cur.value.seq if cur else 0,
            removed=ch.removed.get(nid, []),
        )
        cut = new.total > len(new.edges)
        if len(new.edges) < min(new.total, ADJ_CAP) or (cut and not new.edges[-1].live):
            # Lost kept edges while others wait outside the list, or kept closed edges that
            # a live one outside may outrank now: rebuild from the edges.
            short.append(nid)
        await state.put(adj_key(nid), new)
        written += 1
    for i in range(0, len(short), ROUND):
        await rebuild(state, set(short[i : i + ROUND]))
    return written


async def rebuild(state: Bucket, ids: set[str]) -> None:
    """The lists of these nodes, exactly, from one pass over the edges: the strongest
    `ADJ_CAP` of each, and the count of all. The record's `seq` is kept (the feed's guard)."""
    best: dict[str, list[tuple[tuple[bool, int, int, str], AdjEdge]]] = defaultdict(list)
    total: dict[str, int] = defaultdict(int)
    async for key, e in state.scan("e.>", GraphEdge):
        entry = seen_from_an_end(key, e)
        for nid in (e.src, e.dst):
            if nid not in ids:
                continue
            total[nid] += 1
            heap = best[nid]
            item = (rank(entry), entry)
            if len(heap) < ADJ_CAP:
                heapq.heappush(heap, item)
            elif item[0] > heap[0][0]:
                heapq.heapreplace(heap, item)
    order = sorted(ids)
    for nid, cur in zip(order, await read_many(state, order), strict=True):
        edges = [a for _, a in sorted(best.get(nid, []), key=lambda x: x[0], reverse=True)]
        if not edges and cur is None:
            continue
        seq = cur.value.seq if cur else 0
        await state.put(adj_key(nid), Adjacency(edges=edges, total=total.get(nid, 0), seq=seq))
