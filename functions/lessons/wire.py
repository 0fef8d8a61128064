"""Requests and replies of the lesson operations (camelCase on the wire)."""

from __future__ import annotations

from typing import Annotated

import msgspec

from functions.kernel.clock import Clocked
from functions.kernel.names import VISIBLE, Names, at_least_one_of, names
from functions.kernel.views import LessonView

Text = Annotated[str, msgspec.Meta(min_length=1, max_length=20_000)]
Content = Annotated[str, msgspec.Meta(min_length=1, max_length=20_000, pattern=VISIBLE)]
"""A lesson's words: one character at least that the write path keeps (blank and invisible
characters are removed before it is stored)."""


Unit = Annotated[float, msgspec.Meta(ge=0, le=1)]


class LessonSaveIn(Clocked, kw_only=True):
    content: Content
    context: str = ""
    project: str = ""
    agent_id: str = ""
    concepts: Names = msgspec.field(default_factory=list)
    tags: Names = msgspec.field(default_factory=list)
    """Upstream's name for concepts (comma-separated in its tools)."""
    confidence: Unit | None = None
    """Initial strength (0..1); default full strength."""
    source: str = "manual"
    source_ids: list[str] = msgspec.field(default_factory=list)

    def __post_init__(self) -> None:
        self.concepts, self.tags = names(self.concepts), names(self.tags)


class LessonRecallIn(Clocked, kw_only=True):
    query: Annotated[str, msgspec.Meta(max_length=2000)] = ""
    project: str = ""
    agent_id: str = ""
    limit: Annotated[int, msgspec.Meta(ge=1, le=100)] = 10
    min_confidence: Unit = 0.0
    """Lessons whose current strength is below this are left out."""


class LessonListIn(Clocked, kw_only=True):
    project: str = ""
    source: str = ""
    agent_id: str = ""
    min_confidence: Unit = 0.0
    limit: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 50


class LessonReinforceIn(Clocked, kw_only=True):
    id: str = ""
    lesson_id: str = ""
    """Upstream's name for `id`."""

    def __post_init__(self) -> None:
        # both given: upstream's name is the one its clients (and links) fill in
        self.id = self.lesson_id or self.id
        if not self.id:
            raise ValueError("Object missing required field `lessonId`")


LessonIdRequest = Annotated[
    LessonReinforceIn,
    msgspec.Meta(
        extra_json_schema=at_least_one_of(
            lessonId={"type": "string", "minLength": 1}, id={"type": "string", "minLength": 1}
        )
    ),
]
"""A lesson by `lessonId` (upstream) or `id`."""


class ScoredLesson(LessonView, kw_only=True):
    """A lesson with its relevance to the query (`score`) and current strength (`confidence`)."""

    score: float
    confidence: float


class LessonOut(msgspec.Struct, kw_only=True, omit_defaults=True):
    success: bool
    lesson: LessonView
    action: str = ""
    """created or strengthened (a save of known content), deleted."""


class LessonsOut(msgspec.Struct, kw_only=True):
    lessons: list[ScoredLesson]
