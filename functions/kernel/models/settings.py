"""Which model providers are configured, read from the environment under upstream
agentmemory's variable names and in its order.

Upstream picks the first provider whose key is set: OpenAI-compatible (unless
`OPENAI_API_KEY_FOR_LLM=false`), MiniMax, Anthropic, Gemini (`GEMINI_API_KEY`, or
`GOOGLE_API_KEY`), OpenRouter; `FALLBACK_PROVIDERS` lists the ones tried after it, each with
its own default model. Our additions, all optional: `AGENTMEMORY_PROVIDER=<name>` puts that
provider first (`noop` turns models off), `GEMINI_BASE_URL` / `OPENROUTER_BASE_URL` for
proxies (upstream has fixed URLs), `OPENAI_AZURE=true` for an Azure resource behind a custom
domain, and the breaker's three numbers. docs/MODELS.md lists every name.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from functions.kernel.models.urls import is_azure

Format = Literal["openai", "anthropic"]
PROVIDERS = ("openai", "minimax", "anthropic", "gemini", "openrouter")
"""Upstream's detection order."""
DEFAULT_MODELS = {
    "openai": "gpt-5.6-luna",
    "minimax": "MiniMax-M3",
    "anthropic": "claude-sonnet-5",
    "gemini": "gemini-3.7-flash",
    "openrouter": "anthropic/claude-sonnet-5",
}
GEMINI_URL = "https://generativelanguage.googleapis.com/v1beta/openai"
OPENROUTER_URL = "https://openrouter.ai/api/v1"
AZURE_API_VERSION = "2024-08-01-preview"
REFERER = "https://github.com/rohitg00/agentmemory"
"""OpenRouter's attribution header, as upstream sends it."""


def _real(v: str | None) -> str:
    return v.strip() if v and v.strip() else ""


def _positive_int(raw: str | None) -> int | None:
    """Digits only: "30ms" or "1_000" is a typo, not 30 or 1 (as upstream)."""
    if raw is None or not re.fullmatch(r"\d+", raw.strip()):
        return None
    n = int(raw.strip())
    return n if n > 0 else None


@dataclass(frozen=True)
class Provider:
    name: str
    """openai, minimax, anthropic, gemini or openrouter."""
    format: Format
    api_key: str
    model: str
    base_url: str
    timeout: float
    """Seconds for one call, retries included."""
    max_tokens: int = 4096
    azure: bool = False
    api_version: str = AZURE_API_VERSION
    reasoning_effort: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    """Extra request headers (OpenRouter's referer)."""


@dataclass(frozen=True)
class BreakerSettings:
    failures: int = 3
    """Failures within `window` that open a provider's breaker."""
    window: float = 60.0
    """Seconds after which an old failure no longer counts."""
    recovery: float = 30.0
    """Seconds an open breaker waits before it lets one call probe (half-open)."""


@dataclass(frozen=True)
class ModelSettings:
    chain: tuple[Provider, ...] = ()
    """The primary first, then the fallbacks; empty: no model (keyless)."""
    breaker: BreakerSettings = field(default_factory=BreakerSettings)
    nothink: bool = False
    """AGENTMEMORY_LLM_NOTHINK=1: ask reasoning models to skip thinking (graph prompts)."""

    @property
    def enabled(self) -> bool:
        return bool(self.chain)

    @property
    def primary(self) -> str:
        return self.chain[0].name if self.chain else "noop"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ModelSettings:
        e = dict(os.environ if env is None else env)
        breaker = BreakerSettings(
            failures=_positive_int(e.get("AGENTMEMORY_LLM_BREAKER_FAILURES")) or 3,
            window=(_positive_int(e.get("AGENTMEMORY_LLM_BREAKER_WINDOW_MS")) or 60_000) / 1000,
            recovery=(_positive_int(e.get("AGENTMEMORY_LLM_BREAKER_RECOVERY_MS")) or 30_000) / 1000,
        )
        nothink = e.get("AGENTMEMORY_LLM_NOTHINK", "") == "1"
        forced = e.get("AGENTMEMORY_PROVIDER", "").strip().lower()
        if forced == "noop":
            return cls(breaker=breaker, nothink=nothink)
        order = [p for p in PROVIDERS if provider(p, e) is not None]
        if forced in order:
            order.remove(forced)
            order.insert(0, forced)
        if not order:
            return cls(breaker=breaker, nothink=nothink)
        names = [order[0]]
        for raw in e.get("FALLBACK_PROVIDERS", "").split(","):
            name = raw.strip().lower()
            if name in PROVIDERS and name not in names and provider(name, e) is not None:
                names.append(name)
        chain = tuple(p for p in (provider(n, e) for n in names) if p is not None)
        return cls(chain=chain, breaker=breaker, nothink=nothink)


def _timeout(e: Mapping[str, str], name: str) -> float:
    ms = None
    if name == "openai":  # upstream's OpenAI-scoped alias wins for back-compat
        ms = _positive_int(e.get("OPENAI_TIMEOUT_MS"))
    ms = ms or _positive_int(e.get("AGENTMEMORY_LLM_TIMEOUT_MS")) or 60_000
    return min(ms, 170_000) / 1000  # upstream's hard cap, under any invocation timeout


def provider(name: str, e: Mapping[str, str]) -> Provider | None:
    """The provider `name` as the environment configures it, or None without its key."""
    tokens = _positive_int(e.get("MAX_TOKENS")) or 4096
    timeout = _timeout(e, name)
    model = _real(e.get(f"{name.upper()}_MODEL")) or DEFAULT_MODELS[name]
    if name == "openai":
        key = _real(e.get("OPENAI_API_KEY"))
        if not key or e.get("OPENAI_API_KEY_FOR_LLM", "").strip().lower() == "false":
            return None
        base = _real(e.get("OPENAI_BASE_URL")) or "https://api.openai.com"
        return Provider(
            name,
            "openai",
            key,
            model,
            base,
            timeout,
            tokens,
            azure=is_azure(base) or e.get("OPENAI_AZURE", "").strip().lower() == "true",
            api_version=_real(e.get("OPENAI_API_VERSION")) or AZURE_API_VERSION,
            reasoning_effort=_real(e.get("OPENAI_REASONING_EFFORT")),
        )
    if name == "minimax":
        key = _real(e.get("MINIMAX_API_KEY"))
        base = _real(e.get("MINIMAX_BASE_URL")) or "https://api.minimax.io/anthropic"
        return Provider(name, "anthropic", key, model, base, timeout, tokens) if key else None
    if name == "anthropic":
        key = _real(e.get("ANTHROPIC_API_KEY"))
        base = _real(e.get("ANTHROPIC_BASE_URL")) or "https://api.anthropic.com"
        return Provider(name, "anthropic", key, model, base, timeout, tokens) if key else None
    if name == "gemini":
        key = _real(e.get("GEMINI_API_KEY")) or _real(e.get("GOOGLE_API_KEY"))
        base = _real(e.get("GEMINI_BASE_URL")) or GEMINI_URL
        return Provider(name, "openai", key, model, base, timeout, tokens) if key else None
    if name == "openrouter":
        key = _real(e.get("OPENROUTER_API_KEY"))
        base = _real(e.get("OPENROUTER_BASE_URL")) or OPENROUTER_URL
        return (
            Provider(
                name,
                "openai",
                key,
                model,
                base,
                timeout,
                tokens,
                headers=(("HTTP-Referer", REFERER),),
            )
            if key
            else None
        )
    return None
