"""The feature flags' own settings: image search, and context injection as the hooks read
it (workers/hooks/_settings.py declares it for them, the same way)."""

from __future__ import annotations

from dataclasses import dataclass

from engine.settings import flag, load

IMAGE_SETTING = "AGENTMEMORY_IMAGE_EMBEDDINGS"


@dataclass(frozen=True)
class SurfaceSettings:
    """Feature flags and image search."""

    image_embeddings: bool = flag(
        IMAGE_SETTING,
        False,
        "Image search (vision-embed, vision-search); needs an image-capable (CLIP) provider, "
        "which this build does not have: both answer 501 either way.",
    )
    inject_context: bool = flag(
        "AGENTMEMORY_INJECT_CONTEXT",
        False,
        "The hooks write recalled context into the agent's conversation.",
    )


def surface_settings() -> SurfaceSettings:
    return load(SurfaceSettings)
