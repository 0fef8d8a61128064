"""Requests of the lifecycle functions (camelCase on the wire, like the memory API). Every
field has a default where a cron firing (payload `{}`) must be accepted."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from functions.names import Names, at_least_one_of, names
from functions.records import Lesson, SessionSummary
from functions.views import view

Text = Annotated[str, msgspec.Meta(min_length=1, max_length=20_000)]
Id = Annotated[str, msgspec.Meta(min_length=1, max_length=512)]


class Clocked(msgspec.Struct, rename="camel", kw_only=True):
    now: (
        Annotated[str, msgspec.Meta(max_length=64, extra_json_schema={"format": "date-time"})]
        | None
    ) = None
    """ISO-8601 time to run at; absent = the wall clock. Lets tests and replays drive time."""


class SummarizeIn(Clocked, kw_only=True):
    session_id: Id


class SweepIn(Clocked, kw_only=True):
    stale_hours: Annotated[float, msgspec.Meta(gt=0)] | None = None


class ConsolidateIn(Clocked, kw_only=True):
    tier: Literal["", "episodic", "semantic", "procedural"] = ""
    """Upstream's target tier. The pipeline is one pass (episodic summaries feed the
    semantic and procedural tiers), so every tier is brought up to date whichever is named."""


class DecayIn(Clocked, kw_only=True):
    pass


class ReinforceIn(Clocked, kw_only=True):
    ids: Annotated[list[Id], msgspec.Meta(min_length=1, max_length=1000)]


class AutoForgetIn(Clocked, kw_only=True):
    dry_run: bool = False


Unit = Annotated[float, msgspec.Meta(ge=0, le=1)]


class LessonSaveIn(Clocked, kw_only=True):
    content: Text
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
        self.id = self.id or self.lesson_id
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


class ProjectProfileIn(msgspec.Struct, rename="camel", kw_only=True):
    project: Annotated[str, msgspec.Meta(min_length=1, max_length=512)]
    refresh: bool = False
    """Fold MEM_EVENTS that arrived since the last run first (read-your-writes)."""


class DigestIn(Clocked, kw_only=True):
    pass


# ---- responses ------------------------------------------------------------------------
SummaryView = view(SessionSummary)
LessonView = view(Lesson)
ScoredLesson = msgspec.defstruct(
    "ScoredLesson",
    [("score", float), ("confidence", float)],
    bases=(LessonView,),
    rename="camel",
    kw_only=True,
)
"""A lesson with its relevance to the query (`score`) and current strength (`confidence`)."""


class SummarizeOut(msgspec.Struct, kw_only=True):
    success: bool
    written: bool
    summary: SummaryView  # type: ignore[valid-type]


class SweepOut(msgspec.Struct, kw_only=True):
    abandoned: list[str]
    summarized: list[str]


class Reinforced(msgspec.Struct, kw_only=True):
    id: str
    strength: float
    tier: str


class ReinforceOut(msgspec.Struct, kw_only=True):
    memories: list[Reinforced]


class RetentionOut(msgspec.Struct, rename="camel", kw_only=True):
    purged: int
    keep_months: int


class LessonOut(msgspec.Struct, kw_only=True, omit_defaults=True):
    success: bool
    lesson: LessonView  # type: ignore[valid-type]
    action: str = ""
    """created or strengthened (a save of known content), deleted."""


class LessonsOut(msgspec.Struct, kw_only=True):
    lessons: list[ScoredLesson]  # type: ignore[valid-type]


class DigestOut(msgspec.Struct, kw_only=True):
    folded: dict[str, int]


class ProfileOut(msgspec.Struct, kw_only=True, omit_defaults=True):
    project: str
    profile: dict[str, Any] | None
    """Top concepts, files, commands, errors and conventions (see mem::profile)."""
    reason: str | None = None
    """Why there is no profile (`no_observations`)."""


class GraphQueryOut(msgspec.Struct, rename="camel", kw_only=True):
    nodes: list[dict[str, Any]]
    edges: list[dict[str, Any]]
    depth: int
    total_nodes: int
    total_edges: int
    truncated: bool
    limit: int
    offset: int


class GraphStatsOut(msgspec.Struct, rename="camel", kw_only=True):
    total_nodes: int
    total_edges: int
    nodes_by_type: dict[str, int]
    edges_by_type: dict[str, int]
    expired_edges: int
    compacted_at: str = ""
