"""Graph maintenance on demand: build (fold the events not yet in the graph), extract
(the entities records name, stored as nodes and edges: functions.graph.persist), reset (drop the graph so the feed rebuilds
it from MEM_EVENTS), snapshot-rebuild (compaction: recount, adjacency rebuilt) and import
of a graphify `graph.json`. Served by the lifecycle worker beside its service, whose
store, graph lease and digest they use."""

from __future__ import annotations

import asyncio
import json
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Protocol

import msgspec

from engine import FunctionError, operation
from functions.graph import node, persist, reindex
from functions.graph.compact import GraphCompactOut
from functions.graph.extract import observation_entities
from functions.graph.extract_model import add_model_facts
from functions.graph.keys import CO_OCCURS, edge_id, edge_key, node_id, node_key
from functions.graph.mirror import PURGED, PurgeNote
from functions.graph.query import GraphQuery
from functions.kernel import clock
from functions.kernel.confine import OutsideRoots, confine
from functions.kernel.digest import cursor_key
from functions.kernel.models.client import ModelClient
from functions.kernel.owned import routes
from functions.kernel.records import (
    GRAPH_BUCKET,
    LIFECYCLE_BUCKET,
    GraphEdge,
    GraphNode,
    Observation,
)
from functions.kernel.store import StoreOwner

MAX_IMPORT = 50_000


class GraphHost(StoreOwner, Protocol):
    """What graph maintenance needs of the service that hosts it (the lifecycle's): its
    store, its job lease, its event feed and compaction."""

    async def exclusive(self, name: str) -> AbstractAsyncContextManager[None]: ...

    async def fold_events(self) -> dict[str, int]: ...

    async def compact_graph(self, now: datetime) -> GraphCompactOut: ...

    async def graph_reader(self) -> GraphQuery: ...

    def model(self) -> ModelClient: ...


class BuildIn(msgspec.Struct, rename="camel", kw_only=True):
    batch_size: int = 0
    """Accepted for upstream's clients; the feed's own batch size applies."""


class BuildOut(msgspec.Struct, rename="camel", kw_only=True):
    success: bool
    folded: dict[str, int]
    nodes: int
    edges: int


class ExtractIn(msgspec.Struct, rename="camel", kw_only=True):
    observations: Annotated[list[dict[str, Any]], msgspec.Meta(min_length=1, max_length=500)]
    """Observations (as stored or as upstream sends them: title, narrative, files, concepts)."""


class Entity(msgspec.Struct, kw_only=True):
    type: str
    name: str


class ExtractOut(msgspec.Struct, rename="camel", kw_only=True):
    success: bool
    entities: list[Entity]
    nodes_added: int = 0
    """Nodes extracted and merged into the graph (by type and name), as upstream counts:
    new ones and ones extracted again alike."""
    edges_added: int = 0
    """Edges extracted and merged (by source, target and type)."""


class ResetOut(msgspec.Struct, rename="camel", kw_only=True):
    success: bool
    removed: int
    note: str


class ImportIn(msgspec.Struct, rename="camel", kw_only=True):
    path: str = ""
    """A graphify graph.json; default <cwd>/graphify-out/graph.json."""
    cwd: str = ""
    project: str = ""


class ImportOut(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    success: bool
    path: str
    nodes: int
    edges: int
    error: str | None = None
    """Why nothing was read (`success` false): the path is outside the allowed roots."""


rest = routes("graph")


def _load_graphify(req: ImportIn) -> tuple[Path, Any]:
    """The graph at `path` (or under `cwd`), confined to the allowed roots (OutsideRoots)."""
    path = confine(str(req.path or Path(req.cwd or ".") / "graphify-out" / "graph.json"))
    try:
        found = path.is_file()
    except (OSError, ValueError):  # a name the OS cannot look up
        found = False
    if not found:
        raise FunctionError(
            "NOT_FOUND",
            f"no graphify graph at {req.path or req.cwd or '.'!r} (give `path` or `cwd`)",
            field="path",
        )
    try:
        return path, json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise FunctionError("UNPROCESSABLE", f"{path} is not JSON: {exc}", field="path") from None


def _observation(raw: dict[str, Any], i: int) -> Observation:
    base = {
        "id": f"obs_x{i}",
        "session_id": "",
        "project": "",
        "hook_type": "post_tool_use",
        "timestamp": "",
    }
    snake = {"sessionId": "session_id", "hookType": "hook_type", "toolName": "tool_name"}
    data = {snake.get(k, k): v for k, v in raw.items()}
    try:
        return msgspec.convert({**base, **data}, Observation, strict=False)
    except msgspec.ValidationError as exc:
        raise FunctionError(
            "BAD_REQUEST", f"observations[{i}]: {exc}", field=f"observations[{i}]"
        ) from None


class GraphOps:
    def __init__(self, owner: GraphHost) -> None:
        self.owner = owner

    async def _graph(self) -> Any:
        return await self.owner.store.client.bucket(GRAPH_BUCKET)

    async def _counts(self) -> tuple[int, int]:
        stats = await (await self.owner.graph_reader()).stats()
        return int(stats["totalNodes"]), int(stats["totalEdges"])

    @operation(
        "mem::graph-node",
        description="One knowledge-graph node: its strongest relations and the "
        "observations, sessions, projects and memories it came from (?id=)",
        http=rest("GET", "graph/node"),
    )
    async def graph_node(self, req: node.GraphNodeIn) -> node.GraphNodeOut:
        got = await node.describe(await self._graph(), self.owner.store, req.id)
        if got is None:
            raise FunctionError("NOT_FOUND", f"graph node not found: {req.id}", field="id")
        return got

    @operation(
        "mem::graph-build",
        description="Fold every event not yet in the knowledge graph now (the feed also runs "
        "every minute)",
        timeout=900,
        http=rest("POST", "graph/build"),
    )
    async def build(self, req: BuildIn) -> BuildOut:
        folded = await self.owner.fold_events()
        nodes, edges = await self._counts()
        return BuildOut(success=True, folded=folded, nodes=nodes, edges=edges)

    @operation(
        "mem::graph-extract",
        description="Extract the entities (files, symbols, packages, errors, commands, "
        "concepts) that observations name and store them in the knowledge graph: a node per "
        "type and name, a co_occurs edge per pair; with GRAPH_EXTRACTION_ENABLED=true and a "
        "model, also the entities and typed relations the model names",
        http=rest("POST", "graph/extract"),
    )
    async def extract(self, req: ExtractIn) -> ExtractOut:
        seen: dict[tuple[str, str], None] = {}
        batch = persist.Extracted()
        at = clock.iso(clock.now())
        parsed: list[tuple[str, Observation]] = []
        for i, raw in enumerate(req.observations):
            obs = _observation(raw, i)
            ents = observation_entities(obs)
            for kind, name in ents:
                seen[(kind, name)] = None
            source = str(raw.get("id") or "")
            batch.add(source, obs.project, obs.timestamp or at, ents)
            parsed.append((source, obs))
        await add_model_facts(self.owner.model(), parsed, batch, at)
        for nd in batch.nodes.values():
            seen[(nd.kind, nd.name)] = None
        async with AsyncExitStack() as stack:
            for wait in (0.2, 0.5, 1, 2, 4, 8, 0):  # the feed's minute run holds it briefly
                try:
                    await stack.enter_async_context(await self.owner.exclusive("graph"))
                    break
                except FunctionError as exc:
                    if exc.code != "CONFLICT" or not wait:
                        raise
                    await asyncio.sleep(wait)
            await persist.persist(await self._graph(), batch)
        return ExtractOut(
            success=True,
            entities=[Entity(type=k, name=n) for k, n in seen],
            nodes_added=len(batch.nodes),
            edges_added=len(batch.edges),
        )

    @operation(
        "mem::graph-reset",
        description="Drop the knowledge graph; the feed rebuilds it from MEM_EVENTS",
        timeout=900,
        http=rest("POST", "graph/reset"),
    )
    async def reset(self) -> ResetOut:
        state = await self._graph()
        async with await self.owner.exclusive("graph"):
            removed = await state.purge(">")
            await state.put(PURGED, PurgeNote(at=clock.iso(clock.now()), keys=removed))
            life = await self.owner.store.client.bucket(LIFECYCLE_BUCKET)
            await life.put(cursor_key("graph"), 0)
        return ResetOut(
            success=True,
            removed=removed,
            note="the graph refills from MEM_EVENTS "
            "at the next feed run (POST graph/build runs it now)",
        )

    @operation(
        "mem::graph-snapshot-rebuild",
        description="Compact the graph now: recount nodes and edges, rebuild adjacency",
        timeout=900,
        http=rest("POST", "graph/snapshot-rebuild"),
    )
    async def snapshot_rebuild(self) -> BuildOut:
        out = await self.owner.compact_graph(clock.now())
        nodes, edges = await self._counts()
        return BuildOut(success=True, folded=out.folded, nodes=nodes, edges=edges)

    @operation(
        "mem::graph::import-graphify",
        description="Import a graphify graph.json (nodes and links) into the knowledge graph",
        timeout=600,
        http=rest("POST", "graph/import-graphify"),
    )
    async def import_graphify(self, req: ImportIn) -> ImportOut:
        try:
            path, doc = await asyncio.to_thread(_load_graphify, req)
        except OutsideRoots as refused:
            return ImportOut(success=False, path=req.path, nodes=0, edges=0, error=str(refused))
        nodes_in = doc.get("nodes") if isinstance(doc, dict) else None
        links_in = (doc.get("links") or doc.get("edges") or []) if isinstance(doc, dict) else []
        if not isinstance(nodes_in, list):
            raise FunctionError("UNPROCESSABLE", f"{path} has no `nodes` list", field="path")
        at = clock.iso(clock.now())
        state = await self._graph()
        ids: dict[str, str] = {}
        async with await self.owner.exclusive("graph"):
            for raw in nodes_in[:MAX_IMPORT]:
                if not isinstance(raw, dict) or raw.get("id") is None:
                    continue
                name = str(raw.get("label") or raw.get("name") or raw["id"])[:300]
                kind = (
                    "file"
                    if str(raw.get("source_file") or "").endswith(name) or "/" in name
                    else "concept"
                )
                nid = node_id(req.project, kind, name)
                ids[str(raw["id"])] = nid
                await state.put(
                    node_key(nid),
                    GraphNode(
                        id=nid,
                        kind=kind,
                        name=name,
                        project=req.project,
                        weight=1,
                        first_seen=at,
                        last_seen=at,
                    ),
                )
            edges = 0
            for raw in links_in[:MAX_IMPORT] if isinstance(links_in, list) else []:
                if not isinstance(raw, dict):
                    continue
                a, b = ids.get(str(raw.get("source"))), ids.get(str(raw.get("target")))
                if not a or not b or a == b:
                    continue
                key = edge_key(a, b, CO_OCCURS)
                src, dst = key.split(".")[1:3]
                await state.put(
                    key,
                    GraphEdge(
                        id=edge_id(key),
                        kind=CO_OCCURS,
                        src=src,
                        dst=dst,
                        project=req.project,
                        weight=1,
                        valid_from=at,
                    ),
                )
                edges += 1
            await reindex.rebuild(state, set(ids.values()))
        return ImportOut(success=True, path=str(path), nodes=len(ids), edges=edges)
