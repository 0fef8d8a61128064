"""`mem::graph-query` and `mem::graph-stats` over the `mem_graph` bucket.

No query reads every edge. Node listings stream the `n.>` keys (there are far fewer nodes
than edges) keeping only the best `offset + limit` (a heap); the edges among a page, and a
walk, go through the nodes' adjacency records (`a.<id>`, functions.graph.adjacency): one
key per node, then the page's edges read by key. So a walk costs a read per node it
expands plus the page, never a pass over the edges. A walk stops at `WALK_CAP` nodes or
`EDGE_CAP` edges, and says `truncated` then, or when it went through a node whose
adjacency list is a cut (more edges than `ADJ_CAP`: only its strongest are followed).

Those reads go to the in-memory mirror of the bucket (functions.graph.mirror) once it has
applied every write made before the query; else, the same reads to KV.
"""

from __future__ import annotations

import heapq
from collections.abc import AsyncIterator, Iterable
from typing import Any

import msgspec

from engine import Bucket, Entry, FunctionError
from functions.graph.adjacency import Adjacency, read_many
from functions.graph.keys import STATS, node_key, parse_edge_key
from functions.graph.mirror import GraphMirror, mirror
from functions.graph.wire import (
    MAX_DEPTH,
    MAX_LIMIT,
    GraphQueryIn,
    edge_wire,
    node_wire,
    stats_wire,
)
from functions.kernel.records import GraphEdge, GraphNode, GraphStats
from functions.quarantine.feeds import supported_only_by

WALK_CAP = 5000
"""Nodes a walk keeps."""
UNIVERSE_CAP = 1000
"""Matched nodes among which edges are counted for `totalEdges`; past it, the page's."""
EDGE_CAP = 20_000

_edge = msgspec.json.Decoder(GraphEdge)


async def _read(state: Bucket, keys: list[str], kind: type[Any]) -> list[Any]:
    """Values of these keys (None where absent)."""
    got: list[Entry[Any] | None] = await state.entries(keys, kind)
    return [e.value if e is not None else None for e in got]


def _ends(key: str) -> tuple[str, str]:
    src, dst, _ = parse_edge_key(key)
    return src, dst


def _rank(n: GraphNode) -> tuple[int, int, str]:
    return (n.degree, n.weight, n.id)


class GraphQuery:
    def __init__(self, state: Bucket, held: set[str] | None = None) -> None:
        self.state = state
        self.held = held or set()
        """Records held by a decision after their write (functions/quarantine): a node or
        edge only they support is left out (records held at write were never folded)."""
        self.mirror: GraphMirror | None = None
        """Set for a query when the mirror caught up with every write before it."""

    async def _nodes(self, ids: Iterable[str]) -> list[GraphNode | None]:
        if self.mirror is not None:
            return [self.mirror.nodes.get(n) for n in ids]
        return await _read(self.state, [node_key(n) for n in ids], GraphNode)

    async def _adjacency(self, ids: list[str]) -> list[Adjacency | None]:
        if self.mirror is not None:
            return [self.mirror.adj.get(n) for n in ids]
        return [got.value if got else None for got in await read_many(self.state, ids)]

    async def _every_node(self) -> AsyncIterator[GraphNode]:
        if self.mirror is not None:
            # A copy: the watch may apply changes while the caller awaits.
            for n in list(self.mirror.nodes.values()):
                yield n
            return
        async for _, n in self.state.scan("n.>", GraphNode):
            yield n

    async def stats(self) -> dict[str, Any]:
        got: GraphStats | None
        if self.mirror is not None:
            got = self.mirror.stats
        else:
            got = await self.state.get(STATS, GraphStats)
        return stats_wire(got or GraphStats())

    async def query(self, req: GraphQueryIn) -> dict[str, Any]:
        limit = min(req.limit, MAX_LIMIT)
        m = await mirror(self.state)
        # Only a mirror that applied every write made before this query answers it (what
        # reading KV gave); otherwise the same query reads KV.
        self.mirror = m if await m.sync() else None
        if req.start_node_id:
            return await self._walk(req, min(req.max_depth, MAX_DEPTH), limit)
        return await self._list(req, limit)

    def _keep(self, n: GraphNode, req: GraphQueryIn) -> bool:
        if n.stale or (req.project and n.project != req.project):
            return False
        if supported_only_by(n.source_ids, self.held):
            return False
        return req.node_type is None or n.kind == req.node_type

    def _live(self, e: GraphEdge, req: GraphQueryIn) -> bool:
        if supported_only_by(e.source_ids, self.held):
            return False
        return not e.stale and (req.include_expired or e.valid_to is None)

    async def _list(self, req: GraphQueryIn, limit: int) -> dict[str, Any]:
        """Nodes whose name contains `query`, or without one the best connected nodes."""
        q = req.query.lower()
        want = req.offset + limit
        best: list[tuple[tuple[int, int, str], GraphNode]] = []
        universe: set[str] | None = set()
        total = 0
        async for n in self._every_node():
            if not self._keep(n, req) or (q and q not in n.name.lower()):
                continue
            total += 1
            if universe is not None:
                universe.add(n.id)
                if len(universe) > UNIVERSE_CAP:
                    universe = None  # too many to count edges among: page edges only
            item = (_rank(n), n)
            if len(best) < want:
                heapq.heappush(best, item)
            elif item[0] > best[0][0]:
                heapq.heapreplace(best, item)
        ordered = [n for _, n in sorted(best, key=lambda x: x[0], reverse=True)]
        page = ordered[req.offset : req.offset + limit]
        page_ids = {n.id for n in page}
        everything = not q and req.node_type is None and not req.project
        scope = universe if universe is not None and not everything else page_ids
        edges, total_edges = await self._edges_among(scope, page_ids, req)
        if everything:  # every node matched: the stored counts say how many edges there are
            s = await self.stats()
            total_edges = s["totalEdges"] - (0 if req.include_expired else s["expiredEdges"])
        return {
            "nodes": [node_wire(n) for n in page],
            "edges": [edge_wire(e) for e in edges],
            "depth": 0,
            "totalNodes": total,
            "totalEdges": total_edges,
            "truncated": total > len(page),
            "limit": limit,
            "offset": req.offset,
        }

    async def _edges_among(
        self, scope: set[str], page: set[str], req: GraphQueryIn
    ) -> tuple[list[GraphEdge], int]:
        """Edges with both ends in `page` (read), and how many have both ends in `scope`
        (counted from the adjacency records alone)."""
        ids = sorted(scope)
        keys: set[str] = set()
        for nid, got in zip(ids, await self._adjacency(ids), strict=True):
            for a in got.edges if got else ():
                if (req.include_expired or a.live) and a.other(nid) in scope:
                    keys.add(a.key)
        inside = sorted(k for k in keys if all(end in page for end in _ends(k)))
        return await self._edges(inside, req), len(keys)

    async def _edges(self, keys: list[str], req: GraphQueryIn) -> list[GraphEdge]:
        got: list[GraphEdge | None]
        if self.mirror is not None:
            held = self.mirror.edges
            got = [_edge.decode(held[k]) if k in held else None for k in keys]
        else:
            got = await _read(self.state, keys, GraphEdge)
        return [e for e in got if e is not None and self._live(e, req)]

    async def _walk(self, req: GraphQueryIn, max_depth: int, limit: int) -> dict[str, Any]:
        (start,) = await self._nodes([req.start_node_id])
        if start is None:
            raise FunctionError(
                "NOT_FOUND", f"no graph node {req.start_node_id}", field="startNodeId"
            )
        order = [start.id]
        seen = {start.id}
        edges: dict[str, tuple[str, str]] = {}
        """Each edge met, with its ends (parsed once: a walk meets thousands)."""
        frontier = [start.id]
        stopped = cut = False
        for _ in range(max_depth):
            nxt: list[str] = []
            for nid, adj in zip(frontier, await self._adjacency(frontier), strict=True):
                if adj is None or len(edges) >= EDGE_CAP:
                    continue
                if adj.total > len(adj.edges) and (req.include_expired or adj.edges[-1].live):
                    cut = True  # a cut list: edges past the strongest were not followed
                for a in adj.edges:
                    if a.key in edges or not (req.include_expired or a.live):
                        continue
                    if len(edges) >= EDGE_CAP:
                        stopped = True
                        break
                    src, dst = edges[a.key] = _ends(a.key)
                    end = dst if src == nid else src
                    if end not in seen and len(seen) < WALK_CAP:
                        seen.add(end)
                        order.append(end)
                        nxt.append(end)
                    elif end not in seen:
                        stopped = True
            frontier = nxt
            if not frontier or stopped:
                break
        if req.node_type is not None or req.project or req.include_expired:
            # Filtering needs every reached node (and a closed edge may outlive its end).
            got_all = await self._nodes(order)
            nodes = [n for n in got_all if n is not None and self._keep(n, req)]
            kept = {n.id for n in nodes}
            page = nodes[req.offset : req.offset + limit]
        else:
            # A live edge's ends exist (nodes are written before their edges, and compaction
            # drops only nodes without live edges): read the page's nodes only.
            kept = set(order)
            got_page = await self._nodes(order[req.offset : req.offset + limit])
            page = [n for n in got_page if n is not None and not n.stale
                    and not supported_only_by(n.source_ids, self.held)]  # fmt: skip
        page_ids = {n.id for n in page}
        inside = [k for k, (src, dst) in edges.items() if src in kept and dst in kept]
        shown = [k for k in inside if edges[k][0] in page_ids and edges[k][1] in page_ids]
        return {
            "nodes": [node_wire(n) for n in page],
            "edges": [edge_wire(e) for e in await self._edges(shown, req)],
            "depth": max_depth,
            "totalNodes": len(kept),
            "totalEdges": len(inside),
            "truncated": stopped or cut or len(kept) > len(page),
            "limit": limit,
            "offset": req.offset,
        }
