"""graph/extract's model pass, as upstream's (GRAPH_EXTRACTION_ENABLED=true and a provider
configured): observations in batches of GRAPH_EXTRACTION_BATCH_SIZE (10) go to the model,
which names entities of upstream's types and typed relations between them; both are stored
beside the keyless entities (functions.graph.persist). A batch whose reply does not decode,
or a failed call, adds nothing: the keyless extraction stands (and the client counts it).

Upstream's types: entities file, function, concept, error, decision, pattern, library,
person (function and library are our symbol and package); relations uses, imports,
modifies, causes, fixes, depends_on, related_to. Anything else in a reply is dropped.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from functions.graph.extract import Entity
from functions.graph.persist import Extracted
from functions.graph.settings import graph_settings
from functions.kernel.models.client import ModelClient
from functions.kernel.records import Observation

TASK = "graph"
SYSTEM = (
    "You extract a knowledge graph from a coding agent's observations. Reply with one JSON "
    'object and nothing else: {"entities": [{"type": "file|function|concept|error|decision|'
    'pattern|library|person", "name": "..."}], "relations": [{"type": "uses|imports|modifies|'
    'causes|fixes|depends_on|related_to", "source": "entity name", "target": "entity name", '
    '"weight": 0.0-1.0}]}. Name only what the observations say; keep paths, identifiers and '
    "error codes exactly as written."
)
KINDS = {"file": "file", "function": "symbol", "concept": "concept", "error": "error",
         "decision": "decision", "pattern": "pattern", "library": "package",
         "person": "person"}  # fmt: skip
RELATIONS = frozenset(
    {"uses", "imports", "modifies", "causes", "fixes", "depends_on", "related_to"}
)
PER_OBSERVATION = 2000
"""Characters of an observation's narrative a prompt carries."""


class ModelEntity(msgspec.Struct, kw_only=True):
    type: str
    name: Annotated[str, msgspec.Meta(max_length=300)]


class ModelRelation(msgspec.Struct, kw_only=True):
    type: str
    source: str
    target: str


class GraphReply(msgspec.Struct, kw_only=True):
    entities: list[ModelEntity] = msgspec.field(default_factory=list)
    relations: list[ModelRelation] = msgspec.field(default_factory=list)


def enabled() -> bool:
    return graph_settings().extraction


def batch_size() -> int:
    return graph_settings().batch_size


def prompt(batch: list[Observation]) -> str:
    parts = []
    for i, o in enumerate(batch):
        parts.append(
            f"[{i}] {o.type}: {o.title}\n{o.narrative[:PER_OBSERVATION]}\n"
            f"concepts: {', '.join(o.concepts)}\nfiles: {', '.join(o.files)}"
        )
    return "\n\n".join(parts)


def typed(reply: GraphReply) -> tuple[list[Entity], list[tuple[Entity, Entity, str]]]:
    """The reply's entities in our kinds, and its relations between entities it named."""
    ents: dict[str, Entity] = {}
    for e in reply.entities:
        kind, name = KINDS.get(e.type.strip().lower()), e.name.strip()
        if kind and len(name) >= 2:
            ents.setdefault(name.lower(), (kind, name))
    rels = []
    for r in reply.relations:
        a, b = ents.get(r.source.strip().lower()), ents.get(r.target.strip().lower())
        if r.type in RELATIONS and a and b and a != b:
            rels.append((a, b, r.type))
    return list(ents.values()), rels


async def add_model_facts(
    model: ModelClient, observations: list[tuple[str, Observation]], batch: Extracted, at: str
) -> int:
    """Ask the model per batch of observations (each with its source id); what it named goes
    into `batch`. How many entities it added."""
    if not (enabled() and model.enabled):
        return 0
    added = 0
    size = batch_size()
    for i in range(0, len(observations), size):
        part = observations[i : i + size]
        got = await model.ask(TASK, SYSTEM, prompt([o for _, o in part]), GraphReply)
        if got is None:
            continue
        ents, rels = typed(got)
        project = part[0][1].project
        sources = [sid for sid, _ in part if sid]
        for source in sources or [""]:
            batch.add(source, project, at, ents, pair=False)
            for a, b, kind in rels:
                batch.relate(source, project, at, a, b, kind)
        added += len(ents)
    return added
