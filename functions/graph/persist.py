"""Writing extracted entities straight into the graph, as upstream's `persistGraphDelta`
does for `graph/extract`: a node per (type, name) in a project (its id hashes them, so the
same entity extracted again merges into its node), a `co_occurs` edge per pair of a
record's first entities (its key is (src, dst, type), so the same pair merges into its
edge), degrees, adjacency and type counts kept as the feed keeps them.

These writes do not come from MEM_EVENTS: like a graphify import they are outside the feed's
sequence (`seq` is left as it was, so the feed still folds every later event), and a
`graph/reset` drops them. The caller holds the graph lease, so the feed and compaction do not
run meanwhile.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field

import msgspec

from engine import Bucket
from functions.graph.adjacency import Adjacency, AdjEdge, adj_key, merge, seen_from_an_end
from functions.graph.extract import Entity
from functions.graph.keys import (
    CO_OCCURS,
    STATS,
    edge_id,
    edge_key,
    node_id,
    node_key,
    parse_edge_key,
)
from functions.kernel.records import GraphEdge, GraphNode, GraphStats
from functions.kernel.scrub import scrub

PAIR_ENTITIES = 6
"""As the feed: a record's first six entities are linked pairwise."""


@dataclass
class _Node:
    kind: str
    name: str
    project: str
    sources: list[str] = field(default_factory=list)
    first: str = ""
    last: str = ""


@dataclass
class _Edge:
    project: str
    sources: list[str] = field(default_factory=list)
    at: str = ""


@dataclass
class Extracted:
    """The nodes and edges of a batch of records, merged by id and key."""

    nodes: dict[str, _Node] = field(default_factory=dict)
    edges: dict[str, _Edge] = field(default_factory=dict)

    def add(
        self, source: str, project: str, at: str, ents: list[Entity], *, pair: bool = True
    ) -> None:
        """A record's entities as nodes; with `pair`, its first ones linked `co_occurs`."""
        ids: list[str] = []
        for kind, name in ents:
            nid = node_id(project, kind, name)
            nd = self.nodes.setdefault(nid, _Node(kind, name, project))
            _note(nd.sources, source)
            nd.first = min(nd.first, at) if nd.first else at
            nd.last = max(nd.last, at)
            ids.append(nid)
        if pair:
            for a, b in itertools.combinations(ids[:PAIR_ENTITIES], 2):
                self._edge(edge_key(a, b, CO_OCCURS), source, project, at)

    def relate(self, source: str, project: str, at: str, a: Entity, b: Entity, kind: str) -> None:
        """A typed relation (a model's: `fixes`, `uses` ...) from entity `a` to `b`."""
        self.add(source, project, at, [a, b], pair=False)
        self._edge(edge_key(node_id(project, *a), node_id(project, *b), kind), source, project, at)

    def _edge(self, key: str, source: str, project: str, at: str) -> None:
        ed = self.edges.setdefault(key, _Edge(project, at=at))
        _note(ed.sources, source)
        ed.at = max(ed.at, at)


def _note(sources: list[str], source: str) -> None:
    if source and source not in sources:
        sources.append(source)


def _merge_sources(have: list[str], new: list[str], cap: int) -> tuple[list[str], int]:
    """Most recent first, capped; and how many were not there yet."""
    fresh = [s for s in new if s not in have]
    return (fresh[::-1] + have)[:cap], len(fresh)


async def persist(state: Bucket, batch: Extracted, cap: int = 32) -> None:
    """Merge `batch` into the graph bucket. Edges are read first (which are new, which
    reopen), then nodes are written with their degrees, then the adjacency of both ends,
    then the edges, then the counts: the order the feed keeps (a live edge's ends exist)."""
    created: set[str] = set()
    new_edges: Counter[str] = Counter()
    reopened = 0
    degree: Counter[str] = Counter()
    edges: dict[str, GraphEdge] = {}
    born: set[str] = set()
    for key, ed in batch.edges.items():
        src, dst, kind = parse_edge_key(key)
        cur: GraphEdge | None = await state.get(key, GraphEdge)
        if cur is None:
            e = GraphEdge(id=edge_id(key), kind=kind, src=src, dst=dst, project=ed.project,
                          valid_from=ed.at)  # fmt: skip
            new_edges[kind] += 1
            born.add(key)
            degree.update((src, dst))
        else:
            e = msgspec.structs.replace(cur, source_ids=list(cur.source_ids))
            if e.valid_to is not None:  # a closed relation extracted again reopens
                e.valid_to, e.valid_from = None, ed.at
                reopened += 1
                degree.update((src, dst))
        e.source_ids, fresh = _merge_sources(e.source_ids, ed.sources, cap)
        e.weight += max(fresh, 1 if key in born else 0)
        edges[key] = e

    for nid, nd in batch.nodes.items():

        def node(cur: GraphNode | None, nid: str = nid, nd: _Node = nd) -> GraphNode:
            if cur is None:
                n = GraphNode(id=nid, kind=nd.kind, name=scrub(nd.name), project=nd.project,
                              first_seen=nd.first, last_seen=nd.last)  # fmt: skip
                created.add(nid)
            else:
                created.discard(nid)  # a retry of the compare-and-set found it
                n = msgspec.structs.replace(cur, source_ids=list(cur.source_ids))
                n.first_seen = min(n.first_seen, nd.first) if n.first_seen else nd.first
                n.last_seen = max(n.last_seen, nd.last)
            n.source_ids, fresh = _merge_sources(n.source_ids, nd.sources, cap)
            n.weight += max(fresh, 1 if cur is None else 0)
            n.degree += degree.get(nid, 0)
            return n

        await state.update(node_key(nid), node, type=GraphNode)
    new_nodes = Counter(batch.nodes[nid].kind for nid in created)

    ups: dict[str, list[AdjEdge]] = {}
    for key, e in edges.items():
        entry = seen_from_an_end(key, e)
        ups.setdefault(e.src, []).append(entry)
        ups.setdefault(e.dst, []).append(entry)
    for nid, entries in ups.items():

        def adjacency(cur: Adjacency | None, entries: list[AdjEdge] = entries) -> Adjacency:
            done = cur.seq if cur else 0
            # A new edge counts once in the list's total (its "birth" is after the list).
            return merge(cur, [(a, done + 1 if a.key in born else 0) for a in entries], done)

        await state.update(adj_key(nid), adjacency, type=Adjacency)
    for key, e in edges.items():
        await state.put(key, e)

    def stats(cur: GraphStats | None) -> GraphStats:
        s = cur or GraphStats()
        for kind, n in new_nodes.items():
            s.nodes_by_type[kind] = s.nodes_by_type.get(kind, 0) + n
        for kind, n in new_edges.items():
            s.edges_by_type[kind] = s.edges_by_type.get(kind, 0) + n
        s.expired_edges = max(0, s.expired_edges - reopened)
        return s

    await state.update(STATS, stats, type=GraphStats)
