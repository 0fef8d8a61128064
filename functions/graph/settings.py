"""The knowledge graph's settings: whether a model extracts entities and relations, and how
many observations one prompt carries (upstream's names)."""

from __future__ import annotations

from dataclasses import dataclass

from engine.settings import flag, integer, load


@dataclass(frozen=True)
class GraphSettings:
    """The knowledge graph's model extraction."""

    extraction: bool = flag(
        "GRAPH_EXTRACTION_ENABLED",
        False,
        "Let the model extract entities and relations (a provider must be configured).",
    )
    batch_size: int = integer(
        "GRAPH_EXTRACTION_BATCH_SIZE",
        10,
        "Observations one extraction prompt carries.",
        lo=1,
        clamp=True,
    )


def graph_settings() -> GraphSettings:
    return load(GraphSettings)
