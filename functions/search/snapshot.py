"""A `SearchIndex` as bytes and back, with the MEM_EVENTS sequence it covers.

Restoring a snapshot and replaying the events after its sequence gives the same index as
applying every event from the start (tests/search/test_snapshot.py proves it).
"""

from __future__ import annotations

import msgspec

from functions.search.documents import Meta
from functions.search.index import SearchIndex
from functions.search.postings import SealedBuffers
from functions.search.tables import DocEntities, IdSlots, MetaTable

FORMAT = 5
"""5: postings as flat sealed arrays (functions/search/postings.py); 4: the display fields
and the graph's entities of documents as packed buffers; 3: one object per document. 3 and
4 are still read, so an upgraded data dir boots from its snapshot."""


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


def dump(index: SearchIndex) -> bytes:
    vec = index.vectors
    meta_buf, meta_end, meta_live = index.meta.dump()
    ents_flat, ents_end = index.graph.ents_of.dump()
    ids_keys, ids_slots = index.doc_of.dump()
    snap = IndexSnapshot(
        seq=index.seq,
        meta_buf=meta_buf,
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
        sealed=index.bm25.dump(),
        graph_names=index.graph.names,
        graph_docs=[{p: a.tobytes() for p, a in d.items()} for d in index.graph.docs_of],
        graph_ents_flat=ents_flat,
        graph_ents_end=ents_end,
        ids_keys=ids_keys,
        ids_slots=ids_slots,
        vector_model=vec.model if vec else "",
        vector_dim=vec.dim if vec else 0,
        vector_chunks=vec.chunk_doc if vec else [],
        vector_blob=vec.dump() if vec else b"",
        texts=index.texts,
        pending=sorted(index.pending_text),
    )
    return msgspec.msgpack.encode(snap)


def load(blob: bytes, index: SearchIndex) -> SearchIndex:
    """Fill an empty `index` (built with the wanted config and vector setting) from `blob`."""
    from array import array

    snap = msgspec.msgpack.decode(blob, type=IndexSnapshot)
    if snap.format not in (3, 4, FORMAT):
        raise ValueError(f"snapshot format {snap.format} is not {FORMAT}")
    index.seq = snap.seq
    if snap.format == 3:
        index.meta = MetaTable.of(snap.meta)
    else:
        index.meta = MetaTable.load(snap.meta_buf, snap.meta_end, snap.meta_live)
    if snap.ids_keys:
        index.doc_of = IdSlots.load(index._id_of, snap.ids_keys, snap.ids_slots)
    else:
        index.doc_of = IdSlots(index._id_of)
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
    g.docs_of = []
    for by_part in snap.graph_docs:
        node: dict[int, array[int]] = {}
        for p, b in by_part.items():
            a = array("i")
            a.frombytes(b)
            node[int(p)] = a
        g.docs_of.append(node)
    if snap.format == 3:
        g.ents_of = DocEntities.of({int(k): list(v) for k, v in snap.graph_ents.items()})
    else:
        g.ents_of = DocEntities.load(snap.graph_ents_flat, snap.graph_ents_end)
    if index.vectors is not None:
        index.texts = dict(snap.texts)
        if snap.vector_model:
            index.vectors.load(
                snap.vector_model, snap.vector_dim, snap.vector_chunks, snap.vector_blob
            )
            index.pending_text = {d: index.texts[d] for d in snap.pending if d in index.texts}
        else:
            index.pending_text = dict(index.texts)
    index._version += 1
    index._scopes.clear()
    return index
