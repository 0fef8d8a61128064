"""Folding a batch of MEM_EVENTS into the knowledge graph.

Each batch becomes a delta (per node and edge: the events that touch it, with their stream
sequence), then every touched record is read once, merged and written once with
compare-and-set. Every record remembers the last sequence folded into it (`seq`), and only
the parts of a delta with a later sequence are applied, so a batch replayed after a crash,
even cut at different boundaries, changes nothing twice. Degree and type counts are derived
the same way, per event; compaction recounts them exactly anyway.

- An observation or a memory adds its typed entities as nodes and links its first
  `PAIR_ENTITIES` entities pairwise (`co_occurs`).
- A memory superseding another closes (`validTo` = the new version's time) the edges of the
  old version it does not restate, and links its new entities to the ones it dropped
  (`supersedes`, new -> old).
- A later mention reopens a closed edge (`validFrom` moves to that mention).
- RecordsRemoved is noted (`rm.<seq>`) for compaction, which drops the ids from provenance.
- A record its write path held is not folded until an owner releases it (functions/quarantine
  /feeds.py).
Summaries are not folded: they restate their session's observations.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import defaultdict
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

import msgspec

from engine import Bucket, Entry
from functions.graph.adjacency import (
    ADJ_VERSION,
    Adjacency,
    AdjEdge,
    adj_key,
    merge,
    read_many,
    seen_from_an_end,
)
from functions.graph.extract import Entity, memory_entities, observation_entities
from functions.graph.keys import (
    CO_OCCURS,
    STATS,
    SUPERSEDES,
    MemoryIndex,
    Removed,
    edge_id,
    edge_key,
    node_id,
    node_key,
    parse_edge_key,
)
from functions.kernel.records import (
    GraphEdge,
    GraphNode,
    GraphStats,
    MemEvent,
    MemoryAdded,
    ObservationAdded,
    RecordsRemoved,
)
from functions.kernel.scrub import scrub
from functions.quarantine.feeds import feedable

T = TypeVar("T")
PAIR_ENTITIES = 6
"""Entities of one record linked pairwise: at most 15 edges per record."""
SUPERSEDE_PAIRS = 4
"""New and dropped entities linked by `supersedes` per side."""
INDEX_CAP = 64
"""Nodes and edges remembered per memory (for supersession)."""
CONCURRENCY = 256
"""KV reads and writes in flight per step: a batch is bound by round trips, not CPU."""

# One operation on a record, in stream order: (seq, at, source id); source "" = close.
Op = tuple[int, str, str]


@dataclass
class NodeDelta:
    kind: str
    name: str
    project: str
    ops: list[Op] = field(default_factory=list)
    degree: list[tuple[int, int]] = field(default_factory=list)
    """(seq, +1/-1) as edges touching the node open and close."""


@dataclass
class EdgeDelta:
    project: str
    ops: list[Op] = field(default_factory=list)


@dataclass
class Delta:
    nodes: dict[str, NodeDelta] = field(default_factory=dict)
    edges: dict[str, EdgeDelta] = field(default_factory=dict)
    memories: dict[str, MemoryIndex] = field(default_factory=dict)
    removed: dict[int, list[str]] = field(default_factory=dict)


async def _gather_chunked(aws: Iterable[Awaitable[T]]) -> list[T]:
    out: list[T] = []
    pending = list(aws)
    for i in range(0, len(pending), CONCURRENCY):
        out.extend(await asyncio.gather(*pending[i : i + CONCURRENCY]))
    return out


def _add_source(sources: list[str], source: str, cap: int) -> bool:
    """Most recent first, capped; False when it was already there (not a new mention)."""
    if source in sources:
        return False
    sources.insert(0, source)
    del sources[cap:]
    return True


class GraphFeed:
    name = "graph"

    def __init__(self, state: Bucket, cap: int = 32) -> None:
        self.state = state
        self.cap = cap

    # ---- building the delta ----------------------------------------------------------
    def _record(
        self, d: Delta, seq: int, at: str, source: str, project: str, ents: list[Entity]
    ) -> tuple[list[str], list[str]]:
        ids: list[str] = []
        for kind, name in ents:
            nid = node_id(project, kind, name)
            nd = d.nodes.get(nid)
            if nd is None:
                nd = d.nodes[nid] = NodeDelta(kind, name, project)
            nd.ops.append((seq, at, source))
            ids.append(nid)
        keys: list[str] = []
        for a, b in itertools.combinations(ids[:PAIR_ENTITIES], 2):
            keys.append(self._link(d, a, b, CO_OCCURS, project, (seq, at, source)))
        return ids, keys

    def _link(self, d: Delta, a: str, b: str, kind: str, project: str, op: Op) -> str:
        key = edge_key(a, b, kind)
        ed = d.edges.get(key)
        if ed is None:
            ed = d.edges[key] = EdgeDelta(project)
        ed.ops.append(op)
        return key

    async def _memory_index(self, d: Delta, mid: str) -> MemoryIndex | None:
        got = d.memories.get(mid)
        if got is not None:
            return got
        return await self.state.get(f"m.{mid}", MemoryIndex)

    async def delta(self, batch: list[tuple[int, MemEvent]]) -> Delta:
        d = Delta()
        for seq, ev in feedable(batch):
            if isinstance(ev, ObservationAdded):
                o = ev.observation
                if o.revision:
                    continue  # rewritten by the compression model: its first version counted
                self._record(d, seq, o.timestamp, o.id, o.project, observation_entities(o))
            elif isinstance(ev, MemoryAdded):
                m = ev.memory
                at = m.updated_at or m.created_at
                ids, keys = self._record(d, seq, at, m.id, m.project, memory_entities(m))
                d.memories[m.id] = MemoryIndex(nodes=ids[:INDEX_CAP], edges=keys[:INDEX_CAP])
                if m.supersedes:
                    old = await self._memory_index(d, m.supersedes)
                    if old is not None:
                        self._supersede(d, seq, at, m.id, m.project, ids, keys, old)
            elif isinstance(ev, RecordsRemoved) and ev.ids:
                d.removed[seq] = list(ev.ids)
        return d

    def _supersede(
        self,
        d: Delta,
        seq: int,
        at: str,
        mid: str,
        project: str,
        ids: list[str],
        keys: list[str],
        old: MemoryIndex,
    ) -> None:
        kept = set(keys)
        for key in old.edges:
            if key not in kept:
                ed = d.edges.get(key)
                if ed is None:
                    ed = d.edges[key] = EdgeDelta(project)
                ed.ops.append((seq, at, ""))  # close
        new_only = [n for n in ids if n not in old.nodes][:SUPERSEDE_PAIRS]
        dropped = [n for n in old.nodes if n not in ids][:SUPERSEDE_PAIRS]
        for a in new_only:
            for b in dropped:
                self._link(d, a, b, SUPERSEDES, project, (seq, at, mid))

    # ---- folding it in ------------------------------------------------------------------
    async def apply(self, batch: list[tuple[int, MemEvent]]) -> dict[str, int]:
        if not batch:
            return {"nodes": 0, "edges": 0}
        hi = batch[-1][0]
        d = await self.delta(batch)
        st = self.state
        edge_keys = list(d.edges)
        edge_cur: list[Entry[GraphEdge] | None] = await st.entries(edge_keys, GraphEdge)
        stats_entry: Entry[GraphStats] | None = await st.entry(STATS, GraphStats)
        # A new graph has its adjacency index from the first event; an older one gets it
        # from its next compaction (see `adjacency` in GraphStats).
        stats = stats_entry.value if stats_entry else GraphStats(adjacency=ADJ_VERSION)
        stat_ops: list[tuple[int, str, str, int]] = []  # (seq, "node"|"edge"|"expired", kind, +-)
        edge_writes: list[tuple[str, GraphEdge, int]] = []
        for key, cur, ed in zip(edge_keys, edge_cur, d.edges.values(), strict=True):
            out = self._fold_edge(key, cur, ed, d, stat_ops, hi)
            if out is not None:
                edge_writes.append((key, out, cur.revision if cur else 0))
        node_ids = list(d.nodes)
        node_cur: list[Entry[GraphNode] | None] = await st.entries(
            [node_key(n) for n in node_ids], GraphNode
        )
        node_writes: list[tuple[str, GraphNode, int]] = []
        for nid, ncur, nd in zip(node_ids, node_cur, d.nodes.values(), strict=True):
            node = self._fold_node(nid, ncur, nd, stat_ops, hi)
            if node is not None:
                node_writes.append((node_key(nid), node, ncur.revision if ncur else 0))
        self._fold_stats(stats, stat_ops, hi)
        adj_writes = await self._adjacency(edge_writes, d, edge_cur, edge_keys, hi)
        # Every record is guarded by its own seq. Adjacency goes before the edges: a crash
        # between them replays an edge's birth into a record that already counted it (and
        # skips it); the other way round the edge would exist and its birth never reach the
        # index. Stats go last only so a reader sees them lag rather than lead.
        await _gather_chunked(st.compare_and_set(k, v, rev) for k, v, rev in adj_writes)
        await _gather_chunked(st.compare_and_set(k, v, rev) for k, v, rev in node_writes)
        await _gather_chunked(st.compare_and_set(k, v, rev) for k, v, rev in edge_writes)
        await _gather_chunked(st.put(f"m.{mid}", ix) for mid, ix in d.memories.items())
        await _gather_chunked(st.put(f"rm.{s}", Removed(ids=ids)) for s, ids in d.removed.items())
        if stats_entry is None:
            await st.put(STATS, stats)
        else:
            await st.compare_and_set(STATS, stats, stats_entry.revision)
        return {"nodes": len(node_writes), "edges": len(edge_writes)}

    async def _adjacency(
        self,
        edge_writes: list[tuple[str, GraphEdge, int]],
        d: Delta,
        edge_cur: list[Entry[GraphEdge] | None],
        edge_keys: list[str],
        hi: int,
    ) -> list[tuple[str, Adjacency, int]]:
        """The `a.<id>` records of both ends of every edge this batch writes, with the edge's
        new state upserted (and its birth sequence when it is new)."""
        existed = {k for k, c in zip(edge_keys, edge_cur, strict=True) if c is not None}
        ups: dict[str, list[tuple[AdjEdge, int]]] = defaultdict(list)
        for key, e, _ in edge_writes:
            born = 0 if key in existed else min(s for s, _, src in d.edges[key].ops if src)
            entry = seen_from_an_end(key, e)
            ups[e.src].append((entry, born))
            ups[e.dst].append((entry, born))
        ids = list(ups)
        out: list[tuple[str, Adjacency, int]] = []
        for nid, cur in zip(ids, await read_many(self.state, ids), strict=True):
            new = merge(cur.value if cur else None, ups[nid], hi)
            if cur and new.edges == cur.value.edges and new.total == cur.value.total:
                continue  # a replay: nothing to write
            out.append((adj_key(nid), new, cur.revision if cur else 0))
        return out

    def _fold_edge(
        self,
        key: str,
        cur: Entry[GraphEdge] | None,
        ed: EdgeDelta,
        d: Delta,
        stat_ops: list[tuple[int, str, str, int]],
        hi: int,
    ) -> GraphEdge | None:
        src, dst, kind = parse_edge_key(key)
        done = cur.value.seq if cur else 0
        ops = sorted(op for op in ed.ops if op[0] > done)
        if not ops:
            return None
        if cur is None:
            adds = [op for op in ops if op[2]]
            if not adds:
                return None  # closing an edge that was never stored
            e = GraphEdge(
                id=edge_id(key), kind=kind, src=src, dst=dst, project=ed.project,
                valid_from=adds[0][1],
            )  # fmt: skip
            live = False
            stat_ops.append((adds[0][0], "edge", kind, 1))
            born = True
        else:
            e = msgspec.structs.replace(cur.value, source_ids=list(cur.value.source_ids))
            live = e.valid_to is None
            born = False
        for seq, at, source in ops:
            if source:
                if born or not live:
                    if not born:
                        e.valid_from = at  # a closed relation mentioned again reopens
                        stat_ops.append((seq, "expired", kind, -1))
                    e.valid_to = None
                    live, born = True, False
                    self._degree(d, src, dst, seq, 1)
                if _add_source(e.source_ids, source, self.cap):
                    e.weight += 1
            elif live:
                e.valid_to = at
                live = False
                self._degree(d, src, dst, seq, -1)
                stat_ops.append((seq, "expired", kind, 1))
        e.seq = hi
        return e

    def _degree(self, d: Delta, src: str, dst: str, seq: int, delta: int) -> None:
        for nid in (src, dst):
            nd = d.nodes.get(nid)
            if nd is None:
                nd = d.nodes[nid] = NodeDelta("", "", "")  # degree only: the node exists
            nd.degree.append((seq, delta))

    def _fold_node(
        self,
        nid: str,
        cur: Entry[GraphNode] | None,
        nd: NodeDelta,
        stat_ops: list[tuple[int, str, str, int]],
        hi: int,
    ) -> GraphNode | None:
        done = cur.value.seq if cur else 0
        ops = sorted(op for op in nd.ops if op[0] > done)
        degree = sum(x for s, x in nd.degree if s > done)
        if not ops and not degree:
            return None
        if cur is None:
            if not ops:
                return None
            n = GraphNode(
                id=nid, kind=nd.kind, name=scrub(nd.name), project=nd.project,
                first_seen=ops[0][1], last_seen=ops[0][1],
            )  # fmt: skip
            stat_ops.append((ops[0][0], "node", nd.kind, 1))
        else:
            n = msgspec.structs.replace(cur.value, source_ids=list(cur.value.source_ids))
        for _, at, source in ops:
            if _add_source(n.source_ids, source, self.cap):
                n.weight += 1
            n.first_seen = min(n.first_seen, at) if n.first_seen else at
            n.last_seen = max(n.last_seen, at)
        n.degree = max(0, n.degree + degree)
        n.seq = hi
        return n

    def _fold_stats(self, stats: GraphStats, ops: list[tuple[int, str, str, int]], hi: int) -> None:
        for seq, what, kind, delta in ops:
            if seq <= stats.seq:
                continue
            if what == "node":
                stats.nodes_by_type[kind] = stats.nodes_by_type.get(kind, 0) + delta
            elif what == "edge":
                stats.edges_by_type[kind] = stats.edges_by_type.get(kind, 0) + delta
            else:
                stats.expired_edges = max(0, stats.expired_edges + delta)
        stats.seq = max(stats.seq, hi)
