"""Buckets that hold the memory domain's records: the KV browser shows them and does not
write them. A memory, an observation or a session changes through the function that keeps
the indexes and the audit log right (`mem::remember` makes a new version, `mem::forget`
deletes and audits), from the viewer or the console's audited forget; a raw KV write
would leave the indexes stale and no trace of who did it."""

from __future__ import annotations

from typing import Any

FORGET_BY = {"mem_memories": "memoryIds", "mem_observations": "observationIds"}
"""Buckets whose records the console can forget (through `mem::forget`), by its field."""


def guarded(bucket: str, prefixes: tuple[str, ...]) -> bool:
    return any(bucket.startswith(p) for p in prefixes)


def viewer_path(bucket: str, key: str, value: Any) -> str:
    """Where the viewer shows this record (a hash route), or "" when it does not."""
    if bucket == "mem_memories":
        return f"#memories/{key}"
    if bucket == "mem_sessions":
        return f"#sessions/{key}"
    if bucket == "mem_observations" and isinstance(value, dict):
        return f"#sessions/{value.get('session_id', '')}?obs={key}"
    return ""


def refusal(bucket: str) -> str:
    how = (
        "mem::remember (an edit is a new version) or mem::forget (audited)"
        if bucket in FORGET_BY
        else "the memory functions that own it"
    )
    return (
        f"{bucket} holds memory records; the KV browser does not write them: change them "
        f"through {how}, e.g. from the viewer"
    )
