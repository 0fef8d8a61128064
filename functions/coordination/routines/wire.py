"""Routines' wire: create and list templates, run one, read a run's progress."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import msgspec

from functions.coordination.inputs import AgentId, Id, Text, Title
from functions.coordination.records import Routine, RoutineRun
from functions.kernel.names import Names, names
from functions.kernel.views import view

# To the type checker a view is its record (the same attributes); at run time it is the
# camelCase type `view` makes (functions.kernel.views).
if TYPE_CHECKING:
    RoutineView = Routine
    RunView = RoutineRun
else:
    RoutineView = view(Routine)
    RunView = view(RoutineRun)


class StepIn(msgspec.Struct, rename="camel", kw_only=True):
    title: Title
    order: int | None = None
    description: Text = ""
    action_template: dict[str, Any] = msgspec.field(default_factory=dict)
    depends_on: list[int] = msgspec.field(default_factory=list)


class RoutineCreateIn(msgspec.Struct, rename="camel", kw_only=True):
    name: Title
    steps: Annotated[list[StepIn], msgspec.Meta(min_length=1, max_length=200)]
    description: Text = ""
    frozen: bool = True
    tags: Names = msgspec.field(default_factory=list)
    agent_id: AgentId = ""

    def __post_init__(self) -> None:
        self.tags = names(self.tags)


class RoutineOut(msgspec.Struct):
    success: bool
    routine: RoutineView


class RoutineListIn(msgspec.Struct, rename="camel", kw_only=True):
    frozen: bool | None = None


class RoutinesOut(msgspec.Struct):
    success: bool
    routines: list[RoutineView]


class RoutineRunIn(msgspec.Struct, rename="camel", kw_only=True):
    routine_id: Id
    project: str = ""
    initiated_by: AgentId = ""
    overrides: dict[str, dict[str, Any]] = msgspec.field(default_factory=dict)
    """Per step order: title, description, priority, tags for that run."""


class RoutineRunOut(msgspec.Struct, rename="camel", kw_only=True):
    success: bool
    run: RunView
    actions_created: int


class RoutineStatusIn(msgspec.Struct, rename="camel", kw_only=True):
    run_id: Id


class StepState(msgspec.Struct, rename="camel", kw_only=True):
    action_id: str
    status: str
    title: str


class Progress(msgspec.Struct, kw_only=True):
    total: int
    done: int
    active: int
    pending: int
    blocked: int
    cancelled: int


class RoutineStatusOut(msgspec.Struct):
    success: bool
    run: RunView
    actions: list[StepState]
    progress: Progress
