"""The poisoning check's settings: whether borderline records are asked of the model."""

from __future__ import annotations

from dataclasses import dataclass

from engine.settings import duration, flag, load


@dataclass(frozen=True)
class TrustSettings:
    """Poisoning caught at write (functions/kernel/trust): keyless unless asked."""

    second_opinion: bool = flag(
        "AGENTMEMORY_TRUST_MODEL",
        False,
        "Ask the configured model about borderline records at write; a yes holds the "
        "record (a provider must be configured).",
    )
    second_opinion_timeout: float = duration(
        "AGENTMEMORY_TRUST_MODEL_SECONDS",
        10.0,
        "How long a write waits for the model's second opinion before it keeps the "
        "keyless verdict.",
        lo=0.1,
    )


def trust_settings() -> TrustSettings:
    return load(TrustSettings)
