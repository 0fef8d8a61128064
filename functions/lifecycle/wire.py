"""Requests of the lifecycle functions (camelCase on the wire, like the memory API). Every
field has a default where a cron firing (payload `{}`) must be accepted."""

from __future__ import annotations

from typing import Annotated

import msgspec

Text = Annotated[str, msgspec.Meta(min_length=1, max_length=20_000)]
Id = Annotated[str, msgspec.Meta(min_length=1, max_length=512)]


class Clocked(msgspec.Struct, rename="camel", kw_only=True):
    now: str = ""
    """ISO-8601 time to run at; empty = the wall clock. Lets tests and replays drive time."""


class SummarizeIn(Clocked, kw_only=True):
    session_id: Id


class SweepIn(Clocked, kw_only=True):
    stale_hours: Annotated[float, msgspec.Meta(gt=0)] | None = None


class ConsolidateIn(Clocked, kw_only=True):
    pass


class DecayIn(Clocked, kw_only=True):
    pass


class ReinforceIn(Clocked, kw_only=True):
    ids: Annotated[list[Id], msgspec.Meta(min_length=1, max_length=1000)]


class AutoForgetIn(Clocked, kw_only=True):
    dry_run: bool = False


class LessonSaveIn(Clocked, kw_only=True):
    content: Text
    context: str = ""
    project: str = ""
    agent_id: str = ""
    concepts: list[str] = msgspec.field(default_factory=list)
    source_ids: list[str] = msgspec.field(default_factory=list)


class LessonRecallIn(Clocked, kw_only=True):
    query: Annotated[str, msgspec.Meta(max_length=2000)] = ""
    project: str = ""
    agent_id: str = ""
    limit: Annotated[int, msgspec.Meta(ge=1, le=100)] = 10


class LessonReinforceIn(Clocked, kw_only=True):
    id: Id


class ProjectProfileIn(msgspec.Struct, rename="camel", kw_only=True):
    project: Annotated[str, msgspec.Meta(min_length=1, max_length=512)]
    refresh: bool = False
    """Fold MEM_EVENTS that arrived since the last run first (read-your-writes)."""


class DigestIn(Clocked, kw_only=True):
    pass
