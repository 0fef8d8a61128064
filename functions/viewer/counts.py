"""Upstream's viewer counts (0.9.30, src/state/viewer-counts.ts): one number per kind of
record, as `GET counts` and the viewer snapshot give them. Actions and crystals are the
coordination layer's records, counted by the keys of their buckets (one key per record;
functions/coordination/records.py) since this family does not import that one."""

from __future__ import annotations

import asyncio

import msgspec

from engine import Client, FunctionError
from engine import tracing as _tracing
from functions.kernel.clock import now_iso
from functions.kernel.records import LESSONS_BUCKET, Lesson, Memory, Session
from functions.kernel.store import MemoryStore

ACTIONS_BUCKET = "mem_actions"
CRYSTALS_BUCKET = "mem_crystals"
GRAPH_TIMEOUT = 3.0


class ViewerCounts(msgspec.Struct, rename="camel", kw_only=True):
    sessions: int
    active_sessions: int
    observations: int
    """As the sessions count them."""
    memories: int
    """Every stored version."""
    latest_memories: int
    """Current versions only (the newest of each chain)."""
    lessons: int
    actions: int
    crystals: int
    semantic: int
    procedural: int
    graph_nodes: int
    graph_edges: int
    updated_at: str


class CountsOut(msgspec.Struct, kw_only=True):
    counts: ViewerCounts


async def _keys(client: Client, bucket: str) -> int:
    try:
        return len(await (await client.bucket(bucket)).keys())
    except Exception:  # not created yet: nothing of that kind was written
        return 0


async def _graph(client: Client) -> tuple[int, int]:
    try:
        with _tracing.untraced():
            doc = await client.call("mem::graph-stats", {}, timeout=GRAPH_TIMEOUT)
    except FunctionError:
        return 0, 0
    if not isinstance(doc, dict):
        return 0, 0
    return int(doc.get("totalNodes") or 0), int(doc.get("totalEdges") or 0)


async def _lessons(client: Client) -> int:
    state = await client.bucket(LESSONS_BUCKET)
    return sum([1 async for _, les in state.scan(">", Lesson) if not les.deleted])


async def viewer_counts(store: MemoryStore, agent_id: str = "") -> ViewerCounts:
    st = store
    sessions, memories, lessons, actions, crystals, (nodes, edges) = await asyncio.gather(
        st.load_all(st.sessions, Session),
        st.load_all(st.memories, Memory),
        _lessons(st.client),
        _keys(st.client, ACTIONS_BUCKET),
        _keys(st.client, CRYSTALS_BUCKET),
        _graph(st.client),
    )
    sessions = [s for s in sessions if st.visible(s.agent_id, agent_id)]
    memories = [m for m in memories if st.visible(m.agent_id, agent_id)]
    current = [m for m in memories if not m.superseded_by]
    return ViewerCounts(
        sessions=len(sessions),
        active_sessions=sum(1 for s in sessions if s.status == "active"),
        observations=sum(s.observation_count for s in sessions),
        memories=len(memories),
        latest_memories=len(current),
        lessons=lessons,
        actions=actions,
        crystals=crystals,
        semantic=sum(1 for m in current if m.type == "semantic"),
        procedural=sum(1 for m in current if m.type == "procedural"),
        graph_nodes=nodes,
        graph_edges=edges,
        updated_at=now_iso(),
    )
