"""Filling the vector index from the documents waiting for an embedding, in batches.

Ingest only records a document as pending; this runs later (the embed queue's consumer),
so adding an observation never waits on a model.
"""

from __future__ import annotations

import numpy as np

from functions.search.index import SearchIndex
from functions.search.vectors import Embedder, chunks


def ensure_model(index: SearchIndex, embedder: Embedder) -> bool:
    """Reset the vectors when they came from another model or dimension, and queue every
    live document again. True when a reset happened."""
    vec = index.vectors
    if vec is None or vec.accepts(embedder.name, embedder.dim):
        return False
    vec.reset(embedder.name, embedder.dim)
    index.pending_text.update(index.texts)
    return True


def take_batch(index: SearchIndex, batch: int) -> tuple[list[int], list[str], list[int]]:
    """Up to `batch` pending documents, cut into model-sized pieces: (docs, pieces, owner
    of each piece). The documents leave the pending set."""
    docs: list[int] = []
    pieces: list[str] = []
    owners: list[int] = []
    for doc in list(index.pending_text)[:batch]:
        text = index.pending_text.pop(doc)
        docs.append(doc)
        for c in chunks(text):
            pieces.append(c)
            owners.append(doc)
    return docs, pieces, owners


def store_batch(index: SearchIndex, owners: list[int], vecs: np.ndarray) -> int:
    if index.vectors is None:
        return 0
    rows: dict[int, list[int]] = {}
    for i, o in enumerate(owners):
        rows.setdefault(o, []).append(i)
    done = 0
    for doc, r in rows.items():
        if index.meta[doc] is not None:  # removed while it was being embedded
            index.vectors.add(doc, vecs[r])
            done += 1
    return done


def embed_pending(index: SearchIndex, embedder: Embedder, batch: int = 256) -> int:
    """Embed everything pending, synchronously; returns how many documents got vectors."""
    if index.vectors is None:
        return 0
    ensure_model(index, embedder)
    done = 0
    while index.pending_text:
        _docs, pieces, owners = take_batch(index, batch)
        if pieces:
            done += store_batch(index, owners, embedder.embed(pieces))
    return done
