"""The follow-up signal of upstream's smart-search (#771): how often an agent's search is
followed, within a short window, by another search of the same session with a different
query whose results share nothing with the first (a sign the first one missed).

Retrieval notes each agent-initiated search (`note`: a session id given, not the viewer's,
some results); `mem::diagnostic::followup-stats` reads the counts (`read`). Unlike
upstream's in-process counters, these live in KV (`mem_followup`): they add up across
replicas and survive restarts. One row per session holds its last search.
"""

from __future__ import annotations

import time

import msgspec

from engine import Client
from functions.kernel.ids import kv_key
from functions.kernel.settings import kernel_settings

FOLLOWUP_BUCKET = "mem_followup"  # key: counts, last.<sessionId>
COUNTS = "counts"


class Counts(msgspec.Struct, kw_only=True):
    agent_initiated: int = 0
    followups: int = 0


class LastSearch(msgspec.Struct, kw_only=True):
    query: str
    ids: list[str]
    at: float


def window_seconds() -> int:
    """AGENTMEMORY_FOLLOWUP_WINDOW_SECONDS (upstream's; at least 1, default 30)."""
    return kernel_settings().followup_window


def is_followup(prior: LastSearch | None, query: str, ids: list[str], now: float) -> bool:
    """Within the window, another query, and no result in common (upstream's rule)."""
    if prior is None or now - prior.at > window_seconds():
        return False
    return prior.query != query and set(prior.ids).isdisjoint(ids)


async def note(client: Client, session_id: str, query: str, ids: list[str]) -> None:
    state = await client.bucket(FOLLOWUP_BUCKET)
    now = time.time()
    key = "last." + kv_key(session_id)
    prior: LastSearch | None = await state.get(key, LastSearch)
    await state.put(key, LastSearch(query=query, ids=ids, at=now))
    follow = is_followup(prior, query, ids, now)

    def bump(cur: Counts | None) -> Counts:
        c = cur or Counts()
        return Counts(agent_initiated=c.agent_initiated + 1, followups=c.followups + follow)

    await state.update(COUNTS, bump, type=Counts)


async def read(client: Client) -> Counts:
    got: Counts | None = await (await client.bucket(FOLLOWUP_BUCKET)).get(COUNTS, Counts)
    return got or Counts()
