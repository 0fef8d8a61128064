"""Embeddings through the `embed` work queue, shared by every replica.

A replica that indexes new records enqueues their texts (batches, `Nats-Msg-Id` = the
batch's ids, so replicas enqueueing the same records store one message). `mem::embed`, run
by the queue trigger with retries and a dead-letter stream, computes the vectors once and
puts them in the KV bucket `mem_embeddings`; every replica watches that bucket and adds
the vectors to its own index. Vectors of another model or dimension are ignored, and the
records are enqueued again, so a model change re-embeds instead of mixing spaces.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from typing import Any

import msgspec
import numpy as np

from engine import Client, Context, FunctionError, operation
from functions.search.embedding import take_batch
from functions.search.index import SearchIndex
from functions.search.vectors import Embedder, chunks

log = logging.getLogger("functions.search")
QUEUE = "embed"
EMBEDDINGS_BUCKET = "mem_embeddings"


class EmbedIn(msgspec.Struct, kw_only=True):
    ids: list[str]
    texts: list[str]


class EmbedOut(msgspec.Struct, kw_only=True):
    stored: int
    model: str


class Embedding(msgspec.Struct, kw_only=True):
    id: str
    model: str
    dim: int
    vectors: bytes
    """float32, row-major, one row per chunk."""


_embedding = msgspec.json.Decoder(Embedding)


def key_of(record_id: str) -> str:
    return hashlib.sha256(record_id.encode()).hexdigest()[:32]


class EmbedService:
    """`mem::embed`, served where the index embeds through the queue (the queue trigger
    calls it with retries; see the module's docstring)."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    @operation("mem::embed", description="embed a batch into mem_embeddings", timeout=300)
    async def embed(self, req: EmbedIn, ctx: Context) -> EmbedOut:
        return await embed_call(self.embedder, req, ctx)


async def embed_call(embedder: Embedder, req: EmbedIn, ctx: Context) -> EmbedOut:
    if len(req.ids) != len(req.texts):
        raise FunctionError("BAD_REQUEST", "ids and texts must have the same length", field="texts")
    pieces: list[str] = []
    owners: list[int] = []
    for i, text in enumerate(req.texts):
        for c in chunks(text):
            pieces.append(c)
            owners.append(i)
    if not pieces:
        return EmbedOut(stored=0, model=embedder.name)
    try:
        vecs = await asyncio.to_thread(embedder.embed, pieces)
    except Exception as exc:  # a remote provider down or rate limited: let the queue retry
        raise FunctionError(
            "UNAVAILABLE", f"embedding failed: {type(exc).__name__}: {exc}", retryable=True
        ) from None
    st = await ctx.bucket(EMBEDDINGS_BUCKET)
    stored = 0
    for i, rid in enumerate(req.ids):
        rows = vecs[[j for j, o in enumerate(owners) if o == i]]
        if len(rows):
            rec = Embedding(id=rid, model=embedder.name, dim=int(rows.shape[1]),
                            vectors=np.ascontiguousarray(rows, np.float32).tobytes())  # fmt: skip
            await st.put(key_of(rid), rec)
            stored += 1
    return EmbedOut(stored=stored, model=embedder.name)


class QueueEmbedding:
    """The replica side: enqueue what is pending, apply what the bucket receives."""

    def __init__(self, index_of: Any, embedder: Embedder, batch: int = 32) -> None:
        self.index_of = index_of
        """A callable returning the current SearchIndex (the holder may replace it)."""
        self.embedder = embedder
        self.batch = batch

    async def run_enqueuer(self, client: Client) -> None:
        while True:
            index: SearchIndex = self.index_of()
            if index.pending_text:
                docs, _pieces, _owners = take_batch(index, self.batch)
                ids, texts = [], []
                for d in docs:
                    m = index.meta[d]
                    if m is not None and d in index.texts:
                        ids.append(m.id)
                        texts.append(index.texts[d])
                if ids:
                    msg_id = "embed:" + hashlib.sha256("\n".join(ids).encode()).hexdigest()[:32]
                    try:
                        # through the queue trigger's own function: functions/ never
                        # import triggers/
                        await client.call("engine::enqueue", {
                            "queue": QUEUE, "msg_id": msg_id,
                            "payload": EmbedIn(ids=ids, texts=texts),
                        })  # fmt: skip
                    except Exception:
                        log.exception("could not enqueue embeddings; retrying")
                        for d in docs:
                            if d in index.texts:
                                index.pending_text[d] = index.texts[d]
                        await asyncio.sleep(2)
                continue
            await asyncio.sleep(0.2)

    async def run_watcher(self, client: Client) -> None:
        st = await client.bucket(EMBEDDINGS_BUCKET)
        async for change in st.watch():  # stored vectors first, then each new batch
            if change.value is None:
                continue
            try:
                rec = _embedding.decode(change.value)
            except (msgspec.DecodeError, msgspec.ValidationError):
                continue
            self.apply(rec)

    def apply(self, rec: Embedding) -> bool:
        index: SearchIndex = self.index_of()
        vec = index.vectors
        n = index.doc_of.get(rec.id)
        if vec is None or n is None:
            return False
        if rec.model != self.embedder.name or rec.dim != vec.dim:
            if n in index.texts:  # embedded by another model: do it again with ours
                index.pending_text[n] = index.texts[n]
            return False
        if vec.holds(n):
            return False  # a redelivery: vectors of this record are in
        rows = np.frombuffer(rec.vectors, dtype=np.float32).reshape(-1, rec.dim)
        index.pending_text.pop(n, None)
        vec.add(n, rows)
        return True
