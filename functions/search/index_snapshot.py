"""A `SearchIndex` as bytes and back, with the MEM_EVENTS sequence it covers.

Restoring a snapshot and replaying the events after its sequence gives the same index as
applying every event from the start (tests/search/test_snapshot.py proves it).

What the search worker stores is `take()`'s: a zlib stream of a small msgpack header and
the index's arrays as raw sections, produced piece by piece while the object store reads
it. Nothing the size of the index is built for it: the sealed postings are read where they
lie (a seal makes new arrays and never writes old ones), the growing columns are copied
once; so a snapshot of a large index costs neither a second index's worth of memory nor a
long pause of the event loop (the compression runs in the reader's thread).
"""

from __future__ import annotations

import io
import mmap
import os
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeAlias

import msgspec

from functions.search.context_index import ContextIndex
from functions.search.documents import Meta
from functions.search.index import SearchIndex
from functions.search.postings import Sealed, SealedBuffers
from functions.search.tables import DocEntities, IdSlots, MetaTable

FORMAT = 5
"""5: postings as flat sealed arrays (functions/search/postings.py); 4: the display fields
and the graph's entities of documents as packed buffers; 3: one object per document. 3 and
4 are still read, so an upgraded data dir boots from its snapshot. `take()` writes
format 5's fields as STREAMED sections (format 6; 7 adds the graph's sealed records,
`graph_sealed`, which `dump()` writes too: before it, `graph_docs` held them all)."""
STREAMED = b"zs6\0"
"""Prefix of `Taken.reader()`'s output: zlib of [u64 header length][header][sections]."""
PLAIN = b"rs6\0"
"""Prefix of the same, uncompressed (a local file: written and read at disk speed)."""
_SECTIONS = ("meta_buf", "meta_end", "meta_live", "alive", "project", "agent", "kind",
             "session", "day", "doc_len", "graph_ents_flat", "graph_ents_end", "ids_keys",
             "ids_slots", "vector_blob", "shown_end", "context")  # fmt: skip
_SEALED = ("first", "part", "end", "docs", "tfs")
Buffer: TypeAlias = "bytes | memoryview | mmap.mmap"
_PIECE = 1 << 20
"""Bytes handed to the compressor at a time."""


class IndexSnapshot(msgspec.Struct, kw_only=True):
    format: int = FORMAT
    seq: int
    meta: list[Meta | None] = msgspec.field(default_factory=list)
    """Format 3 only."""
    meta_buf: bytes = b""
    meta_end: bytes = b""
    meta_live: bytes = b""
    alive: bytes
    project: bytes
    agent: bytes
    kind: bytes
    session: bytes
    day: bytes
    projects: list[str]
    agents: list[str]
    sessions: list[str]
    doc_len: bytes
    postings: dict[str, list[tuple[int, bytes, bytes]]] = msgspec.field(default_factory=dict)
    """Formats 3 and 4 only."""
    sealed: SealedBuffers | None = None
    graph_names: list[str]
    graph_docs: list[dict[int, bytes]]
    """The graph's tail (node -> partition -> records); all of it before format 7."""
    graph_sealed: SealedBuffers | None = None
    """The graph's sealed records by node name (format 7; weights empty)."""
    graph_ents: dict[int, list[int]] = msgspec.field(default_factory=dict)
    """Format 3 only."""
    graph_ents_flat: bytes = b""
    graph_ents_end: bytes = b""
    ids_keys: bytes = b""
    ids_slots: bytes = b""
    vector_model: str = ""
    vector_dim: int = 0
    vector_chunks: list[int] = msgspec.field(default_factory=list)
    vector_blob: bytes = b""
    texts: dict[int, str] = msgspec.field(default_factory=dict)
    pending: list[int] = msgspec.field(default_factory=list)
    shown_id: str = ""
    shown_first: int = 0
    shown_end: bytes = b""
    """Where the records of hits lie in the replica's local file (functions/search/shown.py);
    empty in snapshots of an index without one, and in those written before it."""
    sections: list[tuple[str, int]] = msgspec.field(default_factory=list)
    """Format 6 only: the fields sent after the header, in order, and their lengths."""
    verdicts: dict[str, list[str]] = msgspec.field(default_factory=dict)
    decided: dict[str, list[str] | None] = msgspec.field(default_factory=dict)
    """The quarantine (`SearchIndex.verdicts`, `.decided`): empty in snapshots before it."""
    context: bytes = b""
    """The per-project lists and counts the session start reads (msgpack of
    `ContextIndex.dump()`); empty in snapshots written before it: made from the records."""


def dump(index: SearchIndex) -> bytes:
    """The index as one msgpack document (format 5)."""
    snap, sections = _parts(index)
    for name, buf in sections:
        _set(snap, name, b"".join(buf) if isinstance(buf, list) else bytes(buf))
    return msgspec.msgpack.encode(snap)


class Taken:
    """An index as it was at `take()`: its header and sections, ready to be written out
    (to a local file, plain) or read out (compressed, by the object store) from a thread,
    as often as wanted; nothing in it is written by the index after `take()`."""

    def __init__(self, docs: int, pieces: list[bytes | memoryview]) -> None:
        self.docs = docs
        self.pieces = pieces

    def reader(self) -> SnapshotReader:
        """STREAMED bytes, compressed as they are read."""
        return SnapshotReader(self.pieces)

    def write(self, path: Path, *, compressed: bool = False) -> int:
        """PLAIN bytes (or STREAMED ones) into `path`, a new file put in place whole; the
        bytes written."""
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as f:
            if compressed:
                reader, buf = self.reader(), bytearray(_PIECE)
                while n := reader.readinto(buf):
                    f.write(memoryview(buf)[:n])
            else:
                f.write(PLAIN)
                for p in self.pieces:
                    f.write(p)
            size = f.tell()
        os.replace(tmp, path)
        return size


def take(index: SearchIndex) -> Taken:
    """Call on the event loop: it seals the postings and copies what later writes would
    change, so that what it returns may be written or read out in a thread."""
    snap, sections = _parts(index)
    snap.format = 7
    flat = [(name, buf if isinstance(buf, list) else [buf]) for name, buf in sections]
    snap.sections = [(name, sum(memoryview(b).nbytes for b in bufs)) for name, bufs in flat]
    head = msgspec.msgpack.encode(snap)
    pieces = [struct.pack("<Q", len(head)), head, *(b for _, bufs in flat for b in bufs)]
    return Taken(len(index), pieces)


class SnapshotReader(io.RawIOBase):
    """Compresses its pieces as they are read."""

    def __init__(self, pieces: list[bytes | memoryview]) -> None:
        self._pieces: Iterator[memoryview] = (
            memoryview(p).cast("B")[i : i + _PIECE]
            for p in pieces
            for i in range(0, memoryview(p).nbytes, _PIECE)
        )
        self._zip = zlib.compressobj(1)
        self._out = bytearray(STREAMED)
        self._done = False
        self.stored = 0
        """Bytes read so far (all of the snapshot once the reader is drained)."""

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any, /) -> int:
        want = len(b)
        while len(self._out) < want and not self._done:
            piece = next(self._pieces, None)
            if piece is None:
                self._out += self._zip.flush()
                self._done = True
            else:
                self._out += self._zip.compress(piece)
        n = min(want, len(self._out))
        b[:n] = self._out[:n]
        del self._out[:n]
        self.stored += n
        return n


Section: TypeAlias = "bytes | memoryview | list[bytes | memoryview]"
"""A section's bytes: one buffer, or several written one after the other."""


def _parts(index: SearchIndex) -> tuple[IndexSnapshot, list[tuple[str, Section]]]:
    vec = index.vectors
    index.meta.seal()
    index.graph.ents_of.seal()
    index.graph.seal()
    meta_buf, meta_end, meta_live = index.meta.dump()
    ents_flat, ents_end = index.graph.ents_of.dump()
    logs: dict[str, Section] = {"meta_buf": meta_buf, "graph_ents_flat": ents_flat}
    """Sections in pieces (the sealed segments as they lie, the tail copied)."""
    ids_keys, ids_slots = index.doc_of.dump()
    index.bm25.seal()
    sealed = index.bm25.sealed
    shown_id, shown_first, shown_end = index.shown.dump() if index.shown else ("", 0, b"")
    snap = IndexSnapshot(
        seq=index.seq,
        meta_end=meta_end,
        meta_live=meta_live,
        alive=index.alive.tobytes(),
        project=index.project.tobytes(),
        agent=index.agent.tobytes(),
        kind=index.kind.tobytes(),
        session=index.session.tobytes(),
        day=index.day.tobytes(),
        projects=index.projects.names,
        agents=index.agents.names,
        sessions=index.sessions.names,
        doc_len=index.bm25.doc_len.tobytes(),
        sealed=SealedBuffers(terms=sealed.terms, first=b"", part=b"", end=b"", docs=b"", tfs=b""),
        graph_names=index.graph.names,
        graph_docs=[],  # the graph's tail was folded into graph_sealed just above
        graph_sealed=SealedBuffers(
            terms=index.graph.sealed.terms, first=b"", part=b"", end=b"", docs=b"", tfs=b""
        ),
        graph_ents_end=ents_end,
        ids_keys=ids_keys,
        ids_slots=ids_slots,
        vector_model=vec.model if vec else "",
        vector_dim=vec.dim if vec else 0,
        vector_chunks=vec.chunk_doc if vec else [],
        vector_blob=vec.dump() if vec else b"",
        texts=index.texts,
        pending=sorted(index.pending_text),
        shown_id=shown_id,
        shown_first=shown_first,
        shown_end=shown_end,
        verdicts=dict(index.verdicts),
        decided=dict(index.decided),
        context=msgspec.msgpack.encode(index.context.dump()),
    )
    sections: list[tuple[str, Section]] = []
    for name in _SECTIONS:
        sections.append((name, logs[name] if name in logs else getattr(snap, name)))
        setattr(snap, name, b"")
    sections += [(f"sealed.{name}", getattr(sealed, name).data) for name in _SEALED]
    graph = index.graph.sealed
    sections += [(f"graph_sealed.{name}", getattr(graph, name).data) for name in _SEALED]
    return snap, sections


def _set(snap: IndexSnapshot, name: str, value: bytes | memoryview) -> None:
    owner, _, field = name.rpartition(".")
    setattr(getattr(snap, owner) if owner else snap, field, value)


def _read_streamed(blob: Buffer, own_sealed: bool = True) -> IndexSnapshot:
    if bytes(blob[: len(PLAIN)]) == PLAIN:
        raw = memoryview(blob)[len(PLAIN) :]
    else:
        raw = memoryview(zlib.decompress(memoryview(blob)[len(STREAMED) :]))
    (size,) = struct.unpack_from("<Q", raw)
    snap = msgspec.msgpack.decode(raw[8 : 8 + size], type=IndexSnapshot)
    at = 8 + size
    for name, length in snap.sections:
        piece = raw[at : at + length]
        # The other fields are copied by their loaders; the sealed postings would stay
        # views and keep the whole buffer alive, so they get their own bytes (unless the
        # index copies them into its mapped files anyway).
        sealed = name.startswith(("sealed.", "graph_sealed."))
        _set(snap, name, bytes(piece) if sealed and own_sealed else piece)
        at += length
    if at != len(raw):
        raise ValueError("snapshot sections do not add up to its length")
    return snap


def load(blob: Buffer, index: SearchIndex) -> SearchIndex:
    """Fill an empty `index` (built with the wanted config, vector setting and spill) from
    `blob` (`dump()`'s bytes or `Taken`'s; a mapped file will do: nothing is kept of it)."""
    from array import array

    if bytes(blob[: len(STREAMED)]) in (STREAMED, PLAIN):
        snap = _read_streamed(blob, own_sealed=not index.spill.mapped)
    else:
        snap = msgspec.msgpack.decode(blob, type=IndexSnapshot)
    if snap.format not in (3, 4, FORMAT, 6, 7):
        raise ValueError(f"snapshot format {snap.format} is not {FORMAT}")
    index.seq = snap.seq
    if snap.format == 3:
        index.meta = MetaTable.of(snap.meta, index.spill)
    else:
        index.meta = MetaTable.load(snap.meta_buf, snap.meta_end, snap.meta_live, index.spill)
    if snap.ids_keys:
        index.doc_of = IdSlots.load(index.id_of, snap.ids_keys, snap.ids_slots)
    else:
        index.doc_of = IdSlots(index.id_of)
        for n, i in index.meta.ids():
            index.doc_of[i] = n
    for name, code in (("alive", "b"), ("project", "i"), ("agent", "i"), ("kind", "b"),
                       ("session", "i"), ("day", "i")):  # fmt: skip
        a = array(code)
        a.frombytes(getattr(snap, name))
        setattr(index, name, a)
    for codes, names in ((index.projects, snap.projects), (index.agents, snap.agents),
                         (index.sessions, snap.sessions)):  # fmt: skip
        codes.names = list(names)
        codes.of = {n: i for i, n in enumerate(names)}
    index.members = {}
    for n, sc in enumerate(index.session):
        members = index.members.get(sc)
        if members is None:
            members = index.members[sc] = array("i")
        members.append(n)
    if snap.sealed is not None:
        index.bm25.load(snap.sealed, snap.doc_len)
    else:
        index.bm25.load_lists(snap.postings, snap.doc_len)
    g = index.graph
    g.names = list(snap.graph_names)
    g.nodes = {n: i for i, n in enumerate(g.names)}
    g.docs_of = {}
    for nid, by_part in enumerate(snap.graph_docs):
        node: dict[int, array[int]] = {}
        for p, b in by_part.items():
            a = array("i")
            a.frombytes(b)
            node[int(p)] = a
        if node:
            g.docs_of[nid] = node
    g.spill = index.spill
    g.sealed = Sealed.of(snap.graph_sealed, index.spill) if snap.graph_sealed else Sealed()
    if snap.format == 3:
        ents = {int(k): list(v) for k, v in snap.graph_ents.items()}
        g.ents_of = DocEntities.of(ents, index.spill)
    else:
        g.ents_of = DocEntities.load(snap.graph_ents_flat, snap.graph_ents_end, index.spill)
    if index.vectors is not None:
        index.texts = dict(snap.texts)
        if snap.vector_model:
            index.vectors.load(
                snap.vector_model, snap.vector_dim, snap.vector_chunks, snap.vector_blob
            )
            index.pending_text = {d: index.texts[d] for d in snap.pending if d in index.texts}
        else:
            index.pending_text = dict(index.texts)
    if index.shown is not None:
        index.shown.open(len(index.meta), snap.shown_id, snap.shown_first, bytes(snap.shown_end))
    index.verdicts = dict(snap.verdicts)
    index.decided = dict(snap.decided)
    index.reload_held()
    if snap.context:
        index.context = ContextIndex.load(msgspec.msgpack.decode(snap.context))
    else:
        index.context = ContextIndex.of(index, index.held.__contains__)
    index.forget_scopes()
    return index
