"""Image-capable embedding providers: one vector space for texts and images, so a text
finds the images it describes.

- `gemini`: Gemini's multimodal embeddings, `POST {base}/models/{model}:embedContent`
  (`x-goog-api-key`), a text part or an `inline_data` image part; the reply's
  `embedding.values`. `base` is GEMINI_BASE_URL without its OpenAI-format `/openai` tail.
- `openai`: an OpenAI-compatible `POST {EMBEDDING_BASE_URL}/embeddings` whose model takes
  images, as the multimodal models' servers accept them: `input` holds the text, or an
  object `{"image": "<base64>"}`; the reply's `data[0].embedding`.

Which one is configured, and why none is, is `image_provider()`'s to say."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import httpx

from engine import FunctionError
from engine.settings import load
from functions.kernel.models.settings import ProviderSettings
from functions.kernel.settings import kernel_settings
from functions.surface.settings import IMAGE_SETTING, surface_settings

GEMINI_MODEL = "gemini-embedding-2"
TIMEOUT = 60.0


class ImageEmbedder(Protocol):
    name: str
    model: str

    async def text(self, text: str) -> list[float]: ...

    async def image(self, data: bytes, mime: str) -> list[float]: ...


def _unit(values: Any) -> list[float]:
    """The vector, of length 1 (cosine is then a dot product)."""
    # numpy on first use: the memory worker's write path, which serves these routes too,
    # loads no index library (tests/memory/test_footprint.py)
    import numpy as np

    try:
        v = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        v = np.zeros(0)
    if v.ndim != 1 or not v.size or not np.isfinite(v).all():
        raise FunctionError("UNAVAILABLE", "the image provider answered no vector", retryable=True)
    n = float(np.linalg.norm(v))
    return [float(x) for x in (v / n if n else v)]


async def _post(url: str, body: dict[str, Any], headers: dict[str, str], who: str) -> Any:
    try:
        async with httpx.AsyncClient(timeout=TIMEOUT) as http:
            r = await http.post(url, json=body, headers=headers)
    except httpx.HTTPError as exc:
        raise FunctionError(
            "UNAVAILABLE", f"{who} is not reachable: {exc}", retryable=True
        ) from None
    if r.status_code >= 400:
        # The provider's answer, not the caller's request: 503 either way, retryable when
        # the provider may answer later (busy, rate-limited, failing).
        later = r.status_code >= 500 or r.status_code == 429
        raise FunctionError(
            "UNAVAILABLE", f"{who} answered {r.status_code}: {r.text[:300]}", retryable=later
        )
    try:
        return r.json()
    except ValueError:
        raise FunctionError("UNAVAILABLE", f"{who} answered no JSON", retryable=True) from None


@dataclass
class GeminiImages:
    base: str
    key: str
    model: str
    name: str = "gemini"

    async def _embed(self, part: dict[str, Any]) -> list[float]:
        got = await _post(
            f"{self.base}/models/{self.model}:embedContent",
            {"content": {"parts": [part]}},
            {"x-goog-api-key": self.key},
            f"Gemini ({self.model})",
        )
        return _unit(((got or {}).get("embedding") or {}).get("values"))

    async def text(self, text: str) -> list[float]:
        return await self._embed({"text": text})

    async def image(self, data: bytes, mime: str) -> list[float]:
        b64 = base64.b64encode(data).decode()
        return await self._embed({"inline_data": {"mime_type": mime, "data": b64}})


@dataclass
class OpenAICompatibleImages:
    base: str
    key: str
    model: str
    name: str = "openai"

    async def _embed(self, item: Any) -> list[float]:
        headers = {"Authorization": f"Bearer {self.key}"} if self.key else {}
        got = await _post(
            f"{self.base}/embeddings",
            {"model": self.model, "input": [item]},
            headers,
            f"the embedding server at {self.base} ({self.model})",
        )
        data = (got or {}).get("data") or [{}]
        return _unit(data[0].get("embedding"))

    async def text(self, text: str) -> list[float]:
        return await self._embed(text)

    async def image(self, data: bytes, mime: str) -> list[float]:
        return await self._embed({"image": base64.b64encode(data).decode()})


Kind = Literal["gemini", "openai"]


def not_configured(field: str, why: str) -> FunctionError:
    return FunctionError("NOT_IMPLEMENTED", why, field=field, status=501)


def image_provider() -> ImageEmbedder:
    """The configured provider; a 501 naming the setting that is missing otherwise."""
    s = surface_settings()
    if not s.image_embeddings:
        return _raise(
            not_configured(
                IMAGE_SETTING,
                f"image embeddings are off: set {IMAGE_SETTING}=true with an image-capable "
                "embedding provider (GEMINI_API_KEY, or EMBEDDING_PROVIDER=openai and a "
                "multimodal EMBEDDING_MODEL) to enable vision-embed and vision-search",
            )
        )
    p = load(ProviderSettings)
    k = kernel_settings()
    kind: Kind | None
    if s.image_provider == "gemini" or (s.image_provider == "auto" and p.gemini_key):
        kind = "gemini"
    elif s.image_provider == "openai" or (
        s.image_provider == "auto" and kernel_settings().embedding_provider == "openai"
    ):
        kind = "openai"
    else:
        kind = None
    if kind == "gemini":
        if not p.gemini_key:
            return _raise(
                not_configured(
                    "GEMINI_API_KEY", "AGENTMEMORY_IMAGE_PROVIDER=gemini needs GEMINI_API_KEY"
                )
            )
        base = p.gemini_url.rstrip("/").removesuffix("/openai")
        return GeminiImages(base=base, key=p.gemini_key, model=s.image_model or GEMINI_MODEL)
    if kind == "openai":
        return OpenAICompatibleImages(
            base=k.embedding_url.rstrip("/"),
            key=k.embedding_key or p.openai_key,
            model=s.image_model or k.embedding_model,
        )
    return _raise(
        not_configured(
            "GEMINI_API_KEY",
            f"{IMAGE_SETTING}=true, but no image-capable embedding provider is configured: "
            "set GEMINI_API_KEY (Gemini's multimodal embeddings), or EMBEDDING_PROVIDER=openai "
            "with EMBEDDING_BASE_URL and EMBEDDING_MODEL (or AGENTMEMORY_IMAGE_MODEL) of a "
            "model that embeds images",
        )
    )


def _raise(err: FunctionError) -> ImageEmbedder:
    raise err
