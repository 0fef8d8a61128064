"""Crystals' wire: crystallize actions, list crystals, the automatic pass."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import msgspec

from functions.coordination.inputs import AgentId, Limit
from functions.coordination.records import Crystal
from functions.kernel.names import SOME_NAMES, Names, at_least_one_of, names
from functions.kernel.views import view

# To the type checker a view is its record (the same attributes); at run time it is the
# camelCase type `view` makes (functions.kernel.views).
if TYPE_CHECKING:
    CrystalView = Crystal
else:
    CrystalView = view(Crystal)


class CrystallizeIn(msgspec.Struct, rename="camel", kw_only=True):
    action_ids: Names
    project: str = ""
    session_id: str = ""
    agent_id: AgentId = ""

    def __post_init__(self) -> None:
        self.action_ids = names(self.action_ids)
        if not self.action_ids:
            raise msgspec.ValidationError("actionIds must name at least one action")


CrystallizeRequest = Annotated[
    CrystallizeIn, msgspec.Meta(extra_json_schema=at_least_one_of(actionIds=SOME_NAMES))
]
"""The actions to crystallize: one at least."""


class CrystalOut(msgspec.Struct):
    success: bool
    crystal: CrystalView


class CrystalListIn(msgspec.Struct, rename="camel", kw_only=True):
    project: str = ""
    session_id: str = ""
    limit: Limit = 20


class CrystalsOut(msgspec.Struct):
    success: bool
    crystals: list[CrystalView]


class CrystalAutoIn(msgspec.Struct, rename="camel", kw_only=True):
    older_than_days: Annotated[float, msgspec.Meta(ge=0, le=36_500)] = 7.0
    dry_run: bool = False
    project: str = ""


class CrystalGroup(msgspec.Struct, rename="camel", kw_only=True):
    group_key: str
    action_count: int
    action_ids: list[str]


class CrystalAutoOut(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    success: bool
    group_count: int
    crystal_ids: list[str]
    dry_run: bool = False
    groups: list[CrystalGroup] | None = None
