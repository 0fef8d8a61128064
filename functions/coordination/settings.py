"""Coordination's settings: whether crystals are worded by the model (upstream's name)."""

from __future__ import annotations

from dataclasses import dataclass

from engine.settings import flag, load


@dataclass(frozen=True)
class CoordinationSettings:
    """Actions, leases, signals, crystals."""

    crystals_llm: bool = flag(
        "AGENTMEMORY_CRYSTALS_LLM",
        True,
        "Let the model word crystals when a provider is configured (false: the "
        "deterministic digest).",
    )


def coordination_settings() -> CoordinationSettings:
    return load(CoordinationSettings)
