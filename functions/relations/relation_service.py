"""Relations between memories, and the operations that follow them: `relate` (a typed
link), `get-related` (a walk over links and version chains), `evolve` (a new version of a
memory) and `cascade-update` (what a superseded memory leaves stale).

A relation's key hashes (source, target, type), so relating the same pair twice is one
record; version chains (`supersedes` / `supersededBy`) count as links without a record.
"""

from __future__ import annotations

import hashlib
from collections import deque
from typing import TYPE_CHECKING, Annotated, Literal

import msgspec

from engine import FunctionError, Tool, operation
from functions.graph.keys import MemoryIndex
from functions.graph.stale import mark_stale
from functions.kernel.clock import now_iso
from functions.kernel.ids import new_id
from functions.kernel.names import NONBLANK
from functions.kernel.owned import OwnedService, routes
from functions.kernel.records import (
    GRAPH_BUCKET,
    RELATIONS_BUCKET,
    Memory,
    Relation,
)
from functions.kernel.store import StoreOwner
from functions.kernel.trust import write_path as trust
from functions.kernel.views import MemoryView, as_view, view

Id = Annotated[str, msgspec.Meta(min_length=1, max_length=512)]
# To the type checker a view is its record (the same attributes).
if TYPE_CHECKING:
    RelationView = Relation
else:
    RelationView = view(Relation)
Unit = Annotated[float, msgspec.Meta(ge=0, le=1)]


def relation_key(source: str, target: str, type_: str) -> str:
    return "rel_" + hashlib.sha256(f"{source}\x1f{target}\x1f{type_}".encode()).hexdigest()[:24]


RelationType = Literal["related", "supersedes", "contradicts", "extends", "derived_from",
                       "depends_on", "similar", "caused_by", "fixes"]  # fmt: skip


class RelateIn(msgspec.Struct, rename="camel", kw_only=True):
    source_id: Id
    target_id: Id
    type: RelationType = "related"
    confidence: Unit | None = None


class RelatedIn(msgspec.Struct, rename="camel", kw_only=True):
    memory_id: Id
    max_hops: Annotated[int, msgspec.Meta(ge=1, le=5)] = 2
    min_confidence: Unit = 0.0


class RelationsIn(msgspec.Struct, rename="camel", kw_only=True):
    memory_id: str = ""
    limit: Annotated[int, msgspec.Meta(ge=1, le=10_000)] = 500


class EvolveIn(msgspec.Struct, rename="camel", kw_only=True):
    memory_id: Id
    new_content: Annotated[str, msgspec.Meta(min_length=1, max_length=100_000, pattern=NONBLANK)]
    new_title: str = ""


class CascadeIn(msgspec.Struct, rename="camel", kw_only=True):
    superseded_memory_id: Id


class RelateOut(msgspec.Struct, rename="camel", kw_only=True):
    success: bool
    relation_id: str
    relation: RelationView
    created: bool


class RelationsOut(msgspec.Struct, kw_only=True):
    relations: list[RelationView]


class RelatedHit(msgspec.Struct, kw_only=True):
    memory: MemoryView
    hop: int
    confidence: float
    via: str
    """The relation type (or `supersedes` for a version chain) that reached it."""


class RelatedOut(msgspec.Struct, rename="camel", kw_only=True):
    memory_id: str
    results: list[RelatedHit]


class EvolveOut(msgspec.Struct, rename="camel", kw_only=True):
    success: bool
    memory: MemoryView
    previous_id: str


class Flagged(msgspec.Struct, rename="camel", kw_only=True):
    nodes: int
    edges: int
    sibling_memories: int


class CascadeOut(msgspec.Struct, rename="camel", kw_only=True):
    success: bool
    flagged: Flagged
    total: int
    sibling_ids: list[str]
    """Current memories sharing two or more concepts with the superseded one: worth a look."""
    superseded_by: str | None


rest = routes("relations")


class RelationService(OwnedService[StoreOwner]):
    BUCKET = RELATIONS_BUCKET

    async def _memory(self, mid: str, field: str) -> Memory:
        m = await self.store.get(self.store.memories, mid, Memory)
        if m is None:
            raise FunctionError("NOT_FOUND", f"no memory {mid}", field=field)
        return m

    async def all(self) -> list[Relation]:
        return [r async for _, r in (await self.bucket()).scan(">", Relation)]

    @operation(
        "mem::relate",
        description="Relate two memories (related, supersedes, contradicts, extends...)",
        http=rest("POST", "relations", status=201),
    )
    async def relate(self, req: RelateIn) -> RelateOut:
        src = await self._memory(req.source_id, "sourceId")
        dst = await self._memory(req.target_id, "targetId")
        if req.source_id == req.target_id:
            raise FunctionError(
                "CONFLICT", "a memory cannot relate to itself", field="targetId", retryable=False
            )
        confidence = req.confidence if req.confidence is not None else _confidence(src, dst)
        rid = relation_key(req.source_id, req.target_id, req.type)
        rel = Relation(
            id=rid,
            type=req.type,
            source_id=req.source_id,
            target_id=req.target_id,
            confidence=round(confidence, 3),
            created_at=now_iso(),
        )
        st = await self.bucket()
        created = await st.create(rid, rel) is not None
        if not created:
            rel = await st.get(rid, Relation) or rel
        else:
            await self.store.audit(
                "relation_create",
                [rid, req.source_id, req.target_id],
                reason=req.type,
                project=src.project,
            )
        return RelateOut(
            success=True, relation_id=rid, relation=as_view(rel, RelationView), created=created
        )

    @operation(
        "mem::relations-list",
        description="Relations between memories (?memoryId= for one memory's)",
        http=rest("GET", "relations"),
    )
    async def relations_list(self, req: RelationsIn) -> RelationsOut:
        rels = [
            r
            for r in await self.all()
            if not req.memory_id or req.memory_id in (r.source_id, r.target_id)
        ]
        rels.sort(key=lambda r: r.created_at, reverse=True)
        return RelationsOut(relations=as_view(rels[: req.limit], list[RelationView]))

    @operation(
        "mem::get-related",
        description="Query the memory relationship graph: memories linked to one, by "
        "relations and version chains, up to maxHops away.",
        tool=Tool("memory_relations", tier="basic"),
    )
    async def get_related(self, req: RelatedIn) -> RelatedOut:
        await self._memory(req.memory_id, "memoryId")
        links: dict[str, list[tuple[str, float, str]]] = {}
        for r in await self.all():
            links.setdefault(r.source_id, []).append((r.target_id, r.confidence, r.type))
            links.setdefault(r.target_id, []).append((r.source_id, r.confidence, r.type))
        seen = {req.memory_id}
        queue: deque[tuple[str, int]] = deque([(req.memory_id, 0)])
        out: list[RelatedHit] = []
        while queue and len(seen) < 500:
            mid, hop = queue.popleft()
            m = await self.store.get(self.store.memories, mid, Memory)
            if m is None:
                continue
            nxt = list(links.get(mid, []))
            nxt += [(x, 1.0, "supersedes") for x in (m.supersedes, m.superseded_by) if x]
            for other, conf, via in nxt:
                if other in seen or hop + 1 > req.max_hops:
                    continue
                seen.add(other)
                found = await self.store.get(self.store.memories, other, Memory)
                if found is None:
                    continue
                if conf >= req.min_confidence:
                    out.append(
                        RelatedHit(
                            memory=as_view(found, MemoryView), hop=hop + 1, confidence=conf, via=via
                        )
                    )
                queue.append((other, hop + 1))
        out.sort(key=lambda h: (h.hop, -h.confidence))
        return RelatedOut(memory_id=req.memory_id, results=out)

    @operation(
        "mem::evolve",
        description="A new version of a memory: the old one is superseded (kept in the "
        "version chain, out of the indexes)",
        http=rest("POST", "evolve"),
    )
    async def evolve(self, req: EvolveIn) -> EvolveOut:
        old = await self._memory(req.memory_id, "memoryId")
        if old.superseded_by:
            raise FunctionError(
                "CONFLICT",
                f"memory {old.id} was already superseded by {old.superseded_by}; evolve that",
                field="memoryId",
                retryable=False,
            )
        now = now_iso()
        # the new version's words judged like a `remember` (before they are sanitized and
        # scrubbed), not inherited from the version they replace
        words = {"content": req.new_content, "title": req.new_title or old.title}
        verdict = trust.classify_value(words, trust.REMEMBER)
        verdict = await trust.second_opinion(
            self.store.client, verdict, trust.stored_value(words), trust.REMEMBER
        )
        content = trust.stored_text(req.new_content)
        new = msgspec.structs.replace(
            old,
            id=new_id("mem"),
            content=content,
            title=trust.stored_text(req.new_title) or old.title,
            trust=trust.trust_of(verdict, trust.REMEMBER),
            created_at=now,
            updated_at=now,
            version=old.version + 1,
            supersedes=old.id,
            superseded_by=None,
            strength=1.0,
            strength_at=now,
            access_count=0,
        )
        st = self.store
        await st.save_memory(new, supersedes=old.id, reason="evolved")
        trust.count(st.client, new.trust)
        rid = relation_key(new.id, old.id, "supersedes")
        await (await self.bucket()).put(
            rid,
            Relation(
                id=rid,
                type="supersedes",
                source_id=new.id,
                target_id=old.id,
                confidence=1.0,
                created_at=now,
            ),
        )
        await st.audit("evolve", [old.id, new.id], actor=old.agent_id, project=old.project)
        return EvolveOut(success=True, memory=as_view(new, MemoryView), previous_id=old.id)

    @operation(
        "mem::cascade-update",
        description="What a superseded memory leaves stale: marks stale the graph nodes and "
        "edges whose sources overlap its own (graph queries and stats then skip them) and "
        "counts current memories that share its concepts",
        http=rest("POST", "cascade-update"),
    )
    async def cascade_update(self, req: CascadeIn) -> CascadeOut:
        old = await self._memory(req.superseded_memory_id, "supersededMemoryId")
        graph = await self.store.client.bucket(GRAPH_BUCKET)
        made: MemoryIndex | None = await graph.get(f"m.{old.id}", MemoryIndex)
        mine = {c.lower() for c in old.concepts}
        siblings: list[str] = []
        if len(mine) >= 2:
            for m in await self.store.load_all(self.store.memories, Memory):
                if m.id == old.id or m.superseded_by or m.project != old.project:
                    continue
                if len(mine & {c.lower() for c in m.concepts}) >= 2:
                    siblings.append(m.id)
        marked = await mark_stale(graph, {old.id, *old.source_ids}, made)
        nodes, edges = marked.nodes, marked.edges
        if nodes or edges or siblings:
            await self.store.audit(
                "cascade-update",
                [old.id, *siblings[:50]],
                reason=f"superseded memory review: {nodes} graph nodes and {edges} edges "
                "marked stale",
                project=old.project,
            )
        return CascadeOut(
            success=True,
            flagged=Flagged(nodes=nodes, edges=edges, sibling_memories=len(siblings)),
            total=nodes + edges + len(siblings),
            sibling_ids=siblings,
            superseded_by=old.superseded_by,
        )


def _confidence(a: Memory, b: Memory) -> float:
    """0.5, more when they share sessions, files or concepts (each capped)."""
    score = 0.5
    score += min(len(set(a.source_ids) & set(b.source_ids)) * 0.1, 0.2)
    score += min(len(set(a.files) & set(b.files)) * 0.05, 0.15)
    score += min(
        len({c.lower() for c in a.concepts} & {c.lower() for c in b.concepts}) * 0.05, 0.15
    )
    return min(1.0, score)
