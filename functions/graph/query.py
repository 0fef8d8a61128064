"""`mem::graph-query` and `mem::graph-stats` over the `mem_graph` bucket.

No query loads the graph: node listings stream the `n.>` keys keeping only the best
`offset + limit` (a heap), and a node's edges are read through subject filters on its key
(`e.<id>.>`, `e.*.<id>.>`). A walk stops at `WALK_CAP` nodes or `EDGE_CAP` edges and says
`truncated`.
"""

from __future__ import annotations

import asyncio
import heapq
from collections.abc import AsyncIterator
from typing import Any

from nats.js.client import JetStreamContext

from engine import FunctionError, State
from functions.graph.keys import STATS, node_key
from functions.graph.wire import MAX_DEPTH, MAX_LIMIT, GraphQueryIn, edge_wire, node_wire
from functions.lifecycle.scan import scan_kv
from functions.records import GRAPH_BUCKET, GraphEdge, GraphNode, GraphStats

WALK_CAP = 5000
"""Nodes a walk keeps."""
UNIVERSE_CAP = 1000
"""Matched nodes among which edges are counted for `totalEdges`; past it, the page's."""
EDGE_CAP = 20_000
FILTERS = 64
"""Node ids per filtered consumer (NATS takes a list of disjoint subject filters)."""


async def edges_of(
    js: JetStreamContext, ids: list[str], *, incoming: bool = True
) -> AsyncIterator[tuple[str, GraphEdge]]:
    """Edges leaving (and, with `incoming`, entering) these nodes. The two shapes go to
    separate consumers: NATS refuses overlapping filters in one (`e.A.>` and `e.*.A.>`).
    For many nodes one pass over all edges is cheaper than many filtered consumers (the
    server walks the stream for each), so past `FILTERS` nodes it reads `e.>` and filters
    here."""
    if len(ids) > FILTERS:
        wanted = set(ids)
        async for key, e in scan_kv(js, GRAPH_BUCKET, GraphEdge, keys="e.>"):
            if e.src in wanted or (incoming and e.dst in wanted):
                yield key, e
        return
    shapes = ["e.{}.>", "e.*.{}.>"] if incoming else ["e.{}.>"]
    for shape in shapes:
        for i in range(0, len(ids), FILTERS):
            keys = [shape.format(n) for n in ids[i : i + FILTERS]]
            async for key, e in scan_kv(js, GRAPH_BUCKET, GraphEdge, keys=keys):
                yield key, e


def _rank(n: GraphNode) -> tuple[int, int, str]:
    return (n.degree, n.weight, n.id)


class GraphQuery:
    def __init__(self, state: State, js: JetStreamContext) -> None:
        self.state = state
        self.js = js

    async def stats(self) -> dict[str, Any]:
        got: GraphStats | None = await self.state.get(STATS, GraphStats)
        s = got or GraphStats()
        return {
            "totalNodes": sum(s.nodes_by_type.values()),
            "totalEdges": sum(s.edges_by_type.values()),
            "nodesByType": dict(sorted(s.nodes_by_type.items())),
            "edgesByType": dict(sorted(s.edges_by_type.items())),
            "expiredEdges": s.expired_edges,
            "compactedAt": s.compacted_at,
        }

    async def query(self, req: GraphQueryIn) -> dict[str, Any]:
        limit = min(req.limit, MAX_LIMIT)
        if req.start_node_id:
            return await self._walk(req, min(req.max_depth, MAX_DEPTH), limit)
        return await self._list(req, limit)

    def _keep(self, n: GraphNode, req: GraphQueryIn) -> bool:
        if req.project and n.project != req.project:
            return False
        return req.node_type is None or n.kind == req.node_type

    def _live(self, e: GraphEdge, req: GraphQueryIn) -> bool:
        return req.include_expired or e.valid_to is None

    async def _list(self, req: GraphQueryIn, limit: int) -> dict[str, Any]:
        """Nodes whose name contains `query`, or without one the best connected nodes."""
        q = req.query.lower()
        want = req.offset + limit
        best: list[tuple[tuple[int, int, str], GraphNode]] = []
        universe: set[str] | None = set()
        total = 0
        async for _, n in scan_kv(self.js, GRAPH_BUCKET, GraphNode, keys="n.>"):
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
        """Edges with both ends in `page` (held), and how many have both ends in `scope`
        (counted). Every such edge leaves one of its ends, so outgoing filters suffice."""
        out: list[GraphEdge] = []
        count = 0
        async for _, e in edges_of(self.js, sorted(scope), incoming=False):
            if e.dst not in scope or not self._live(e, req):
                continue
            count += 1
            if e.src in page and e.dst in page:
                out.append(e)
        return out, count

    async def _walk(self, req: GraphQueryIn, max_depth: int, limit: int) -> dict[str, Any]:
        start: GraphNode | None = await self.state.get(node_key(req.start_node_id), GraphNode)
        if start is None:
            raise FunctionError(
                "NOT_FOUND", f"no graph node {req.start_node_id}", field="startNodeId"
            )
        order = [start.id]
        seen = {start.id}
        edges: dict[str, GraphEdge] = {}
        frontier = [start.id]
        truncated = False
        for _ in range(max_depth):
            nxt: list[str] = []
            async for key, e in edges_of(self.js, frontier):
                if key in edges or not self._live(e, req):
                    continue
                if len(edges) >= EDGE_CAP:
                    truncated = True
                    break
                edges[key] = e
                for end in (e.src, e.dst):
                    if end not in seen and len(seen) < WALK_CAP:
                        seen.add(end)
                        order.append(end)
                        nxt.append(end)
                    elif end not in seen:
                        truncated = True
            frontier = nxt
            if not frontier or truncated:
                break
        nodes: list[GraphNode] = []
        for i in range(0, len(order), 64):
            got: list[GraphNode | None] = await asyncio.gather(
                *(self.state.get(node_key(n), GraphNode) for n in order[i : i + 64])
            )
            nodes.extend(n for n in got if n is not None and self._keep(n, req))
        kept = {n.id for n in nodes}
        page = nodes[req.offset : req.offset + limit]
        page_ids = {n.id for n in page}
        inside = [e for e in edges.values() if e.src in kept and e.dst in kept]
        return {
            "nodes": [node_wire(n) for n in page],
            "edges": [edge_wire(e) for e in inside if e.src in page_ids and e.dst in page_ids],
            "depth": max_depth,
            "totalNodes": len(nodes),
            "totalEdges": len(inside),
            "truncated": truncated or len(nodes) > len(page),
            "limit": limit,
            "offset": req.offset,
        }
