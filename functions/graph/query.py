"""`mem::graph-query` and `mem::graph-stats` over the `mem_graph` bucket.

No query reads every edge. Node listings stream the `n.>` keys (there are far fewer nodes
than edges) keeping only the best `offset + limit` (a heap); the edges among a page, and a
walk, go through the nodes' adjacency records (`a.<id>`, functions.graph.adjacency): one
key per node, then the page's edges read by key. So a walk costs a read per node it
expands plus the page, never a pass over the edges. A walk stops at `WALK_CAP` nodes or
`EDGE_CAP` edges, and says `truncated` then, or when it went through a node whose
adjacency list is a cut (more edges than `ADJ_CAP`: only its strongest are followed).
"""

from __future__ import annotations

import asyncio
import heapq
from typing import Any

from nats.js.client import JetStreamContext

from engine import FunctionError, State
from functions.graph.adjacency import READS, AdjEdge, read_many
from functions.graph.keys import STATS, node_key, parse_edge_key
from functions.graph.wire import MAX_DEPTH, MAX_LIMIT, GraphQueryIn, edge_wire, node_wire
from functions.lifecycle.scan import scan_kv
from functions.records import GRAPH_BUCKET, GraphEdge, GraphNode, GraphStats

WALK_CAP = 5000
"""Nodes a walk keeps."""
UNIVERSE_CAP = 1000
"""Matched nodes among which edges are counted for `totalEdges`; past it, the page's."""
EDGE_CAP = 20_000


async def _read(state: State, keys: list[str], kind: type[Any]) -> list[Any]:
    """Values of these keys (None where absent), `READS` in flight."""
    out: list[Any] = []
    for i in range(0, len(keys), READS):
        out.extend(await asyncio.gather(*(state.get(k, kind) for k in keys[i : i + READS])))
    return out


def _ends(key: str) -> tuple[str, str]:
    src, dst, _ = parse_edge_key(key)
    return src, dst


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
        """Edges with both ends in `page` (read), and how many have both ends in `scope`
        (counted from the adjacency records alone)."""
        ids = sorted(scope)
        keys: set[str] = set()
        for nid, got in zip(ids, await read_many(self.state, ids), strict=True):
            for a in got.value.edges if got else ():
                if (req.include_expired or a.live) and a.other(nid) in scope:
                    keys.add(a.key)
        inside = sorted(k for k in keys if all(end in page for end in _ends(k)))
        return await self._edges(inside, req), len(keys)

    async def _edges(self, keys: list[str], req: GraphQueryIn) -> list[GraphEdge]:
        got: list[GraphEdge | None] = await _read(self.state, keys, GraphEdge)
        return [e for e in got if e is not None and self._live(e, req)]

    async def _walk(self, req: GraphQueryIn, max_depth: int, limit: int) -> dict[str, Any]:
        start: GraphNode | None = await self.state.get(node_key(req.start_node_id), GraphNode)
        if start is None:
            raise FunctionError(
                "NOT_FOUND", f"no graph node {req.start_node_id}", field="startNodeId"
            )
        order = [start.id]
        seen = {start.id}
        edges: dict[str, AdjEdge] = {}
        frontier = [start.id]
        stopped = cut = False
        for _ in range(max_depth):
            nxt: list[str] = []
            for nid, got in zip(frontier, await read_many(self.state, frontier), strict=True):
                if got is None or len(edges) >= EDGE_CAP:
                    continue
                adj = got.value
                if adj.total > len(adj.edges) and (req.include_expired or adj.edges[-1].live):
                    cut = True  # a cut list: edges past the strongest were not followed
                for a in adj.edges:
                    if a.key in edges or not (req.include_expired or a.live):
                        continue
                    if len(edges) >= EDGE_CAP:
                        stopped = True
                        break
                    edges[a.key] = a
                    end = a.other(nid)
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
            got_all: list[GraphNode | None] = await _read(
                self.state, [node_key(n) for n in order], GraphNode
            )
            nodes = [n for n in got_all if n is not None and self._keep(n, req)]
            kept = {n.id for n in nodes}
            page = nodes[req.offset : req.offset + limit]
        else:
            # A live edge's ends exist (nodes are written before their edges, and compaction
            # drops only nodes without live edges): read the page's nodes only.
            kept = set(order)
            got_page: list[GraphNode | None] = await _read(
                self.state, [node_key(n) for n in order[req.offset : req.offset + limit]], GraphNode
            )
            page = [n for n in got_page if n is not None]
        page_ids = {n.id for n in page}
        inside = [k for k in edges if all(end in kept for end in _ends(k))]
        shown = [k for k in inside if all(end in page_ids for end in _ends(k))]
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
