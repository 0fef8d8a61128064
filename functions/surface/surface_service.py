"""What the service says about itself: its feature flags, and image search, through an
image-capable embedding provider (functions/surface/vision.py), which says which setting
is missing (501) rather than answering with anything made up. (The viewer is its own
worker: workers/viewer.)"""

from __future__ import annotations

import msgspec

from engine import FunctionError, Tool, operation
from functions.kernel.owned import OwnedService, routes
from functions.kernel.settings import kernel_settings
from functions.kernel.store import StoreOwner
from functions.lifecycle.settings import LifecycleConfig
from functions.surface import vision
from functions.surface.image_provider import image_provider
from functions.surface.settings import IMAGE_SETTING, surface_settings

VERSION = "0.9.29"
"""The upstream API version this surface answers as."""


class Flag(msgspec.Struct, rename="camel", kw_only=True):
    key: str
    label: str
    enabled: bool
    default: bool
    needs_llm: bool
    description: str
    enable_how: str
    value: str = ""


class FlagsOut(msgspec.Struct, rename="camel", kw_only=True):
    version: str
    provider: str
    """llm when an LLM key is configured, else noop (deterministic text only)."""
    embedding_provider: str
    flags: list[Flag]


def image_search_on() -> bool:
    try:
        image_provider()
    except FunctionError:
        return False
    return True


def flags() -> list[Flag]:
    cfg = LifecycleConfig.from_env()
    shared = kernel_settings()
    embed = shared.embedding_provider
    return [
        Flag(
            key="CONSOLIDATION_ENABLED",
            label="LLM-rewritten consolidation",
            enabled=bool(cfg.consolidation_llm) and cfg.llm.enabled,
            default=False,
            needs_llm=True,
            description="Consolidated facts and procedures are worded by the model; on by "
            "default once a provider is configured; off keeps the deterministic text (the "
            "pipeline always runs).",
            enable_how="Set a provider key (ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY, "
            "OPENROUTER_API_KEY or MINIMAX_API_KEY); CONSOLIDATION_ENABLED=false opts out.",
            value=cfg.llm.settings.primary,
        ),
        Flag(
            key="AGENTMEMORY_INJECT_CONTEXT",
            label="In-conversation context injection",
            enabled=surface_settings().inject_context,
            default=False,
            needs_llm=False,
            description="The hooks write recalled context into the agent's conversation; off "
            "captures in the background without injecting.",
            enable_how="Set AGENTMEMORY_INJECT_CONTEXT=true for the hooks, then restart.",
        ),
        Flag(
            key="EMBEDDING_PROVIDER",
            label="Vector search",
            enabled=embed != "none",
            default=False,
            needs_llm=False,
            value=embed,
            description="Embeddings add a vector stream to search (BM25 and the graph always run).",
            enable_how="Set EMBEDDING_PROVIDER=local (all-MiniLM-L6-v2) or openai, then restart.",
        ),
        Flag(
            key=IMAGE_SETTING,
            label="Image search",
            enabled=image_search_on(),
            default=False,
            needs_llm=False,
            description="vision-embed / vision-search through an image-capable embedding "
            "provider (Gemini's multimodal embeddings or an OpenAI-compatible one); without "
            "one both answer 501 naming the setting.",
            enable_how=f"Set {IMAGE_SETTING}=true and GEMINI_API_KEY (or EMBEDDING_PROVIDER="
            "openai with a multimodal EMBEDDING_MODEL), then restart.",
        ),
        Flag(
            key="AGENTMEMORY_AGENT_SCOPE",
            label="Per-agent isolation",
            enabled=shared.agent_scope == "isolated",
            default=False,
            needs_llm=False,
            description="Each agent reads only its own records.",
            enable_how="Set AGENTMEMORY_AGENT_SCOPE=isolated, then restart.",
        ),
        Flag(
            key="LESSON_DECAY_ENABLED",
            label="Lesson decay",
            enabled=cfg.decay.lesson_decay,
            default=True,
            needs_llm=False,
            description="Lessons lose strength when unused.",
            enable_how="Set LESSON_DECAY_ENABLED=false to keep lessons at full strength.",
        ),
        Flag(
            key="AGENTMEMORY_TOOLS",
            label="MCP tool set",
            enabled=True,
            default=True,
            needs_llm=False,
            value=shared.tools,
            description="Which MCP tools clients see: core (8), basic (14) or all.",
            enable_how="Set AGENTMEMORY_TOOLS=core|basic|all for the MCP server.",
        ),
    ]


rest = routes("service")


class SurfaceService(OwnedService[StoreOwner]):
    """Served beside the worker's main service, over its store."""

    BUCKET = vision.IMAGES_BUCKET

    @operation(
        "mem::config-flags",
        description="Feature flags: what is on, what it needs, how to turn it on",
        http=rest("GET", "config/flags", source="none"),
    )
    async def config_flags(self) -> FlagsOut:
        cfg = LifecycleConfig.from_env()
        embed = kernel_settings().embedding_provider
        return FlagsOut(
            version=VERSION,
            provider="llm" if cfg.llm.enabled else "noop",
            embedding_provider="none" if embed == "none" else "embeddings",
            flags=flags(),
        )

    @operation(
        "mem::vision-search",
        description="Cross-modal image search (queryText, queryImageRef or queryImageBase64) "
        f"over images embedded by vision-embed. Requires {IMAGE_SETTING}=true and an "
        "image-capable embedding provider; otherwise answers 501 naming the setting.",
        http=rest("POST", "vision-search", max_body=32 * 1024 * 1024),
        tool=Tool("memory_vision_search", tier="basic"),
    )
    async def vision_search(self, req: vision.VisionSearchRequest) -> vision.VisionSearchOut:
        if not (req.query_text.strip() or req.query_image_ref or req.query_image_base64):
            raise FunctionError(
                "BAD_REQUEST",
                "queryText, queryImageRef, or queryImageBase64 required",
                field="queryText",
            )
        return await vision.search(await self.bucket(), image_provider(), req)

    @operation(
        "mem::vision-embed",
        description="Embed an image (imageRef: a file under the allowed roots, or "
        f"imageBase64) for vision-search (needs {IMAGE_SETTING} and an image provider)",
        http=rest("POST", "vision-embed", max_body=32 * 1024 * 1024),
    )
    async def vision_embed(self, req: vision.VisionEmbedRequest) -> vision.VisionEmbedOut:
        if not (req.image_ref or req.image_base64):
            raise FunctionError("BAD_REQUEST", "imageRef is required", field="imageRef")
        record = await vision.embed(await self.bucket(), image_provider(), req)
        await self.store.audit(
            "vision_embed",
            [record.image_ref],
            reason=f"{record.model}, {record.dimensions} dimensions",
        )
        return vision.VisionEmbedOut(
            success=True, image_ref=record.image_ref, dimensions=record.dimensions
        )
