"""What upstream's viewer snapshot (0.9.30, src/triggers/viewer-streams.ts) says about the
service beside the activity: ports, provider, flags, graph, consolidation, function
metrics, indexes and the status report, each asked of the function that knows it (a part
whose worker does not answer is null or empty, never an error)."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec

from engine import Client, FunctionError
from engine import tracing as _tracing

ASK_TIMEOUT = 3.0


class GraphCounts(msgspec.Struct, rename="camel", kw_only=True):
    total_nodes: int
    total_edges: int
    nodes_by_type: dict[str, int]
    edges_by_type: dict[str, int]


class GraphView(msgspec.Struct, rename="camel", kw_only=True):
    stats: GraphCounts
    updated_at: str | None
    reset_at: str | None = None


class ConsolidationView(msgspec.Struct, rename="camel", kw_only=True):
    last_run: dict[str, Any] | None
    status: dict[str, Any] | None


class Indexes(msgspec.Struct, rename="camel", kw_only=True):
    bm25_documents: int
    vector_documents: int | None
    pending_vector_backfill: int
    persistence: dict[str, Any] | None = None


class Overview(msgspec.Struct, rename="camel", kw_only=True):
    provider: str
    embedding_provider: str
    flags: list[dict[str, Any]]
    graph: GraphView | None
    consolidation: ConsolidationView
    function_metrics: list[dict[str, Any]]
    indexes: Indexes | None


async def ask(client: Client, function_id: str) -> dict[str, Any] | None:
    try:
        with _tracing.untraced():
            got = await client.call(function_id, {}, timeout=ASK_TIMEOUT)
    except FunctionError:
        return None
    return got if isinstance(got, dict) else None


def _graph(doc: dict[str, Any] | None) -> GraphView | None:
    if doc is None:
        return None
    return GraphView(
        stats=GraphCounts(
            total_nodes=int(doc.get("totalNodes") or 0),
            total_edges=int(doc.get("totalEdges") or 0),
            nodes_by_type=dict(doc.get("nodesByType") or {}),
            edges_by_type=dict(doc.get("edgesByType") or {}),
        ),
        updated_at=str(doc.get("compactedAt") or "") or None,
    )


def _indexes(report: dict[str, Any] | None) -> Indexes | None:
    index = (report or {}).get("index")
    if not isinstance(index, dict):
        return None
    return Indexes(
        bm25_documents=int(index.get("bm25Documents") or 0),
        vector_documents=index.get("vectorDocuments"),
        pending_vector_backfill=int(index.get("pendingVectorBackfill") or 0),
    )


async def overview(client: Client, report: dict[str, Any] | None) -> Overview:
    """`report`: the status report the snapshot already asked for (mem::status)."""
    flags, graph, consolidation = await asyncio.gather(
        ask(client, "mem::config-flags"),
        ask(client, "mem::graph-stats"),
        ask(client, "mem::consolidation-status"),
    )
    return Overview(
        provider=str((flags or {}).get("provider") or "noop"),
        embedding_provider=str((flags or {}).get("embeddingProvider") or "none"),
        flags=[f for f in (flags or {}).get("flags") or [] if isinstance(f, dict)],
        graph=_graph(graph),
        consolidation=ConsolidationView(
            last_run=(consolidation or {}).get("lastRun"), status=consolidation
        ),
        function_metrics=[f for f in (report or {}).get("functions") or [] if isinstance(f, dict)],
        indexes=_indexes(report),
    )
