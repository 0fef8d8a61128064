"""Retrieval's settings: where the index snapshot lives and how often it is taken, the
freshness fence, the context block's budget and the embedding provider's endpoint (which
provider, EMBEDDING_PROVIDER, the kernel's settings hold: the feature flags read it too)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine.settings import duration, flag, integer, load, path, text


@dataclass(frozen=True)
class SearchSettings:
    """The search read model of MEM_EVENTS and the context block."""

    index_dir: Path | None = path(
        "SEARCH_INDEX_DIR",
        None,
        "Where a search replica keeps its index snapshot as a file.",
        shown="<data dir>/search",
    )
    snapshot_seconds: float = duration(
        "SEARCH_SNAPSHOT_SECONDS", 60.0, "How often the index is snapshotted (at most)."
    )
    trim_seconds: float = duration(
        "SEARCH_TRIM_SECONDS",
        10.0,
        "How often mapped pages queries read are handed back (0: at snapshots only).",
    )
    embed_queue: bool = flag(
        "SEARCH_EMBED_QUEUE", False, "Embed new documents through a queue, off the feed's path."
    )
    freshness_seconds: float = duration(
        "SEARCH_FRESHNESS_SECONDS",
        2.0,
        "How long a query waits for every acknowledged write to be indexed (0: no wait).",
    )
    stream_reach_seconds: float = duration(
        "SEARCH_STREAM_REACH_SECONDS",
        0.75,
        "How long a query tries to reach MEM_EVENTS for the freshness fence before it "
        "answers from its index, marked stale (a partition, a leader election).",
    )
    token_budget: int = integer(
        "TOKEN_BUDGET",
        2000,
        "The context block's default size in tokens.",
        lo=50,
        hi=100_000,
        clamp=True,
    )
    embedding_url: str = text(
        "EMBEDDING_BASE_URL",
        "https://api.openai.com/v1",
        "EMBEDDING_PROVIDER=openai: the OpenAI-compatible server (OpenAI, Ollama, vLLM).",
    )
    embedding_model: str = text(
        "EMBEDDING_MODEL", "text-embedding-3-small", "EMBEDDING_PROVIDER=openai: the model."
    )
    embedding_key: str = text(
        "EMBEDDING_API_KEY",
        "",
        "EMBEDDING_PROVIDER=openai: the key.",
        shown="OPENAI_API_KEY",
    )


def search_settings() -> SearchSettings:
    return load(SearchSettings)
