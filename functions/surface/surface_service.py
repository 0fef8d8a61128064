"""What the service says about itself: its feature flags, and image search, which needs an
image-capable embedding provider and says so (501) rather than answering with anything
made up. (The viewer is its own worker: workers/viewer.)"""

from __future__ import annotations

from typing import Annotated

import msgspec

from engine import FunctionError, Tool, operation
from functions.kernel.names import TEXT, at_least_one_of
from functions.kernel.owned import OwnedService, routes
from functions.kernel.settings import kernel_settings
from functions.kernel.store import StoreOwner
from functions.lifecycle.settings import LifecycleConfig
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


class VisionSearchIn(msgspec.Struct, rename="camel", kw_only=True):
    query_text: str = ""
    query_image_ref: str = ""
    query_image_base64: Annotated[str, msgspec.Meta(max_length=16 * 1024 * 1024)] = ""
    top_k: Annotated[int, msgspec.Meta(ge=1, le=50)] = 10
    session_id: str = ""


VisionSearchRequest = Annotated[
    VisionSearchIn,
    msgspec.Meta(
        extra_json_schema=at_least_one_of(queryText=TEXT, queryImageRef=TEXT, queryImageBase64=TEXT)
    ),
]
"""A text or an image to search by."""


class VisionEmbedIn(msgspec.Struct, rename="camel", kw_only=True):
    image_ref: Annotated[str, msgspec.Meta(min_length=1, max_length=4096)]
    session_id: str = ""
    observation_id: str = ""


class VisionOut(msgspec.Struct, kw_only=True):
    success: bool
    results: list[dict[str, object]]


def no_image_provider() -> FunctionError:
    why = (
        f"{IMAGE_SETTING}=true is set, but no image-capable (CLIP) embedding provider is "
        "available in this build"
        if surface_settings().image_embeddings
        else f"image embeddings are off: set {IMAGE_SETTING}=true with an image-capable "
        "(CLIP) embedding provider to enable vision-embed and vision-search"
    )
    return FunctionError("NOT_IMPLEMENTED", why, field=IMAGE_SETTING, status=501)


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
            enabled=False,
            default=False,
            needs_llm=False,
            description="vision-embed / vision-search need an image-capable "
            "embedding provider; none is available, so both answer 501.",
            enable_how=f"Set {IMAGE_SETTING}=true with a CLIP provider.",
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
        description="Cross-modal image search via CLIP embeddings (queryText, queryImageRef or "
        f"queryImageBase64). Requires {IMAGE_SETTING}=true and an image-capable embedding "
        "provider; otherwise answers 501 naming the setting.",
        http=rest("POST", "vision-search", max_body=24 * 1024 * 1024),
        tool=Tool("memory_vision_search", tier="basic"),
    )
    async def vision_search(self, req: VisionSearchRequest) -> VisionOut:
        if not (req.query_text or req.query_image_ref or req.query_image_base64):
            raise FunctionError(
                "BAD_REQUEST",
                "give queryText, queryImageRef or queryImageBase64",
                field="queryText",
            )
        raise no_image_provider()

    @operation(
        "mem::vision-embed",
        description=f"Embed a stored image for vision-search (needs {IMAGE_SETTING})",
        http=rest("POST", "vision-embed"),
    )
    async def vision_embed(self, req: VisionEmbedIn) -> VisionOut:
        raise no_image_provider()
