"""Lessons: saved on purpose (`memory_lesson_save`), recalled by relevance x strength,
reinforced when they helped. Saving the same lesson again reinforces it instead of making
a copy (its id is a hash of project, agent and normalised content)."""

from __future__ import annotations

import hashlib
import heapq
import math
import re
from datetime import datetime

from engine import FunctionError
from functions.lifecycle import clock
from functions.lifecycle.config import DecayConfig
from functions.lifecycle.decay import current_lesson_strength, reinforce_lesson
from functions.lifecycle.wire import LessonRecallIn, LessonSaveIn
from functions.memory.scrub import scrub
from functions.memory.store import MemoryStore
from functions.records import LESSONS_BUCKET, Lesson

_TOKEN = re.compile(r"[a-z0-9_./-]{2,}")


def tokens(text: str) -> set[str]:
    return set(_TOKEN.findall(text.lower()))


def lesson_id(project: str, agent: str, content: str) -> str:
    norm = " ".join(content.lower().split())
    return "lsn_" + hashlib.sha256(f"{project}\x1f{agent}\x1f{norm}".encode()).hexdigest()[:24]


async def save(store: MemoryStore, req: LessonSaveIn, cfg: DecayConfig, now: datetime) -> Lesson:
    content = scrub(req.content).strip()
    if not content:
        raise FunctionError("BAD_REQUEST", "content must not be blank", field="content")
    project, agent = scrub(req.project), scrub(store.default_agent(req.agent_id))
    lid = lesson_id(project, agent, content)
    at = clock.iso(now)

    def upsert(cur: Lesson | None) -> Lesson:
        if cur is not None:
            return reinforce_lesson(cur, now, cfg)
        return Lesson(
            id=lid,
            content=content,
            context=scrub(req.context),
            project=project,
            agent_id=agent,
            concepts=[scrub(c) for c in req.concepts if c][:20],
            created_at=at,
            updated_at=at,
            strength_at=at,
            source_ids=[scrub(s) for s in req.source_ids][:32],
        )

    state = await store.client.state(LESSONS_BUCKET)
    out: Lesson | None = await state.update(lid, upsert, type=Lesson)
    if out is None:  # update() returns None only when upsert does; it never does
        raise FunctionError("INTERNAL", f"lesson {lid} was not written")
    return out


async def reinforce(store: MemoryStore, lid: str, cfg: DecayConfig, now: datetime) -> Lesson:
    state = await store.client.state(LESSONS_BUCKET)
    out: Lesson | None = await state.update(
        lid, lambda cur: reinforce_lesson(cur, now, cfg) if cur else None, type=Lesson
    )
    if out is None:
        raise FunctionError("NOT_FOUND", f"no lesson {lid}", field="id")
    return out


async def recall(
    store: MemoryStore, req: LessonRecallIn, cfg: DecayConfig, now: datetime
) -> list[tuple[float, Lesson]]:
    """Best `limit` lessons: token overlap with the query (all lessons when the query is
    empty) times current strength. Streams the bucket; holds only the top `limit`."""
    state = await store.client.state(LESSONS_BUCKET)
    q = tokens(req.query)
    agent = store.default_agent(req.agent_id)
    best: list[tuple[float, str, Lesson]] = []
    async for _, lesson in state.scan(">", Lesson):
        if req.project and lesson.project != req.project:
            continue
        if not store.visible(lesson.agent_id, agent):
            continue
        strength = current_lesson_strength(lesson, now, cfg)
        if q:
            mine = tokens(f"{lesson.content} {lesson.context} {' '.join(lesson.concepts)}")
            overlap = len(q & mine)
            if not overlap:
                continue
            score = overlap / math.sqrt(len(mine) or 1) * strength
        else:
            score = strength
        item = (score, lesson.id, lesson)
        if len(best) < req.limit:
            heapq.heappush(best, item)
        elif item[:2] > best[0][:2]:
            heapq.heapreplace(best, item)
    best.sort(key=lambda x: (-x[0], x[1]))
    return [(round(s, 4), lesson) for s, _, lesson in best]
