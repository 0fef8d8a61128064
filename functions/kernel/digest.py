"""Following MEM_EVENTS for the read models the lifecycle keeps (the knowledge graph, the
project profiles): one reader, several sinks, each with its own cursor.

A run reads the events after the smallest cursor in batches of `batch` (a fresh consumer
per batch, so a slow batch never outlives its consumer), hands each sink the events past
its own cursor, then stores that cursor (`mem_lifecycle/cursor.<sink>`). A crash between a
sink's writes and its cursor replays the batch, which the sinks fold idempotently (every
record they write remembers the last sequence folded into it). Only one batch of events
is ever held in memory.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import Protocol

import msgspec

from engine import Bucket
from functions.kernel.records import EVENTS_SUBJECT, MemEvent
from functions.kernel.store import MemoryStore

_decoder = msgspec.json.Decoder(MemEvent)


class Sink(Protocol):
    name: str

    def apply(self, batch: list[tuple[int, MemEvent]]) -> Awaitable[dict[str, int]]: ...


def cursor_key(name: str) -> str:
    return f"cursor.{name}"


async def digest(
    store: MemoryStore,
    life: Bucket,
    sinks: list[Sink],
    *,
    batch: int = 1000,
    limit: int = 200_000,
    fault: Callable[[str, int], None] | None = None,
    stop: Callable[[], bool] | None = None,
) -> dict[str, int]:
    """Fold the events not yet seen into each sink, at most about `limit` per run (a run
    must end well within its lease; the next run goes on); returns events per sink. When
    `stop()` turns true (the worker drains) the run ends after the sink in hand: the
    cursors of the sinks that folded the batch are stored, so the next run resumes there."""
    cursors: dict[str, int] = {}
    for s in sinks:
        got: int | None = await life.get(cursor_key(s.name), int)
        cursors[s.name] = got or 0
    folded = dict.fromkeys(cursors, 0)
    after = min(cursors.values(), default=0)
    start = after
    while after - start < limit:
        if stop is not None and stop():
            return folded
        events: list[tuple[int, MemEvent]] = []
        last = after
        reader = store.events.read(after=after, subject=f"{EVENTS_SUBJECT}.>", page=batch)
        async with contextlib.aclosing(reader) as stream:
            async for msg in stream:
                last = msg.seq
                with contextlib.suppress(msgspec.DecodeError, msgspec.ValidationError):
                    events.append((last, _decoder.decode(msg.data)))  # unreadable: skipped
                if last - after >= batch:
                    break
        if last == after:
            return folded
        for sink in sinks:
            if cursors[sink.name] >= last:
                continue
            if stop is not None and stop():
                # a sink's batch can take seconds on a large store: the stop does not wait
                # for the next ones, whose cursors stay where they are for the next run
                return folded
            mine = [(s, e) for s, e in events if s > cursors[sink.name]]
            await sink.apply(mine)
            if fault is not None:
                fault(sink.name, last)
            await life.put(cursor_key(sink.name), last)
            cursors[sink.name] = last
            folded[sink.name] += len(mine)
        after = last
    return folded
