"""`GET memories` in upstream's shape (0.9.30): newest first by `updatedAt` (else
`createdAt`), ties by id descending, paged by offset or by upstream's keyset cursor, with
the total, optional facets and a keyword filter."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from functions.kernel.records import Memory
from functions.kernel.store import MemoryStore
from functions.kernel.views import MemoryView, as_view
from functions.memory import paging
from functions.memory.wire import (
    FacetCount,
    MemoriesIn,
    MemoriesOut,
    MemoryFacets,
    MemorySearch,
)


def sort_key(m: Memory) -> tuple[str, str]:
    return (m.updated_at or m.created_at, m.id)


def _matches(words: list[str]) -> Callable[[Memory], bool]:
    def match(m: Memory) -> bool:
        text = " ".join([m.title, m.content, *m.concepts]).lower()
        return all(w in text for w in words)

    return match


def _tally(values: list[str]) -> list[FacetCount]:
    counts = Counter(v for v in values if v)
    return [
        FacetCount(value=v, count=n)
        for v, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    ]


async def list_memories(store: MemoryStore, req: MemoriesIn) -> MemoriesOut:
    every = [
        m
        for m in await store.load_all(store.memories, Memory)
        if store.visible(m.agent_id, req.agent_id)
        and (not req.project or m.project == req.project)
        and (not req.type or m.type == req.type)
    ]
    if req.count:
        return MemoriesOut(
            total=len(every), latest_count=sum(1 for m in every if not m.superseded_by)
        )
    rows = [m for m in every if not (req.latest and m.superseded_by)]
    words = req.q.lower().split()
    if words:
        rows = [m for m in rows if _matches(words)(m)]
    rows = paging.newest_first(rows, sort_key)
    chosen, nxt = paging.page(rows, sort_key, limit=req.limit, offset=req.offset, cursor=req.cursor)
    out = MemoriesOut(
        memories=as_view(chosen, list[MemoryView]),
        total=len(rows),
        offset=req.offset if not req.cursor else 0,
        limit=req.limit,
        next_cursor=nxt,
    )
    if words:
        out.search = MemorySearch(query=req.q)
    if req.facets:
        current = [m for m in rows if not m.superseded_by]
        out.facets = MemoryFacets(
            projects=_tally([m.project for m in current]),
            agents=_tally([m.agent_id for m in current]),
            types=_tally([m.type for m in current]),
        )
    return out
