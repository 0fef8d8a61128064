"""Invalidation by chain: the records derived from a record, found through the provenance
they keep (`source_ids` of memories, summaries and lessons; a crystal's memory through the
actions it was made of and the observations they name).

Holding a record holds what was derived from it, transitively; releasing it frees them
(unless something else holds them). The walk reads the derived tiers once and follows the
links in memory: it runs on an owner's hold or release, not on a read path.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from engine import Client
from functions.coordination.records import ACTIONS_BUCKET, CRYSTALS_BUCKET, Action, Crystal
from functions.kernel.records import (
    LESSONS_BUCKET,
    MEMORIES_BUCKET,
    SUMMARIES_BUCKET,
    Lesson,
    Memory,
    SessionSummary,
)
from functions.quarantine.decisions import Kind

MAX_DERIVED = 10_000
"""Records one hold reaches at most (a chain past it is cut and the cut is reported)."""


@dataclass(frozen=True)
class Derived:
    id: str
    kind: Kind
    project: str


def summary_record_id(session_id: str) -> str:
    """A summary as the read models name it (its key in `mem_summaries` is the session id)."""
    return f"summary:{session_id}"


class Provenance:
    """Source id -> the records made from it, over the derived tiers as stored now."""

    def __init__(self) -> None:
        self.made_from: dict[str, list[Derived]] = defaultdict(list)

    def add(self, record: Derived, sources: list[str]) -> None:
        for s in dict.fromkeys(sources):
            if s and s != record.id:
                self.made_from[s].append(record)

    @classmethod
    async def read(cls, client: Client) -> Provenance:
        p = cls()
        memories = await client.bucket(MEMORIES_BUCKET)
        async for _, m in memories.scan(">", Memory):
            if not m.superseded_by:
                p.add(Derived(m.id, "memory", m.project), m.source_ids)
        summaries = await client.bucket(SUMMARIES_BUCKET)
        async for _, s in summaries.scan(">", SessionSummary):
            rid = summary_record_id(s.session_id)
            p.add(Derived(rid, "summary", s.project), [*s.source_ids, *s.step_sources])
        lessons = await client.bucket(LESSONS_BUCKET)
        async for _, lesson in lessons.scan(">", Lesson):
            if not lesson.deleted:
                p.add(Derived(lesson.id, "lesson", lesson.project), lesson.source_ids)
        await p._crystals(client)
        return p

    async def _crystals(self, client: Client) -> None:
        """A crystal's memory comes from its actions, which name their observations and
        memories: the memory derives from those."""
        crystals = await client.bucket(CRYSTALS_BUCKET)
        made: list[Crystal] = [c async for _, c in crystals.scan(">", Crystal) if c.memory_id]
        if not made:
            return
        actions = await client.bucket(ACTIONS_BUCKET)
        wanted = {a for c in made for a in c.source_action_ids}
        named: dict[str, list[str]] = {}
        async for _, a in actions.scan(">", Action):
            if a.id in wanted:
                named[a.id] = [*a.source_observation_ids, *a.source_memory_ids]
        for c in made:
            sources = [s for a in c.source_action_ids for s in named.get(a, [])]
            self.add(Derived(c.memory_id, "memory", c.project), sources)

    def derived(self, root: str, limit: int = MAX_DERIVED) -> tuple[list[Derived], bool]:
        """Everything made from `root`, directly or through other derived records, nearest
        first; and whether the walk was cut at `limit`."""
        seen = {root}
        out: list[Derived] = []
        frontier = [root]
        while frontier:
            nxt: list[str] = []
            for src in frontier:
                for d in self.made_from.get(src, ()):
                    if d.id in seen:
                        continue
                    if len(out) >= limit:
                        return out, True
                    seen.add(d.id)
                    out.append(d)
                    nxt.append(d.id)
            frontier = nxt
        return out, False
