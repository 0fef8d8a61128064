"""The write path alone (AGENTMEMORY_SEARCH=off, as the default layout runs its memory
replicas) never loads the search index's libraries: numpy and faiss are ~30 MB of every
replica's memory that only the search worker uses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine import Client

HEAVY = ("_swigfaiss", "_multiarray_umath")
"""Shared objects of faiss and numpy, as they appear in /proc/<pid>/maps."""


def _loaded(pid: int) -> set[str]:
    maps = Path(f"/proc/{pid}/maps").read_text()
    return {lib for lib in HEAVY if lib in maps}


async def test_the_write_path_alone_loads_no_index_library(client: Client, spawn: Any) -> None:
    alone = spawn("workers.memory", env={"AGENTMEMORY_SEARCH": "off"})
    out = await client.call("mem::observe", {
        "hookType": "post_tool_use", "sessionId": "s1", "project": "p", "timestamp":
        "2026-12-01T10:00:00Z", "data": {"tool_name": "Bash", "tool_input": "make test",
                                         "tool_output": "2 failed, TS2345 in src/a.ts"},
    }, timeout=10)  # fmt: skip
    assert out["observationId"]
    await client.call("mem::remember", {"content": "the build needs node 20"}, timeout=10)
    assert _loaded(alone.pid) == set()
    # the same worker with retrieval in the process does load them (the check can fail)
    both = spawn("workers.memory", env={"EMBEDDING_PROVIDER": "none"})
    assert _loaded(both.pid) == set(HEAVY)
