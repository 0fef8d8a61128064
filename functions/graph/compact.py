"""Graph compaction (daily): keeps `mem_graph` bounded and its counters exact.

1. Forgotten ids (`rm.*`, noted by the feed from RecordsRemoved) leave every provenance
   list; an edge left with no provenance closes (`validTo` = now).
2. Edges closed longer ago than the retention are deleted.
3. Degrees are recounted from the live edges; a node with no live edge whose last mention
   is older than the retention (or that lost all its provenance) is deleted.
4. Provenance lists are trimmed to the cap; type counts are recounted into `stats`.
5. Memory indexes (`m.*`) of forgotten memories and the `rm.*` notes are dropped.
6. The adjacency lists (`a.*`) of the ends of every closed or deleted edge are updated, a
   deleted node's list is dropped, and lists left short are refilled from the edges
   (functions.graph.reindex); a graph older than the index gets every list built.

It streams the bucket twice (edges, then nodes); what it holds is the forgotten ids of one
round (at most `REMOVED_ROUND`; more wait for the next run) and one counter per node with a
live edge.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Annotated, Literal

import msgspec

from engine import Bucket
from functions.graph import reindex
from functions.graph.adjacency import ADJ_VERSION
from functions.graph.keys import STATS, MemoryIndex, Removed
from functions.graph.mirror import PURGED, PurgeNote
from functions.kernel import clock
from functions.kernel.clock import Clocked
from functions.kernel.records import GraphEdge, GraphNode, GraphStats

REMOVED_ROUND = 200_000


async def _drop(state: Bucket, key: str) -> None:
    """Remove a key with its history and no tombstone: a compacted graph takes no space for
    what it dropped. The query mirror learns of purges from the `PURGED` note instead."""
    await state.purge(key)


class CompactOut(msgspec.Struct, rename="camel", kw_only=True):
    edges_closed: int = 0
    edges_deleted: int = 0
    nodes_deleted: int = 0
    nodes_updated: int = 0
    forgotten_ids: int = 0
    adjacency_written: int = 0


async def compact(state: Bucket, now: datetime, *, retention_days: float, cap: int) -> CompactOut:
    out = CompactOut()
    removed: set[str] = set()
    notes: list[str] = []
    async for key, r in state.scan("rm.>", Removed):
        if len(removed) >= REMOVED_ROUND:
            break
        removed.update(r.ids)
        notes.append(key)
    out.forgotten_ids = len(removed)
    at = clock.iso(now)
    live: Counter[str] = Counter()
    stats = GraphStats(compacted_at=at)
    prior: GraphStats | None = await state.get(STATS, GraphStats)
    stats.seq = prior.seq if prior else 0
    changes = reindex.Changes()

    async for key, e in state.scan("e.>", GraphEdge):
        sources = [s for s in e.source_ids if s not in removed][:cap]
        changed = sources != e.source_ids
        if changed:
            e.source_ids = sources
        if e.valid_to is None and not sources:
            e.valid_to, changed = at, True  # nothing evidences the relation any more
            out.edges_closed += 1
        if e.valid_to is not None and clock.days_between(e.valid_to, now) > retention_days:
            await _drop(state, key)
            changes.deleted(key, e)
            out.edges_deleted += 1
            continue
        if changed:
            await state.put(key, e)
            changes.changed(key, e)
        stats.edges_by_type[e.kind] = stats.edges_by_type.get(e.kind, 0) + 1
        if e.valid_to is None and e.stale:
            stats.stale_edges[e.kind] = stats.stale_edges.get(e.kind, 0) + 1
        if e.valid_to is None:
            live[e.src] += 1
            live[e.dst] += 1
        else:
            stats.expired_edges += 1

    async for key, n in state.scan("n.>", GraphNode):
        sources = [s for s in n.source_ids if s not in removed][:cap]
        degree = live.get(n.id, 0)
        idle = clock.days_between(n.last_seen, now) > retention_days
        if degree == 0 and (idle or not sources):
            await _drop(state, key)
            await reindex.drop(state, n.id)
            changes.node_deleted(n.id)
            out.nodes_deleted += 1
            continue
        if sources != n.source_ids or degree != n.degree:
            n.source_ids, n.degree = sources, degree
            await state.put(key, n)
            out.nodes_updated += 1
        stats.nodes_by_type[n.kind] = stats.nodes_by_type.get(n.kind, 0) + 1
        if n.stale:
            stats.stale_nodes[n.kind] = stats.stale_nodes.get(n.kind, 0) + 1

    if removed:
        async for key, _ in state.scan("m.>", MemoryIndex):
            if key[2:] in removed:
                await _drop(state, key)
    for key in notes:
        await _drop(state, key)
    if prior is not None and prior.adjacency < ADJ_VERSION:
        # A graph fed before the index existed: build every list (nodes alive now).
        ids = [k[2:] async for k, _ in state.scan("n.>", GraphNode)]
        for i in range(0, len(ids), reindex.ROUND):
            await reindex.rebuild(state, set(ids[i : i + reindex.ROUND]))
        out.adjacency_written = len(ids)
    else:
        out.adjacency_written = await reindex.apply(state, changes)
    stats.adjacency = ADJ_VERSION
    await state.put(STATS, stats)
    if out.nodes_deleted or out.edges_deleted:
        # Purges reach no watcher: this note makes the query mirror drop what went
        # (functions.graph.mirror). Last, so every purge precedes it.
        await state.put(PURGED, PurgeNote(at=at, keys=out.nodes_deleted + out.edges_deleted))
    return out


class GraphCompactIn(Clocked, kw_only=True):
    """Upstream's `POST graph/compact` body (0.9.30). Its scope, offset and limit run a
    slice of a long compaction; this one streams the bucket and finishes in one run, so
    they are accepted (and checked) but every run compacts the whole graph."""

    scope: Literal["nodes", "edges", "history", "snapshot"] | None = None
    offset: Annotated[int, msgspec.Meta(ge=0)] | None = None
    limit: Annotated[int, msgspec.Meta(ge=1)] | None = None


class GraphCompactOut(CompactOut, rename="camel", kw_only=True):
    """A compaction run and what the feed folded first."""

    folded: dict[str, int]
    success: bool = True
