"""Synthetic records for lifecycle tests, written straight into the real buckets."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

from functions.kernel.clock import iso
from functions.kernel.records import Memory, MemoryAdded, Observation, Session
from functions.kernel.store import MemoryStore

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def at(**delta: float) -> datetime:
    return T0 + timedelta(**delta)


def obs(
    session: str,
    n: int,
    *,
    type: str = "file_edit",
    files: list[str] | None = None,
    title: str = "",
    concepts: list[str] | None = None,
    when: datetime = T0,
    importance: int = 6,
    project: str = "proj",
) -> Observation:
    oid = "obs_" + hashlib.sha256(f"{session}/{n}".encode()).hexdigest()[:24]
    return Observation(
        id=oid,
        session_id=session,
        project=project,
        hook_type="post_tool_use",
        timestamp=iso(when + timedelta(seconds=n)),
        type=type,
        title=title or (f"Edited {files[0]}" if files else "x"),
        files=files or [],
        concepts=concepts or [],
        importance=importance,
    )


async def put_obs(store: MemoryStore, *items: Observation) -> None:
    for o in items:
        await store.put_observation(o)


async def put_old_and_new(store: MemoryStore) -> None:
    """The compaction fixture: s/1 holds old.py and legacy alone; s/2 and s/3 (200 days
    later) both hold new.py and fresh."""
    await put_obs(
        store,
        obs("s", 1, files=["old.py"], concepts=["legacy"], when=at(days=0)),
        obs("s", 2, files=["new.py"], concepts=["fresh"], when=at(days=0)),
        obs("s", 3, files=["new.py"], concepts=["fresh"], when=at(days=200)),
    )


async def put_session(
    store: MemoryStore, sid: str, last_seen: datetime, status: str = "active"
) -> None:
    await store.sessions.put(
        sid,
        Session(
            id=sid,
            project="proj",
            started_at=iso(last_seen - timedelta(hours=1)),
            last_seen=iso(last_seen),
            status=status,  # type: ignore[arg-type]
        ),
    )


async def put_memory(store: MemoryStore, m: Memory) -> None:
    await store.publish(MemoryAdded(memory=m), msg_id=m.id)
    await store.memories.put(m.id, m)
