"""Requests and response shapes of the graph functions (upstream agentmemory's wire:
camelCase, `type`, `sourceNodeId`/`targetNodeId`, `sourceObservationIds`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from functions.kernel.records import GraphEdge, GraphNode, GraphStats

NodeType = Literal[
    "file", "symbol", "package", "error", "command", "concept",
    # upstream's extraction types: function and library are our symbol and package;
    # decision, pattern and person are kinds only a model's extraction makes
    "function", "library", "decision", "pattern", "person",
]  # fmt: skip
ALIASES: dict[str, NodeType] = {"function": "symbol", "library": "package"}
MAX_DEPTH = 5
MAX_LIMIT = 5000


class GraphQueryIn(msgspec.Struct, rename="camel", kw_only=True):
    query: Annotated[str, msgspec.Meta(max_length=512)] = ""
    """Nodes whose name contains this (case-insensitive)."""
    start_node_id: Annotated[str, msgspec.Meta(max_length=64)] = ""
    """Walk breadth-first from this node, up to `maxDepth` hops."""
    node_type: NodeType | None = None
    max_depth: Annotated[int, msgspec.Meta(ge=1)] = 3
    """Clamped to 5, as upstream does."""
    limit: Annotated[int, msgspec.Meta(ge=1)] = 500
    """Clamped to 5000, as upstream does."""
    offset: Annotated[int, msgspec.Meta(ge=0)] = 0
    project: str = ""
    include_expired: bool = False
    """Also edges whose validTo is set (closed relations not yet compacted away)."""

    def __post_init__(self) -> None:
        if self.node_type in ALIASES:
            self.node_type = ALIASES[self.node_type]


class GraphStatsIn(msgspec.Struct, rename="camel", kw_only=True):
    pass


def node_wire(n: GraphNode) -> dict[str, Any]:
    return {
        "id": n.id,
        "type": n.kind,
        "name": n.name,
        "project": n.project,
        "properties": {},
        "weight": n.weight,
        "degree": n.degree,
        "sourceObservationIds": n.source_ids,
        "createdAt": n.first_seen,
        "updatedAt": n.last_seen,
    }


def edge_wire(e: GraphEdge) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": e.id,
        "type": e.kind,
        "sourceNodeId": e.src,
        "targetNodeId": e.dst,
        "project": e.project,
        "weight": e.weight,
        "validFrom": e.valid_from,
        "validTo": e.valid_to,
        "sourceObservationIds": e.source_ids,
        "createdAt": e.valid_from,
    }
    return out


def _less(counts: dict[str, int], stale: dict[str, int]) -> dict[str, int]:
    return {k: max(0, v - stale.get(k, 0)) for k, v in sorted(counts.items())}


def stats_wire(s: GraphStats) -> dict[str, Any]:
    """Graph counts as `GET /agentmemory/graph/stats` answers them: stale records (marked by
    cascade-update) left out, as upstream's stats skip them."""
    nodes = _less(s.nodes_by_type, s.stale_nodes)
    edges = _less(s.edges_by_type, s.stale_edges)
    return {
        "totalNodes": sum(nodes.values()),
        "totalEdges": sum(edges.values()),
        "nodesByType": nodes,
        "edgesByType": edges,
        "expiredEdges": s.expired_edges,
        "compactedAt": s.compacted_at,
    }
