"""Marking graph records stale, as upstream's cascade-update does: every node and edge whose
provenance (`sourceObservationIds`) overlaps the superseded memory's sources, or that the
memory itself made (its `m.<id>` index), gets `stale = true`. Queries and stats skip stale
records; a stale edge is not live in the adjacency index, so walks do not follow it.

The scan reads the nodes and edges once each (upstream lists them all too); only the records
that change are written, each with compare-and-set.
"""

from __future__ import annotations

from collections import Counter
from typing import TypeVar

import msgspec

from engine import Bucket
from functions.graph.adjacency import Adjacency, AdjEdge, adj_key, merge, seen_from_an_end
from functions.graph.keys import STATS, MemoryIndex, node_key
from functions.kernel.records import GraphEdge, GraphNode, GraphStats

R = TypeVar("R", GraphNode, GraphEdge)


class Marked(msgspec.Struct, kw_only=True):
    nodes: int = 0
    """Nodes flagged (already stale ones included, as upstream counts)."""
    edges: int = 0


async def _overlapping(
    state: Bucket, prefix: str, kind: type[R], made: set[str], sources: set[str]
) -> list[tuple[str, R]]:
    """The records under `prefix` the memory made, or whose provenance overlaps `sources`
    (read whole first: the marking writes to the bucket being scanned)."""
    return [
        (key, rec)
        async for key, rec in state.scan(prefix, kind)
        if key in made or not sources.isdisjoint(rec.source_ids)
    ]


async def _set_stale(state: Bucket, key: str, kind: type[R]) -> bool:
    """Mark the record at `key`; True when this call changed it."""
    changed = False

    def mark(cur: R | None) -> R | None:
        nonlocal changed
        changed = cur is not None and not cur.stale
        return msgspec.structs.replace(cur, stale=True) if changed and cur else None

    await state.update(key, mark, type=kind)
    return changed


async def mark_stale(state: Bucket, sources: set[str], made: MemoryIndex | None) -> Marked:
    out = Marked()
    made_nodes = {node_key(n) for n in made.nodes} if made else set()
    made_edges = set(made.edges) if made else set()
    nodes: Counter[str] = Counter()
    edges: Counter[str] = Counter()
    for key, n in await _overlapping(state, "n.>", GraphNode, made_nodes, sources):
        out.nodes += 1
        if await _set_stale(state, key, GraphNode):
            nodes[n.kind] += 1
    for key, e in await _overlapping(state, "e.>", GraphEdge, made_edges, sources):
        out.edges += 1
        if not await _set_stale(state, key, GraphEdge) or e.valid_to is not None:
            continue
        edges[e.kind] += 1
        entry = seen_from_an_end(key, msgspec.structs.replace(e, stale=True))
        for end in (e.src, e.dst):

            def unlive(cur: Adjacency | None, entry: AdjEdge = entry) -> Adjacency | None:
                return merge(cur, [(entry, 0)], cur.seq) if cur else None

            await state.update(adj_key(end), unlive, type=Adjacency)

    def count(cur: GraphStats | None) -> GraphStats | None:
        if cur is None or not (nodes or edges):
            return None
        for kind, k in nodes.items():
            cur.stale_nodes[kind] = cur.stale_nodes.get(kind, 0) + k
        for kind, k in edges.items():
            cur.stale_edges[kind] = cur.stale_edges.get(kind, 0) + k
        return cur

    await state.update(STATS, count, type=GraphStats)
    return out
