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
from functions.kernel import clock
from functions.kernel.records import LESSONS_BUCKET, Lesson
from functions.kernel.store import MemoryStore
from functions.kernel.trust import write_path as trust
from functions.lessons.wire import LessonListIn, LessonRecallIn, LessonSaveIn
from functions.lifecycle.decay import current_lesson_strength, reinforce_lesson
from functions.lifecycle.settings import DecayConfig
from functions.quarantine.decisions import Decisions

_TOKEN = re.compile(r"[a-z0-9_./-]{2,}")


def tokens(text: str) -> set[str]:
    return set(_TOKEN.findall(text.lower()))


def lesson_id(project: str, agent: str, content: str) -> str:
    norm = " ".join(content.lower().split())
    return "lsn_" + hashlib.sha256(f"{project}\x1f{agent}\x1f{norm}".encode()).hexdigest()[:24]


async def save(
    store: MemoryStore, req: LessonSaveIn, cfg: DecayConfig, now: datetime
) -> tuple[Lesson, bool]:
    """The lesson, and whether it is new (saving known content reinforces it). Its words
    are judged as the agent's (`remember`), or as third-party text when it comes from an
    imported transcript."""
    source = trust.IMPORT if req.source == "import" else trust.REMEMBER
    words = {"content": req.content, "context": req.context, "tags": [*req.concepts, *req.tags]}
    verdict = trust.classify_value(words, source)
    text = trust.stored_text  # invisible characters out, then secrets
    content = text(req.content).strip()
    if not content:
        raise FunctionError("BAD_REQUEST", "content must not be blank", field="content")
    verdict = await trust.second_opinion(store.client, verdict, trust.stored_value(words), source)
    judged = trust.trust_of(verdict, source)
    project, agent = text(req.project), text(store.default_agent(req.agent_id))
    lid = lesson_id(project, agent, content)
    at = clock.iso(now)

    tags = [text(c) for c in dict.fromkeys([*req.concepts, *req.tags]) if c][:20]
    created = [True]

    def upsert(cur: Lesson | None) -> Lesson:
        if cur is not None and not cur.deleted:
            created[0] = False
            if req.context and not cur.context:
                cur.context = text(req.context)
            # the same words again: a hold stays, and a suspect save holds what it reinforces
            cur.trust = trust.either(judged, cur.trust)
            return reinforce_lesson(cur, now, cfg)
        return Lesson(
            id=lid,
            content=content,
            context=text(req.context),
            project=project,
            agent_id=agent,
            concepts=tags,
            tags=tags,
            source=text(req.source) or "manual",
            created_at=at,
            updated_at=at,
            strength=1.0 if req.confidence is None else req.confidence,
            strength_at=at,
            source_ids=[text(s) for s in req.source_ids][:32],
            trust=judged,
        )

    state = await store.client.bucket(LESSONS_BUCKET)
    out: Lesson | None = await state.update(lid, upsert, type=Lesson)
    if out is None:  # update() returns None only when upsert does; it never does
        raise FunctionError("INTERNAL", f"lesson {lid} was not written")
    if created[0]:
        trust.count(store.client, judged)
    return out, created[0]


async def delete(store: MemoryStore, lid: str, now: datetime) -> Lesson:
    """Soft delete: out of recall and listings; saving the same content revives it."""
    state = await store.client.bucket(LESSONS_BUCKET)

    def gone(cur: Lesson | None) -> Lesson | None:
        if cur is None or cur.deleted:
            return None
        cur.deleted, cur.updated_at = True, clock.iso(now)
        return cur

    out: Lesson | None = await state.update(lid, gone, type=Lesson)
    if out is None or not out.deleted:
        raise FunctionError("NOT_FOUND", f"no lesson {lid}", field="lessonId")
    await store.audit("lesson_delete", [lid], project=out.project)
    return out


async def listing(
    store: MemoryStore, req: LessonListIn, cfg: DecayConfig, now: datetime
) -> list[tuple[float, Lesson]]:
    state = await store.client.bucket(LESSONS_BUCKET)
    agent = store.default_agent(req.agent_id)
    decisions = await Decisions.load(store.client)
    out: list[tuple[float, Lesson]] = []
    async for _, lesson in state.scan(">", Lesson):
        if lesson.deleted or (req.project and lesson.project != req.project):
            continue
        if decisions.held(lesson.id, lesson.trust):
            continue  # quarantined: listed by GET quarantine, not here
        if (req.source and lesson.source != req.source) or not store.visible(
            lesson.agent_id, agent
        ):
            continue
        strength = current_lesson_strength(lesson, now, cfg)
        if strength >= req.min_confidence:
            out.append((round(strength, 4), lesson))
    out.sort(key=lambda x: (-x[0], x[1].id))
    return out[: req.limit]


async def reinforce(store: MemoryStore, lid: str, cfg: DecayConfig, now: datetime) -> Lesson:
    state = await store.client.bucket(LESSONS_BUCKET)
    out: Lesson | None = await state.update(
        lid,
        lambda cur: reinforce_lesson(cur, now, cfg) if cur and not cur.deleted else None,
        type=Lesson,
    )
    if out is None or out.deleted:
        raise FunctionError("NOT_FOUND", f"no lesson {lid}", field="lessonId")
    return out


async def recall(
    store: MemoryStore, req: LessonRecallIn, cfg: DecayConfig, now: datetime
) -> list[tuple[float, Lesson]]:
    """Best `limit` lessons: token overlap with the query (all lessons when the query is
    empty) times current strength. Streams the bucket; holds only the top `limit`."""
    state = await store.client.bucket(LESSONS_BUCKET)
    q = tokens(req.query)
    agent = store.default_agent(req.agent_id)
    best: list[tuple[float, str, Lesson]] = []
    decisions = await Decisions.load(store.client)
    async for _, lesson in state.scan(">", Lesson):
        if lesson.deleted or (req.project and lesson.project != req.project):
            continue
        if decisions.held(lesson.id, lesson.trust):
            continue  # quarantined: never recalled into an agent's context
        if not store.visible(lesson.agent_id, agent):
            continue
        strength = current_lesson_strength(lesson, now, cfg)
        if strength < req.min_confidence:
            continue
        if q:
            mine = tokens(
                f"{lesson.content} {lesson.context} {' '.join([*lesson.concepts, *lesson.tags])}"
            )
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
