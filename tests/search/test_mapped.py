"""The index's sealed arrays in mapped files (functions/search/mapped.py): the same rankings
as the heap index, through seals and a snapshot read from a mapped file; the pages are the
file's, not the heap's, and `trim()` hands them back."""

from __future__ import annotations

import asyncio
import json
import mmap
import random
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest

from engine import Client
from functions.kernel.records import MemEvent, Observation
from functions.kernel.store import MemoryStore
from functions.search import index_snapshot
from functions.search.documents import Meta
from functions.search.feeder import IndexHolder
from functions.search.index import SearchIndex
from functions.search.mapped import ByteLog, Spill
from functions.search.tables import MetaTable
from tests.fixtures import add_observations
from tests.search.ranking_corpus import events, rankings

EXPECTED: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "fixtures" / "rankings.json").read_text()
)


def _normal(got: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = json.loads(json.dumps(got))
    return out


def _mapped_rss_kb(where: Path) -> tuple[int, int]:
    """(mappings, resident KB) of this process's mappings of files in `where`."""
    maps = rss = 0
    inside = False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()
        if head and "-" in head[0] and len(head) >= 5 and ":" in head[3]:
            inside = len(head) >= 6 and head[5].startswith(str(where))
            maps += inside
        elif inside and line.startswith("Rss:"):
            rss += int(head[1])
    return maps, rss


def _is_mapped(a: Any) -> bool:
    base = a.base
    return isinstance(base, memoryview) and isinstance(base.obj, mmap.mmap)


def _records(graph: Any, nid: int, parts: tuple[int, ...] | None) -> list[int]:
    """A node's records, as a query concatenates them."""
    arrays = graph._parts(nid, parts)
    return np.concatenate(arrays).tolist() if arrays else []


def _build(spill: Spill, seal_every: int) -> SearchIndex:
    index = SearchIndex(spill=spill)
    for i, ev in enumerate(events(), 1):
        index.apply(msgspec.convert(ev, MemEvent), seq=i)
        if i % seal_every == 0:
            index_snapshot.take(index)  # seals the postings and the display rows
    return index


@pytest.mark.unit
def test_a_mapped_index_sealed_along_the_way_ranks_like_the_old_one(tmp_path: Path) -> None:
    spill = Spill(tmp_path)
    index = _build(spill, seal_every=97)
    assert _is_mapped(index.bm25.sealed.docs) and _is_mapped(index.bm25.sealed.tfs)
    for log in (index.meta._buf, index.graph.ents_of._flat):  # display rows, entities
        assert log._segs and all(_is_mapped(seg) for seg in log._segs)
    assert spill.trim() > 0  # and what follows ranks through pages mapped back on demand
    assert list(tmp_path.iterdir()) == []  # unlinked at once: a crash leaves nothing behind
    assert _normal(rankings(index)) == EXPECTED
    # the graph's records of each node, sealed or not, read in the same order
    assert _is_mapped(index.graph.sealed.docs)
    plain = _build(Spill(), seal_every=10**9)
    assert plain.graph.names == index.graph.names and not plain.graph.sealed.terms
    for nid in range(len(plain.graph.names)):
        for parts in (None, (0,), (2, 1)):
            assert _records(plain.graph, nid, parts) == _records(index.graph, nid, parts)


@pytest.mark.unit
def test_a_snapshot_file_mapped_back_ranks_the_same(tmp_path: Path) -> None:
    index = _build(Spill(tmp_path / "a"), seal_every=500)
    path = tmp_path / "index.snap"
    index_snapshot.take(index).write(path)
    with path.open("rb") as f:
        blob = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    again = index_snapshot.load(blob, SearchIndex(spill=Spill(tmp_path / "b")))
    del blob
    assert _mapped_rss_kb(path)[0] == 0  # nothing of the index pins the snapshot's mapping
    path.unlink()
    assert _normal(rankings(again)) == EXPECTED
    assert len(again) == len(index) and again.seq == index.seq
    assert [again.meta[n] for n in range(len(again))] == [index.meta[n] for n in range(len(index))]
    ents, ents2 = index.graph.ents_of, again.graph.ents_of
    assert [ents2.get(d) for d in range(len(again))] == [ents.get(d) for d in range(len(index))]
    assert len(ents2) == len(ents) > 100
    g, g2 = index.graph, again.graph
    assert all(_records(g2, n, None) == _records(g, n, None) for n in range(len(g.names)))


@pytest.mark.unit
def test_sealed_pages_are_the_files_and_trim_gives_them_back(tmp_path: Path) -> None:
    spill = Spill(tmp_path)
    index = SearchIndex(spill=spill)
    rng = np.random.default_rng(5)
    words = [f"w{i}" for i in range(3000)]
    for i in range(6000):
        text = " ".join(rng.choice(words, 30))
        index.apply(
            msgspec.convert(
                {"type": "observation.added", "observation": {
                    "id": f"obs_{i:024x}", "session_id": f"s{i % 40}", "project": "p",
                    "timestamp": "2026-12-01T10:00:00Z", "hook_type": "post_tool_use",
                    "type": "file_edit", "title": text[:40], "narrative": text,
                }},
                MemEvent,
            ),
            seq=i + 1,
        )  # fmt: skip
    index_snapshot.take(index)
    maps, resident = _mapped_rss_kb(tmp_path)
    assert maps >= 2 and resident > 0  # the seal wrote them through the mapping
    assert spill.trim() >= 1 << 20
    assert _mapped_rss_kb(tmp_path)[1] == 0
    hits = index.search("w7 w11", project="p", limit=5)
    assert hits
    after = _mapped_rss_kb(tmp_path)[1]
    # a query maps back the pages it read: its terms' lists and the rows it shows
    assert 0 < after < resident


def _meta(i: int) -> Meta:
    return Meta(id=f"obs_{i}", kind="observation", project="p", agent_id="", session_id="s",
                title=f"title {i}", type="", timestamp="2026-12-01T00:00:00Z", importance=5)  # fmt: skip


@pytest.mark.unit
def test_the_byte_log_reads_rows_across_seals_in_few_segments(tmp_path: Path) -> None:
    table = MetaTable(Spill(tmp_path))
    for i in range(20_000):
        table.append(_meta(i))
        if i % 137 == 0:
            table.seal()
    table[5] = None
    assert table[5] is None and table[19_999] == _meta(19_999)
    assert all(table[n] == _meta(n) for n in range(6, 20_000, 7))
    log = table._buf
    assert len(log._segs) <= 12  # each segment is over twice the next: log2 of the growth
    again = MetaTable.load(*table.dump(), spill=Spill(tmp_path))
    assert [again[n] for n in range(len(again))] == [table[n] for n in range(len(table))]


@pytest.mark.unit
def test_a_heap_spill_keeps_everything_on_the_heap() -> None:
    log = ByteLog()
    log.append(b"abc")
    log.seal()
    log.append(b"de")
    assert bytes(log.view(0, 3)) == b"abc" and bytes(log.view(3, 5)) == b"de"
    assert not Spill().mapped and Spill().trim() == 0
    assert b"".join(bytes(p) for p in log.pieces()) == b"abcde"


async def _fed_holder(client: Client, where: Path, trim_every: float) -> IndexHolder:
    store = await MemoryStore(client).open()
    rng = random.Random(3)
    words = [f"v{i}" for i in range(2000)]
    await add_observations(store, [
        Observation(
            id=f"obs_trim{i:05d}", session_id=f"s{i % 9}", project="alpha",
            hook_type="post_tool_use", timestamp="2026-12-01T10:00:00.000Z",
            title=f"step {i}", narrative=" ".join(rng.choices(words, k=40)),
        )
        for i in range(3000)
    ])  # fmt: skip
    holder = IndexHolder(load_embedder=False, snapshot_every=3600, local_dir=where,
                         trim_every=trim_every)  # fmt: skip
    await holder.start(client)
    assert await holder.caught_up(timeout=10)
    await holder.save()  # seals into the mapped files, then trims
    assert _mapped_rss_kb(where)[1] == 0
    for q in ("v1 v2", "v3 v5", "v8 v13"):
        assert holder.index.search(q, project="alpha", limit=10)
    assert _mapped_rss_kb(where)[1] > 0
    return holder


async def test_the_holder_hands_back_what_queries_read_now_and_then(
    client: Client, tmp_path: Path
) -> None:
    holder = await _fed_holder(client, tmp_path / "on", trim_every=0.2)
    try:
        await asyncio.sleep(0.6)
        assert _mapped_rss_kb(tmp_path / "on")[1] == 0
    finally:
        await holder.stop(client)


async def test_without_the_trim_loop_read_pages_stay(client: Client, tmp_path: Path) -> None:
    holder = await _fed_holder(client, tmp_path / "off", trim_every=0)
    try:
        await asyncio.sleep(0.6)
        assert _mapped_rss_kb(tmp_path / "off")[1] > 0
    finally:
        await holder.stop(client)


@pytest.mark.unit
def test_a_snapshot_from_before_the_graph_was_sealed_loads_the_same(tmp_path: Path) -> None:
    """Formats 5 and 6 (the last main's) held the graph's records in `graph_docs` alone:
    such a snapshot loads them as the tail, and reads and ranks as the index it was."""
    index = _build(Spill(tmp_path / "a"), seal_every=500)
    old = msgspec.msgpack.decode(index_snapshot.dump(index))
    g = index.graph
    old["graph_docs"] = [
        {0: np.array(_records(g, nid, None), np.int32).tobytes()} if _records(g, nid, None) else {}
        for nid in range(len(g.names))
    ]  # one partition each: enough to carry every record (the test's filters use parts)
    old.pop("graph_sealed")
    again = index_snapshot.load(
        msgspec.msgpack.encode(old), SearchIndex(spill=Spill(tmp_path / "b"))
    )
    assert not again.graph.sealed.terms and again.graph.docs_of
    assert all(_records(again.graph, n, None) == _records(g, n, None) for n in range(len(g.names)))
    assert _normal(rankings(again)) == EXPECTED
    index_snapshot.take(again)  # its next seal moves them into the mapped arrays
    assert again.graph.sealed.terms and not again.graph.docs_of
    assert all(_records(again.graph, n, None) == _records(g, n, None) for n in range(len(g.names)))
