"""`GET observations/locate` (upstream 0.9.30, src/triggers/api.ts): the session of each
observation id, so a client holding search hits can open their sessions. Ids that are not
stored (and memory ids, `mem_…`) are left out, as upstream leaves out what its index does
not hold."""

from __future__ import annotations

from typing import Annotated

import msgspec

from functions.kernel.names import NONBLANK, names
from functions.kernel.store import MemoryStore

MAX_IDS = 200

MAX_IDS_CHARS = 40_000
"""200 ids of up to 200 characters and their commas; a longer query string would pass the
HTTP server's URL limit (about 64 KiB), which answers a plain-text 400 of its own."""

SomeIds = Annotated[
    str,
    msgspec.Meta(min_length=1, max_length=MAX_IDS_CHARS, pattern=NONBLANK.replace("[^", "[^,")),
]
"""Comma-separated ids, one at least (a query string holds one value per name)."""


class LocateIn(msgspec.Struct, rename="camel", kw_only=True):
    ids: SomeIds
    """Observation ids, comma-separated; the first 200 are looked up."""
    agent_id: str = ""


class LocateOut(msgspec.Struct, kw_only=True):
    sessions: dict[str, str]
    """Observation id -> its session id."""


async def locate(store: MemoryStore, req: LocateIn) -> LocateOut:
    wanted = [i for i in dict.fromkeys(names(req.ids)) if not i.startswith("mem_")][:MAX_IDS]
    found = await store.get_observations(wanted)
    got = [found.get(i) for i in wanted]
    return LocateOut(
        sessions={
            o.id: o.session_id
            for o in got
            if o is not None and store.visible(o.agent_id, req.agent_id)
        }
    )
