"""Memory state as files: one `<bucket>.jsonl` per bucket of record state, a line per key
(`{"k": key, "v": value as stored}`, sorted by key), so an unchanged state writes the same
bytes (no commit), and a snapshot's diff is a diff of records. Restoring writes back what
differs, deletes what the snapshot did not hold, and tells the indexes (MEM_EVENTS)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import msgspec

from engine import Bucket, Client
from functions.kernel.observation_index import key_of
from functions.kernel.observation_records import ObservationRecords
from functions.kernel.records import (
    COMMITS_BUCKET,
    FACETS_BUCKET,
    INSIGHTS_BUCKET,
    LESSONS_BUCKET,
    MEMORIES_BUCKET,
    OBSERVATIONS_BUCKET,
    RELATIONS_BUCKET,
    SESSIONS_BUCKET,
    SLOTS_BUCKET,
    SUMMARIES_BUCKET,
    Memory,
    MemoryAdded,
    Observation,
    RecordsRemoved,
    SessionSummary,
    SummaryAdded,
)
from functions.kernel.store import MemoryStore, events_stream

BUCKETS = (
    SESSIONS_BUCKET,
    OBSERVATIONS_BUCKET,
    MEMORIES_BUCKET,
    SUMMARIES_BUCKET,
    LESSONS_BUCKET,
    SLOTS_BUCKET,
    FACETS_BUCKET,
    RELATIONS_BUCKET,
    COMMITS_BUCKET,
    INSIGHTS_BUCKET,
)
"""The record state a snapshot holds. Read models (search indexes, the graph, profiles)
are rebuilt from the records' events; dedup keys, the audit log and lifecycle cursors are
bookkeeping, not memory."""
FORMAT = "agentmemory-snapshot/1"
REMOVED = "snapshot-restore"

Records = dict[str, bytes]
"""A bucket's state: key -> the value's JSON as stored."""


class _Line(msgspec.Struct):
    k: str
    v: msgspec.Raw


_encode = msgspec.json.Encoder().encode
_line = msgspec.json.Decoder(_Line)


def file_of(bucket: str) -> str:
    return f"{bucket}.jsonl"


async def read(client: Client, bucket: str) -> Records:
    if bucket == OBSERVATIONS_BUCKET:
        # Observations are records on MEM_EVENTS now; the file keeps the bucket's name and
        # its lines (key: the id as the bucket keyed it), so old snapshots restore as ever.
        records = await ObservationRecords(client, events_stream(client)).open()
        return {key_of(o.id): _encode(o) async for o in records.scan()}
    state = await client.bucket(bucket)
    return {k: bytes(v) async for k, v in state.scan(">", msgspec.Raw)}


def encode(records: Records) -> bytes:
    return b"".join(b'{"k":' + _encode(k) + b',"v":' + records[k] + b"}\n" for k in sorted(records))


def decode(text: bytes) -> Records:
    out: Records = {}
    for raw in text.splitlines():
        if raw.strip():
            line = _line.decode(raw)
            out[line.k] = bytes(line.v)
    return out


async def dump(client: Client, repo: Path) -> dict[str, int]:
    """Write every bucket's file; the number of records of each."""
    counts: dict[str, int] = {}
    for bucket in BUCKETS:
        records = await read(client, bucket)
        await asyncio.to_thread((repo / file_of(bucket)).write_bytes, encode(records))
        counts[bucket] = len(records)
    meta = {"format": FORMAT, "buckets": list(BUCKETS)}
    await asyncio.to_thread(
        (repo / "meta.json").write_bytes, msgspec.json.format(_encode(meta)) + b"\n"
    )
    return counts


class Change(msgspec.Struct, kw_only=True):
    added: list[str] = msgspec.field(default_factory=list)
    removed: list[str] = msgspec.field(default_factory=list)
    changed: list[str] = msgspec.field(default_factory=list)


def compare(old: Records, new: Records) -> Change:
    return Change(
        added=sorted(new.keys() - old.keys()),
        removed=sorted(old.keys() - new.keys()),
        changed=sorted(k for k in old.keys() & new.keys() if old[k] != new[k]),
    )


async def restore(store: MemoryStore, bucket: str, wanted: Records) -> Change:
    """Make `bucket` hold exactly `wanted`; what changed (keys)."""
    if bucket == OBSERVATIONS_BUCKET:
        return await _restore_observations(store, wanted)
    state: Bucket = await store.client.bucket(bucket)
    current = await read(store.client, bucket)
    change = compare(current, wanted)
    for k in (*change.added, *change.changed):
        await state.put(k, msgspec.Raw(wanted[k]))
    for k in change.removed:
        await state.delete(k)
    await _tell_indexes(store, bucket, change, wanted, current)
    return change


async def _restore_observations(store: MemoryStore, wanted: Records) -> Change:
    current = await read(store.client, OBSERVATIONS_BUCKET)
    change = compare(current, wanted)
    written = [*change.added, *change.changed]
    for o in _decoded(wanted, written, Observation):
        await store.put_observation(o, revive=True)  # the record and its event, one write
    gone = [
        r.id if r is not None and r.id else k
        for k, r in zip(
            change.removed, _decoded(current, change.removed, _Id, keep=True), strict=True
        )
    ]
    removed = [o.id for o in await store.forget_observations(gone)]
    for i in range(0, len(removed), 500):
        ids = removed[i : i + 500]
        await store.publish(RecordsRemoved(ids=ids, reason="snapshot restore", action=REMOVED))
    return change


async def _tell_indexes(
    store: MemoryStore, bucket: str, change: Change, wanted: Records, current: Records
) -> None:
    written = [*change.added, *change.changed]
    gone: list[str] = []
    removed_ids = [
        r.id if r is not None and r.id else k
        for k, r in zip(
            change.removed, _decoded(current, change.removed, _Id, keep=True), strict=True
        )
    ]
    if bucket == MEMORIES_BUCKET:
        for m in _decoded(wanted, written, Memory):
            if m.superseded_by:
                gone.append(m.id)
            else:
                await store.publish(MemoryAdded(memory=m))
        gone += removed_ids
    elif bucket == SUMMARIES_BUCKET:
        for s in _decoded(wanted, written, SessionSummary):
            await store.publish(SummaryAdded(summary=s))
        gone += [f"summary:{k}" for k in change.removed]
    for i in range(0, len(gone), 500):
        ids = gone[i : i + 500]
        await store.publish(RecordsRemoved(ids=ids, reason="snapshot restore", action=REMOVED))


class _Id(msgspec.Struct):
    id: str = ""


def _decoded(records: Records, keys: Iterable[str], type_: Any, keep: bool = False) -> list[Any]:
    out = []
    for k in keys:
        try:
            out.append(msgspec.json.decode(records[k], type=type_))
        except msgspec.ValidationError:
            if keep:  # one per key, in order
                out.append(None)
            # else: a record this version cannot read is stored back, not indexed
    return out
