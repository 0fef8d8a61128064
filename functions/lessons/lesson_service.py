"""The lesson operations (save, recall / search, list, reinforce / strengthen, delete),
served by the lifecycle worker beside its service, whose store, settings and clock they
use. Upstream's routes and ours both answer: `lessons/search` is `lessons/recall`,
`lessons/strengthen` is `lessons/reinforce`."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

import msgspec

from engine import Tool, operation
from functions.kernel.clock import when
from functions.kernel.owned import OwnedService, routes
from functions.kernel.records import Lesson
from functions.kernel.views import LessonView, as_view
from functions.lessons import recall as lessons
from functions.lessons.wire import (
    LessonIdRequest,
    LessonListIn,
    LessonOut,
    LessonRecallIn,
    LessonSaveIn,
    LessonsOut,
    ScoredLesson,
)

if TYPE_CHECKING:
    from functions.lifecycle.lifecycle_service import LifecycleService  # the owner, imported by it


rest = routes("lessons")


def _scored(found: list[tuple[float, Lesson]], strength_is_score: bool = False) -> LessonsOut:
    return LessonsOut(
        lessons=[
            ScoredLesson(
                score=s,
                confidence=round(lesson.strength, 4) if not strength_is_score else s,
                **msgspec.structs.asdict(lesson),
            )
            for s, lesson in found
        ]
    )


class LessonService(OwnedService["LifecycleService"]):
    """Served beside the worker's main service, over its store."""

    owner: LifecycleService

    def _now(self, req: Any) -> datetime:
        return when(req)

    @operation(
        "mem::lesson::save",
        description="Save a lesson learned from this session. Lessons have confidence that "
        "strengthens when reinforced and decays when unused; saving the same content again "
        "strengthens the existing lesson.",
        http=rest(
            "POST",
            "lessons",
            status=201,
            status_field="action",
            status_by={"created": 201, "strengthened": 200},
        ),
        tool=Tool("memory_lesson_save", tier="core"),
    )
    async def save(self, req: LessonSaveIn) -> LessonOut:
        lesson, created = await lessons.save(
            self.store, req, self.owner.config.decay, self._now(req)
        )
        return LessonOut(
            success=True,
            lesson=as_view(lesson, LessonView),
            action="created" if created else "strengthened",
        )

    @operation(
        "mem::lesson::recall",
        description="Search lessons by query; sorted by relevance times confidence. Use to "
        "check what was learned before making decisions.",
        http=rest("POST", "lessons/recall"),
        tool=Tool("memory_lesson_recall"),
    )
    async def recall(self, req: LessonRecallIn) -> LessonsOut:
        found = await lessons.recall(self.store, req, self.owner.config.decay, self._now(req))
        return _scored(found)

    @operation(
        "mem::lesson::search",
        description="Search lessons by query (upstream's route for recall)",
        http=rest("POST", "lessons/search"),
    )
    async def search(self, req: LessonRecallIn) -> LessonsOut:
        return await self.recall(req)

    @operation(
        "mem::lesson::list",
        description="Lessons by confidence (?project=&source=&minConfidence=&limit=)",
        http=rest("GET", "lessons"),
    )
    async def listing(self, req: LessonListIn) -> LessonsOut:
        found = await lessons.listing(self.store, req, self.owner.config.decay, self._now(req))
        return _scored(found, strength_is_score=True)

    @operation(
        "mem::lesson::reinforce",
        description="Reinforce a lesson that helped",
        http=rest("POST", "lessons/reinforce"),
    )
    async def reinforce(self, req: LessonIdRequest) -> LessonOut:
        lesson = await lessons.reinforce(
            self.store, req.id, self.owner.config.decay, self._now(req)
        )
        return LessonOut(success=True, lesson=as_view(lesson, LessonView), action="strengthened")

    @operation(
        "mem::lesson::strengthen",
        description="Strengthen a lesson that helped (upstream's route for reinforce)",
        http=rest("POST", "lessons/strengthen"),
    )
    async def strengthen(self, req: LessonIdRequest) -> LessonOut:
        return await self.reinforce(req)

    @operation(
        "mem::lesson::delete",
        description="Soft-delete a lesson by id: it leaves recall and lists; saving the same "
        "content again creates it afresh.",
        http=rest("POST", "lessons/delete"),
        tool=Tool("memory_lesson_delete"),
    )
    async def delete(self, req: LessonIdRequest) -> LessonOut:
        lesson = await lessons.delete(self.store, req.id, self._now(req))
        return LessonOut(success=True, lesson=as_view(lesson, LessonView), action="deleted")
