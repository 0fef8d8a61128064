"""The feature flags' own settings: image search and its provider, and context injection
as the hooks read it (workers/hooks/_settings.py declares it for them, the same way).

Image search is upstream's flag (AGENTMEMORY_IMAGE_EMBEDDINGS) over the embedding
providers' own variables (GEMINI_API_KEY and GEMINI_BASE_URL, or EMBEDDING_PROVIDER=openai
with EMBEDDING_BASE_URL, EMBEDDING_MODEL, EMBEDDING_API_KEY); upstream has no remote image
provider (only a local CLIP model), so AGENTMEMORY_IMAGE_PROVIDER and
AGENTMEMORY_IMAGE_MODEL are ours. The EMBEDDING_* variables are the kernel's (shared with
search)."""

from __future__ import annotations

from dataclasses import dataclass

from engine.settings import choice, flag, load, text

IMAGE_SETTING = "AGENTMEMORY_IMAGE_EMBEDDINGS"
IMAGE_PROVIDERS = ("auto", "gemini", "openai")


@dataclass(frozen=True)
class SurfaceSettings:
    """Feature flags and image search."""

    image_embeddings: bool = flag(
        IMAGE_SETTING,
        False,
        "Image search (vision-embed, vision-search) through an image-capable embedding "
        "provider: Gemini's multimodal embeddings (GEMINI_API_KEY) or an OpenAI-compatible "
        "one (EMBEDDING_PROVIDER=openai); off, both answer 501 naming this variable.",
    )
    image_provider: str = choice(
        "AGENTMEMORY_IMAGE_PROVIDER",
        "auto",
        IMAGE_PROVIDERS,
        "Which provider embeds images: gemini, openai (EMBEDDING_BASE_URL), or auto (gemini "
        "when GEMINI_API_KEY is set, else openai when EMBEDDING_PROVIDER=openai).",
    )
    image_model: str = text(
        "AGENTMEMORY_IMAGE_MODEL",
        "",
        "The multimodal embedding model (it embeds both texts and images).",
        shown="gemini-embedding-2 (gemini), EMBEDDING_MODEL (openai)",
    )
    inject_context: bool = flag(
        "AGENTMEMORY_INJECT_CONTEXT",
        False,
        "The hooks write recalled context into the agent's conversation.",
    )


def surface_settings() -> SurfaceSettings:
    return load(SurfaceSettings)
