"""Merging two projects into one: what was recorded under one name (a worktree's folder, a
clone under another name, before one project per repository) moves under the other.

Every record of project `from` (observations, sessions, summaries, memories, lessons) is
rewritten with project `into`; observations, summaries and memories are published again so
the search index and the read models replace them (an observation's `revision` goes up:
they replace it and do not count it twice). Audited; `dryRun` counts without writing. The
projects' profiles and graph statistics, derived from past events, keep what they had.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import msgspec

from engine import FunctionError
from functions.kernel.records import (
    LESSONS_BUCKET,
    Lesson,
    Memory,
    MemoryAdded,
    Observation,
    Session,
    SessionSummary,
    SummaryAdded,
)
from functions.kernel.store import MemoryStore

Project = Annotated[str, msgspec.Meta(min_length=1, max_length=512)]


class ProjectMergeIn(msgspec.Struct, rename="camel", kw_only=True):
    source: Project = msgspec.field(name="from")
    """The project whose records move."""
    into: Project
    """The project they join (it may hold records already, or none yet)."""
    dry_run: bool = False
    agent_id: str = ""


class MergeCounts(msgspec.Struct, kw_only=True):
    observations: int = 0
    sessions: int = 0
    summaries: int = 0
    memories: int = 0
    lessons: int = 0


class ProjectMergeOut(msgspec.Struct, rename="camel", kw_only=True):
    success: bool
    source: str = msgspec.field(name="from")
    into: str
    dry_run: bool
    moved: MergeCounts


async def merge_projects(store: MemoryStore, req: ProjectMergeIn) -> ProjectMergeOut:
    if req.source == req.into:
        raise FunctionError(
            "UNPROCESSABLE", "`from` and `into` name the same project", field="into"
        )
    dry, moved = req.dry_run, MergeCounts()
    async for obs in store.scan_observations(req.source):
        if obs.project != req.source:
            continue
        moved.observations += 1
        if not dry:
            # its next version, on the other project's subject (a revision: the read
            # models replace the record instead of counting it again)
            await store.update_observation(obs.id, _moved_observation(req))
    async for sid, s in store.sessions.scan(">", Session):
        if s.project == req.source:
            moved.sessions += 1
            if not dry:
                await store.sessions.update(sid, _moved(req), type=Session)
    async for key, sm in store.summaries.scan(">", SessionSummary):
        if sm.project == req.source:
            moved.summaries += 1
            if not dry:
                new_sm = msgspec.structs.replace(sm, project=req.into)
                await store.summaries.put(key, new_sm)
                await store.publish(SummaryAdded(summary=new_sm))
    async for key, m in store.memories.scan(">", Memory):
        if m.project == req.source:
            moved.memories += 1
            if not dry:
                new_m = msgspec.structs.replace(m, project=req.into)
                await store.memories.put(key, new_m)
                if not new_m.superseded_by:
                    await store.publish(MemoryAdded(memory=new_m))
    lessons = await store.client.bucket(LESSONS_BUCKET)
    async for key, lesson in lessons.scan(">", Lesson):
        if lesson.project == req.source:
            moved.lessons += 1
            if not dry:
                await lessons.put(key, msgspec.structs.replace(lesson, project=req.into))
    if not dry:
        await store.audit(
            "project-merge",
            [req.source, req.into],
            reason=f"merged project {req.source!r} into {req.into!r}",
            actor=req.agent_id,
            project=req.into,
        )
    return ProjectMergeOut(success=True, source=req.source, into=req.into, dry_run=dry, moved=moved)


def _moved_observation(req: ProjectMergeIn) -> Callable[[Observation], Observation | None]:
    def move(cur: Observation) -> Observation | None:
        if cur.project != req.source:
            return None  # moved meanwhile
        return msgspec.structs.replace(cur, project=req.into, revision=cur.revision + 1)

    return move


def _moved(req: ProjectMergeIn) -> Any:
    def move(cur: Session | None) -> Session | None:
        if cur is None or cur.project != req.source:
            return None  # gone, or moved meanwhile
        cur.project = req.into
        return cur

    return move
