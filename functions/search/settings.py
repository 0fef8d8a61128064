"""Retrieval's settings: where the index snapshot lives and how often it is taken, the
freshness fence, the context block's budget and the embedding provider's endpoint (which
provider, EMBEDDING_PROVIDER, the kernel's settings hold: the feature flags read it too)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine.settings import duration, flag, integer, load, path


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


def search_settings() -> SearchSettings:
    return load(SearchSettings)
