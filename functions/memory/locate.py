"""`GET observations/locate` (upstream 0.9.30, src/triggers/api.ts): the session of each
observation id, so a client holding search hits can open their sessions. Ids that are not
stored (and memory ids, `mem_…`) are left out, as upstream leaves out what its index does
not hold."""

from __future__ import annotations

import asyncio
from typing import Annotated

import msgspec

from functions.kernel.names import SOME_NAMES, Names, names
from functions.kernel.records import Observation
from functions.kernel.store import MemoryStore

MAX_IDS = 200


class LocateIn(msgspec.Struct, rename="camel", kw_only=True):
    ids: Names
    """Observation ids, comma-separated or repeated; the first 200 are looked up."""
    agent_id: str = ""

    def __post_init__(self) -> None:
        self.ids = names(self.ids)


LocateRequest = Annotated[
    LocateIn, msgspec.Meta(extra_json_schema={"properties": {"ids": SOME_NAMES}})
]


class LocateOut(msgspec.Struct, kw_only=True):
    sessions: dict[str, str]
    """Observation id -> its session id."""


async def locate(store: MemoryStore, req: LocateIn) -> LocateOut:
    wanted = [i for i in dict.fromkeys(req.ids) if not i.startswith("mem_")][:MAX_IDS]
    got = await asyncio.gather(*(store.get(store.observations, i, Observation) for i in wanted))
    return LocateOut(
        sessions={
            o.id: o.session_id
            for o in got
            if o is not None and store.visible(o.agent_id, req.agent_id)
        }
    )
