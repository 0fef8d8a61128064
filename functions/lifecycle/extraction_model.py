"""Consolidation's extraction by a model (CONSOLIDATION_ENABLED, on by default when a
provider is configured: functions/kernel/models), upstream's three passes:

- per concept (upstream `mem::consolidate`): with >= 10 observations of importance >= 5,
  those grouped by concept; a group of >= 3 (its 8 most important) becomes one memory the model writes
  (type, title, content, concepts, files, strength), at most `PER_CONCEPT_CALLS` groups a
  run, the largest first. Its id is a hash of the project and the title, so the same title
  names the same memory and a changed one is a new version of it; a latest memory of
  another origin with that title is superseded by it (upstream evolves it likewise);
- facts (upstream's semantic tier): per project with >= 5 summaries, the 20 newest
  (title, narrative, concepts) -> facts with a confidence; one semantic memory per fact,
  its id a hash of the fact's text, so the same text reinforces (confidence = the larger);
- procedures (upstream's procedural tier): the pattern memories of the first pass seen in
  >= 2 sessions, >= 2 in a project -> named procedures with a trigger and steps; the same
  name names the same procedural memory.

The records go through consolidation's stage/commit/apply pipeline beside the planner's.
Each answer is cached under `mem_lifecycle/xm.<pass>.<hash(group)>` with a fingerprint of
its prompt, so unchanged evidence costs no call and gives identical records (a second run
stages nothing). A failed call or a reply that does not decode adds nothing and caches
nothing: the keyless tiers stand. At most `max_calls` calls a run.
"""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Annotated, TypeVar

import msgspec

from engine import Bucket
from functions.kernel.models.client import ModelClient
from functions.kernel.records import Memory, Observation, SessionSummary
from functions.lifecycle.semantic import cluster_id

T = TypeVar("T")
TASK = "consolidation.extract"
PER_CONCEPT_CALLS = 10
MIN_OBSERVATIONS = 10
"""Observations of importance >= 5 a run needs before any concept group is sent (upstream's
`minObservations`)."""
TOP = 8
MIN_GROUP = 3
MIN_SUMMARIES = 5
NEWEST = 20
TYPES = frozenset({"pattern", "preference", "architecture", "bug", "workflow", "fact"})
TEXT = 2000
"""Characters of a narrative a prompt carries."""
LIST = 20

MEMORY_SYSTEM = (
    "You are a memory consolidation engine. Given related observations from coding sessions, "
    "synthesize them into a single long-term memory. Reply with one JSON object and nothing "
    'else: {"type": "pattern|preference|architecture|bug|workflow|fact", "title": "at most 80 '
    'characters", "content": "2-4 sentences on the learned insight", "concepts": ["key term"], '
    '"files": ["relevant/file/path"], "strength": 1-10}. strength: how confident and important '
    "the memory is. Keep paths, commands and names exactly as given."
)
FACTS_SYSTEM = (
    "You are a memory consolidation engine. Given overlapping episodic memories (session "
    "summaries), extract stable factual knowledge. Reply with one JSON object and nothing else: "
    '{"facts": [{"fact": "concise factual statement", "confidence": 0.0-1.0}]}. Extract only '
    "facts that appear in 2+ episodes or are highly confident; confidence reflects how well "
    "the episodes support it; combine overlapping information into single concise facts; skip "
    "ephemeral details (specific error messages, temporary states)."
)
PROCEDURES_SYSTEM = (
    "You are a procedural memory extractor. Given repeated patterns and workflows observed "
    "across sessions, extract reusable procedures. Reply with one JSON object and nothing "
    'else: {"procedures": [{"name": "short descriptive name", "trigger": "when to use it", '
    '"steps": ["step 1", "step 2"]}]}. Only procedures observed 2+ times; concrete, actionable '
    "steps; a trigger specific enough to match automatically."
)


class MemoryReply(msgspec.Struct, kw_only=True):
    type: str
    title: str
    content: str
    concepts: list[str] = msgspec.field(default_factory=list)
    files: list[str] = msgspec.field(default_factory=list)
    strength: Annotated[float, msgspec.Meta(ge=0, le=10)] = 5


class ModelFact(msgspec.Struct, kw_only=True):
    fact: str
    confidence: Annotated[float, msgspec.Meta(ge=0, le=1)] = 0.5


class FactsReply(msgspec.Struct, kw_only=True):
    facts: list[ModelFact]


class ModelProcedure(msgspec.Struct, kw_only=True):
    name: str
    trigger: str = ""
    steps: list[str] = msgspec.field(default_factory=list)


class ProceduresReply(msgspec.Struct, kw_only=True):
    procedures: list[ModelProcedure]


class Answer(msgspec.Struct, kw_only=True):
    """`mem_lifecycle/xm.<pass>.<hash>`: a reply and the prompt it answered."""

    fingerprint: str
    reply: str


@dataclass(frozen=True)
class Brief:
    """What a prompt needs of an observation (a group keeps these, not the record)."""

    id: str
    type: str
    title: str
    narrative: str
    files: tuple[str, ...]
    importance: int


@dataclass
class Group:
    project: str
    agent_id: str
    concept: str
    count: int = 0
    sessions: set[str] = field(default_factory=set)
    top: list[tuple[int, str, str, Brief]] = field(default_factory=list)
    """(importance, timestamp, id, observation): a min-heap of the `TOP` most important."""

    def add(self, o: Observation, brief: Brief) -> None:
        self.count += 1
        if len(self.sessions) < 256:
            self.sessions.add(o.session_id)
        item = (o.importance, o.timestamp, o.id, brief)
        if len(self.top) < TOP:
            heapq.heappush(self.top, item)
        elif item[:3] > self.top[0][:3]:
            heapq.heapreplace(self.top, item)

    def observations(self) -> list[Brief]:
        return [x[3] for x in sorted(self.top, key=lambda x: x[:3], reverse=True)]


def _clean(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(x.strip() for x in items if x.strip()))[:LIST]


def _hash(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:24]


def memory_prompt(g: Group) -> str:
    lines = [
        f"[{o.type}] {o.title}\n{o.narrative}\nFiles: {', '.join(o.files)}\n"
        f"Importance: {o.importance}"
        for o in g.observations()
    ]
    return f'Concept: "{g.concept}"\n\nObservations:\n' + "\n\n".join(lines)


def facts_prompt(summaries: list[SessionSummary]) -> str:
    items = [
        f"[Episode {i}]\nTitle: {s.title}\nNarrative: {s.narrative[:TEXT]}\n"
        f"Concepts: {', '.join(s.concepts)}"
        for i, s in enumerate(summaries, 1)
    ]
    return "Consolidate these episodic memories into stable facts:\n\n" + "\n\n".join(items)


def procedures_prompt(patterns: list[tuple[Memory, int]]) -> str:
    items = [f"[Pattern {i}] (seen {n}x)\n{m.content}" for i, (m, n) in enumerate(patterns, 1)]
    return "Extract reusable procedures from these recurring patterns:\n\n" + "\n\n".join(items)


class Extractor:
    """One consolidation run's model passes: feed it every observation (`add`) and every
    summary (`summary`), then `memories()`."""

    def __init__(self, model: ModelClient, life: Bucket, max_calls: int, cap: int = 32) -> None:
        self.model = model
        self.life = life
        self.max_calls = max_calls
        self.cap = cap
        self.calls = 0
        self.failed = 0
        self.groups: dict[tuple[str, str, str], Group] = {}
        self.newest: dict[tuple[str, str], list[tuple[str, str, SessionSummary]]] = {}
        self.counts: dict[tuple[str, str], int] = {}
        self.important = 0

    def add(self, o: Observation) -> None:
        if not o.title or o.importance < 5:
            return
        self.important += 1
        brief = Brief(o.id, o.type, o.title, o.narrative[:TEXT], tuple(o.files), o.importance)
        for c in dict.fromkeys(c.lower() for c in o.concepts):
            key = (o.project, o.agent_id, c)
            g = self.groups.get(key)
            if g is None:
                g = self.groups[key] = Group(o.project, o.agent_id, c)
            g.add(o, brief)

    def summary(self, s: SessionSummary) -> None:
        heap = self.newest.setdefault((s.project, s.agent_id), [])
        heap_item = (s.created_at, s.session_id, s)
        if len(heap) < NEWEST:
            heapq.heappush(heap, heap_item)
        elif heap_item[:2] > heap[0][:2]:
            heapq.heapreplace(heap, heap_item)
        self.counts[(s.project, s.agent_id)] = self.counts.get((s.project, s.agent_id), 0) + 1

    async def _ask(self, key: str, system: str, user: str, type_: type[T]) -> T | None:
        fp = _hash(system, user)
        cached: Answer | None = await self.life.get(key, Answer)
        if cached is not None and cached.fingerprint == fp:
            return msgspec.json.decode(cached.reply, type=type_)
        if self.calls >= self.max_calls:
            return None
        self.calls += 1
        got = await self.model.ask(TASK, system, user, type_)
        if got is None:
            self.failed += 1
            return None
        await self.life.put(key, Answer(fingerprint=fp, reply=msgspec.json.encode(got).decode()))
        return got

    async def memories(self) -> list[Memory]:
        """The model's records for this run (cached answers included), sorted by id."""
        concept = await self._per_concept()
        out = [m for m, _ in concept]
        out += await self._facts()
        out += await self._procedures([(m, n) for m, n in concept if m.type == "pattern"])
        return sorted({m.id: m for m in out}.values(), key=lambda m: m.id)

    async def _per_concept(self) -> list[tuple[Memory, int]]:
        if self.important < MIN_OBSERVATIONS:
            return []
        groups = [g for g in self.groups.values() if g.count >= MIN_GROUP]
        groups.sort(key=lambda g: (-g.count, g.project, g.concept))
        out: list[tuple[Memory, int]] = []
        for g in groups[:PER_CONCEPT_CALLS]:
            key = f"xm.concept.{_hash(g.project, g.agent_id, g.concept)}"
            r = await self._ask(key, MEMORY_SYSTEM, memory_prompt(g), MemoryReply)
            title, content = (r.title.strip()[:120], r.content.strip()[:2000]) if r else ("", "")
            if r is None or not title or not content:
                continue
            m = Memory(
                id=cluster_id("mem", g.project, g.agent_id, title.lower()),
                content=content,
                type=r.type if r.type in TYPES else "fact",
                title=title,
                project=g.project,
                agent_id=g.agent_id,
                concepts=_clean(r.concepts) or [g.concept],
                files=_clean(r.files),
                strength=round(max(1.0, min(10.0, r.strength)) / 10, 3),
                confidence=round(max(1.0, min(10.0, r.strength)) / 10, 3),
                source_ids=[o.id for o in g.observations()],
            )
            out.append((m, len(g.sessions)))
        return out

    async def _facts(self) -> list[Memory]:
        out: list[Memory] = []
        for (project, agent), heap in sorted(self.newest.items()):
            if self.counts.get((project, agent), 0) < MIN_SUMMARIES:
                continue
            newest = [s for _, _, s in sorted(heap, key=lambda x: x[:2], reverse=True)]
            key = f"xm.facts.{_hash(project, agent)}"
            r = await self._ask(key, FACTS_SYSTEM, facts_prompt(newest), FactsReply)
            sources: list[str] = []
            for s in newest:
                sources += [i for i in s.source_ids if i not in sources]
            for f in r.facts if r else []:
                text = f.fact.strip()[:1200]
                if not text:
                    continue
                out.append(
                    Memory(
                        id=cluster_id("sem", project, agent, "model", text.lower()),
                        content=text,
                        type="semantic",
                        title=text[:120],
                        project=project,
                        agent_id=agent,
                        confidence=round(f.confidence, 3),
                        source_ids=sources[: self.cap],
                    )
                )
        return out

    async def _procedures(self, patterns: list[tuple[Memory, int]]) -> list[Memory]:
        by_project: dict[tuple[str, str], list[tuple[Memory, int]]] = {}
        for m, n in patterns:
            if n >= 2:
                by_project.setdefault((m.project, m.agent_id), []).append((m, n))
        out: list[Memory] = []
        for (project, agent), items in sorted(by_project.items()):
            if len(items) < 2:
                continue
            key = f"xm.procedures.{_hash(project, agent)}"
            r = await self._ask(key, PROCEDURES_SYSTEM, procedures_prompt(items), ProceduresReply)
            sources = [i for m, _ in items for i in m.source_ids][: self.cap]
            for p in r.procedures if r else []:
                name, steps = p.name.strip()[:120], _clean(p.steps)
                if not name or not steps:
                    continue
                listing = " → ".join(f"{i}. {s}" for i, s in enumerate(steps, 1))
                trigger = p.trigger.strip()
                out.append(
                    Memory(
                        id=cluster_id("proc", project, agent, "model", name.lower()),
                        content=(f"When {trigger}: " if trigger else "") + listing,
                        type="procedural",
                        title=name,
                        project=project,
                        agent_id=agent,
                        steps=steps,
                        confidence=0.5,
                        source_ids=sources,
                    )
                )
        return out


def carried(planned: Memory, old: Memory | None) -> Memory:
    """A model record over its stored self: a fact whose text (any case) is stored again
    reinforces it (its wording stays, the larger confidence); a memory keeps the one it
    superseded."""
    if old is None:
        return planned
    if planned.type == "semantic":
        conf = max(old.confidence or 0.0, planned.confidence or 0.0)
        planned = msgspec.structs.replace(
            planned, title=old.title, content=old.content, confidence=conf
        )
    if planned.supersedes is None and old.supersedes is not None:
        planned = msgspec.structs.replace(planned, supersedes=old.supersedes)
    return planned


def supersede(planned: list[Memory], stored: Iterable[Memory]) -> list[Memory]:
    """Per-concept memories whose title a latest stored memory of another id holds: the new
    one supersedes it (version + 1), and the stored one, marked superseded, is returned too."""
    titled = {(m.project, m.title.lower()): m for m in planned if m.type in TYPES}
    out: list[Memory] = []
    for old in stored:
        new = titled.get((old.project, old.title.lower()))
        if new is None or new.id == old.id or old.superseded_by is not None:
            continue
        i = planned.index(new)
        planned[i] = msgspec.structs.replace(new, supersedes=old.id, version=old.version + 1)
        out.append(msgspec.structs.replace(old, superseded_by=new.id))
    return out
