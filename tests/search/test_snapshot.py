"""Snapshot + replay of the tail gives the index a from-scratch rebuild gives."""

from __future__ import annotations

import random

import pytest

from functions.kernel.records import (
    MemEvent,
    Memory,
    MemoryAdded,
    Observation,
    ObservationAdded,
    RecordsRemoved,
    SessionSummary,
    SummaryAdded,
)
from functions.search import index_snapshot
from functions.search.index import SearchIndex

pytestmark = pytest.mark.unit

WORDS = "cache timeout auth login parser config deploy docker test flaky retry queue index".split()
QUERIES = [
    "cache timeout",
    "auth login",
    "flaky test retry",
    "src/app/main.py",
    "deploy docker",
    "E0425",
]


def events(n: int, seed: int = 7) -> list[MemEvent]:
    rnd = random.Random(seed)
    out: list[MemEvent] = []
    for i in range(n):
        text = " ".join(rnd.choices(WORDS, k=8))
        if i % 17 == 5:
            out.append(RecordsRemoved(ids=[f"o{i - 3}"], reason="forget"))
        elif i % 11 == 0:
            out.append(MemoryAdded(memory=Memory(id=f"m{i}", content=text, project=f"p{i % 2}",
                                                 supersedes=f"m{i - 11}" if i >= 11 else None)))  # fmt: skip
        elif i % 13 == 0:
            out.append(
                SummaryAdded(
                    summary=SessionSummary(session_id=f"s{i % 5}", project=f"p{i % 2}", title=text)
                )
            )
        else:
            out.append(ObservationAdded(observation=Observation(
                id=f"o{i}", session_id=f"s{i % 5}", project=f"p{i % 2}", hook_type="post_tool_use",
                timestamp=f"2026-01-{1 + i % 28:02d}T00:00:00Z", title=text[:30], narrative=text,
                files=["src/app/main.py"] if i % 7 == 0 else [], facts=["E0425"] if i % 9 == 0 else [],
            )))  # fmt: skip
    return out


def results(idx: SearchIndex) -> list[list[tuple[str, float]]]:
    return [
        [(h.id, h.score) for h in idx.search(q, project=p, limit=20)]
        for q in QUERIES
        for p in (None, "p0", "p1")
    ]


def test_snapshot_plus_replay_equals_a_rebuild_from_scratch() -> None:
    evs = events(400)
    scratch = SearchIndex()
    for seq, e in enumerate(evs, 1):
        scratch.apply(e, seq)

    first = SearchIndex()
    for seq, e in enumerate(evs[:250], 1):
        first.apply(e, seq)
    blob = index_snapshot.dump(first)

    restored = index_snapshot.load(blob, SearchIndex())
    assert restored.seq == 250
    for seq, e in enumerate(evs, 1):
        if seq > restored.seq:
            restored.apply(e, seq)
    assert restored.seq == scratch.seq == 400
    assert len(restored) == len(scratch)
    assert results(restored) == results(scratch)
    assert any(results(scratch))


def test_snapshot_keeps_removed_records_removed() -> None:
    idx = SearchIndex()
    for seq, e in enumerate(events(60), 1):
        idx.apply(e, seq)
    assert idx.get("o2") is None  # removed at i == 5
    restored = index_snapshot.load(index_snapshot.dump(idx), SearchIndex())
    assert restored.get("o2") is None
    assert all(h.id != "o2" for h in restored.search("cache timeout auth login", limit=100))


def _drain(reader: index_snapshot.SnapshotReader, size: int) -> bytes:
    out = bytearray()
    buf = bytearray(size)
    while n := reader.readinto(buf):
        out += buf[:n]
    return bytes(out)


def test_a_streamed_snapshot_is_the_index_as_it_was_when_taken() -> None:
    """The object store drains the reader in a thread while the loop goes on writing: what
    it reads is the index at `take()`, whatever is applied after, in any read size."""
    evs = events(400)
    idx = SearchIndex()
    for seq, e in enumerate(evs[:250], 1):
        idx.apply(e, seq)
    expected = results(idx)
    reader = index_snapshot.take(idx).reader()
    head = bytearray(100)
    first = reader.readinto(head)  # partly read, then the index moves on
    for seq, e in enumerate(evs[250:], 251):
        idx.apply(e, seq)
    idx.bm25.seal()  # what the next snapshot would do
    blob = bytes(head[:first]) + _drain(reader, 7)
    assert blob.startswith(index_snapshot.STREAMED) and reader.stored == len(blob)
    restored = index_snapshot.load(blob, SearchIndex())
    assert restored.seq == 250 and len(restored) < len(idx)
    assert results(restored) == expected and any(expected)
    # and in one read of any size, the same bytes as a dump of the same index gives
    again = index_snapshot.load(
        _drain(index_snapshot.take(restored).reader(), 1 << 20), SearchIndex()
    )
    assert results(again) == expected
    assert index_snapshot.dump(again) == index_snapshot.dump(restored)
