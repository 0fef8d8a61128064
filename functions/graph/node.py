"""`GET graph/node` (upstream 0.9.30, src/functions/graph-node.ts): one node, its strongest
live relations, and where it came from (the observations, sessions, projects and
memories that named it).

Relations are read from the node's adjacency record (functions/graph/adjacency.py): its
strongest `ADJ_CAP` edges; when the node has more, `relationsWarning` says so. Provenance
leaves out records the write path held (their words stay out of what agents read)."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, Literal

import msgspec

from engine import Bucket, Entry
from functions.graph.adjacency import Adjacency, read_many
from functions.graph.keys import node_key, parse_edge_key
from functions.graph.wire import node_wire
from functions.kernel.records import GraphEdge, GraphNode, Memory, Observation, Session
from functions.kernel.store import MemoryStore

MAX_RELATIONS = 200
MAX_OBSERVATIONS = 40
MAX_MEMORIES = 25


class GraphNodeIn(msgspec.Struct, rename="camel", kw_only=True):
    id: Annotated[str, msgspec.Meta(min_length=1, max_length=512)]


class Neighbor(msgspec.Struct, kw_only=True):
    id: str
    name: str
    type: str


class Relation(msgspec.Struct, rename="camel", kw_only=True):
    edge_id: str
    type: str
    direction: Literal["out", "in"]
    weight: float
    observation_count: int
    neighbor: Neighbor | None


class ObservationRef(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    id: str
    session_id: str
    title: str = ""
    type: str = ""
    timestamp: str = ""


class SessionRef(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    id: str
    project: str = ""
    agent_id: str = ""
    status: str = ""
    started_at: str = ""


class MemoryRef(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    id: str
    type: str
    via: Literal["observation", "name"]
    title: str = ""
    project: str = ""


class Provenance(msgspec.Struct, rename="camel", kw_only=True):
    observation_ids: list[str]
    observations: list[ObservationRef]
    sessions: list[SessionRef]
    projects: list[str]
    memories: list[MemoryRef]
    structural: dict[str, Any] | None = None
    """Upstream's code-structure source of a node; nodes here come from records only."""


class GraphNodeOut(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    node: dict[str, Any]
    degree: int
    relations: list[Relation]
    relations_total: int
    provenance: Provenance
    relations_warning: str = ""


def _held(record: Observation | Memory) -> bool:
    return record.trust is not None and record.trust.held


async def _relations(state: Bucket, node: GraphNode) -> tuple[list[Relation], int, str]:
    (entry,) = await read_many(state, [node.id])
    adj: Adjacency = entry.value if entry is not None else Adjacency()
    live = sorted((a for a in adj.edges if a.live), key=lambda a: (-a.weight, a.key))
    live = live[:MAX_RELATIONS]
    edges: list[Entry[GraphEdge] | None] = await state.entries([a.key for a in live], GraphEdge)
    ends = [a.other(node.id) for a in live]
    others: list[Entry[GraphNode] | None] = await state.entries(
        [node_key(n) for n in ends], GraphNode
    )
    out: list[Relation] = []
    for a, got, other in zip(live, edges, others, strict=True):
        e = got.value if got is not None else None
        if e is None or e.stale or e.valid_to is not None:
            continue
        src, _dst, kind = parse_edge_key(a.key)
        n = other.value if other is not None else None
        out.append(
            Relation(
                edge_id=e.id,
                type=kind,
                direction="out" if src == node.id else "in",
                weight=float(e.weight),
                observation_count=len(e.source_ids),
                neighbor=Neighbor(id=n.id, name=n.name, type=n.kind) if n is not None else None,
            )
        )
    warning = (
        f"the node has {adj.total} relations; the {len(adj.edges)} strongest are kept for it"
        if adj.total > len(adj.edges)
        else ""
    )
    return out, max(adj.total, len(out)), warning


async def _provenance(store: MemoryStore, node: GraphNode) -> Provenance:
    obs_ids = [i for i in node.source_ids if not i.startswith("mem_")]
    mem_ids = [i for i in node.source_ids if i.startswith("mem_")]
    observations, memories = await asyncio.gather(
        store.get_observations(obs_ids[:MAX_OBSERVATIONS]),
        asyncio.gather(*(store.get(store.memories, i, Memory) for i in mem_ids)),
    )
    shown = [o for i in obs_ids[:MAX_OBSERVATIONS] if (o := observations.get(i)) and not _held(o)]
    session_ids = list(dict.fromkeys(o.session_id for o in shown if o.session_id))
    sessions = [
        s
        for s in await asyncio.gather(*(store.get(store.sessions, i, Session) for i in session_ids))
        if s is not None
    ]
    current = [m for m in memories if m is not None and not m.superseded_by and not _held(m)]
    projects = {o.project for o in shown} | {s.project for s in sessions} | {node.project}
    return Provenance(
        observation_ids=obs_ids,
        observations=[
            ObservationRef(
                id=o.id, session_id=o.session_id, title=o.title, type=o.type, timestamp=o.timestamp
            )
            for o in shown
        ],
        sessions=[
            SessionRef(
                id=s.id,
                project=s.project,
                agent_id=s.agent_id,
                status=s.status,
                started_at=s.started_at,
            )
            for s in sessions
        ],
        projects=sorted(projects - {""}),
        memories=[
            MemoryRef(id=m.id, type=m.type, via="observation", title=m.title, project=m.project)
            for m in current[:MAX_MEMORIES]
        ],
    )


async def describe(state: Bucket, store: MemoryStore, node_id: str) -> GraphNodeOut | None:
    node: GraphNode | None = await state.get(node_key(node_id), GraphNode)
    if node is None:
        return None
    (relations, total, warning), provenance = await asyncio.gather(
        _relations(state, node), _provenance(store, node)
    )
    shown = node_wire(node)
    if node.stale:
        shown["stale"] = True
    return GraphNodeOut(
        node=shown,
        degree=node.degree,
        relations=relations,
        relations_total=total,
        relations_warning=warning,
        provenance=provenance,
    )
