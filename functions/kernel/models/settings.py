"""Which model providers are configured, read from the environment under upstream
agentmemory's variable names and in its order.

Upstream picks the first provider whose key is set: OpenAI-compatible (unless
`OPENAI_API_KEY_FOR_LLM=false`), MiniMax, Anthropic, Gemini (`GEMINI_API_KEY`, or
`GOOGLE_API_KEY`), OpenRouter; `FALLBACK_PROVIDERS` lists the ones tried after it, each with
its own default model. Our additions, all optional: `AGENTMEMORY_PROVIDER=<name>` puts that
provider first (`noop` turns models off), `GEMINI_BASE_URL` / `OPENROUTER_BASE_URL` for
proxies (upstream has fixed URLs), `OPENAI_AZURE=true` for an Azure resource behind a custom
domain, and the breaker's three numbers. `ProviderSettings` declares every name
(docs/CONFIG.md lists them; docs/MODELS.md says how they combine).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from engine.settings import choice, duration, flag, integer, items, load, text
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
class ProviderSettings:
    """Model providers, under upstream agentmemory's names and in its order: the first
    provider with a key is the primary, FALLBACK_PROVIDERS the ones tried after it."""

    provider: str = choice(
        "AGENTMEMORY_PROVIDER",
        "",
        (*PROVIDERS, "noop"),
        "Put this provider first (noop: no model at all).",
        shown="upstream's order",
    )
    fallbacks: tuple[str, ...] = items(
        "FALLBACK_PROVIDERS",
        (),
        "Providers tried after the primary, in order (a name this build does not know is "
        "skipped, as upstream skips it).",
    )
    openai_key: str = text("OPENAI_API_KEY", "", "OpenAI-compatible provider's key.")
    openai_for_llm: bool = flag(
        "OPENAI_API_KEY_FOR_LLM",
        True,
        "false: OPENAI_API_KEY serves embeddings only, never the model.",
    )
    openai_url: str = text("OPENAI_BASE_URL", "https://api.openai.com", "OpenAI-compatible URL.")
    openai_model: str = text("OPENAI_MODEL", DEFAULT_MODELS["openai"], "OpenAI model.")
    openai_azure: bool = flag(
        "OPENAI_AZURE", False, "An Azure resource behind a custom domain (azure.com is seen)."
    )
    openai_api_version: str = text("OPENAI_API_VERSION", AZURE_API_VERSION, "Azure API version.")
    openai_reasoning_effort: str = text(
        "OPENAI_REASONING_EFFORT", "", "Sent as `reasoning_effort` (low, medium, high)."
    )
    openai_timeout_ms: int | None = duration(
        "OPENAI_TIMEOUT_MS",
        None,
        "OpenAI's own timeout; wins over AGENTMEMORY_LLM_TIMEOUT_MS for it.",
        unit="milliseconds",
        lo=1,
    )
    minimax_key: str = text("MINIMAX_API_KEY", "", "MiniMax's key.")
    minimax_url: str = text(
        "MINIMAX_BASE_URL", "https://api.minimax.io/anthropic", "MiniMax's Anthropic-format URL."
    )
    minimax_model: str = text("MINIMAX_MODEL", DEFAULT_MODELS["minimax"], "MiniMax model.")
    anthropic_key: str = text("ANTHROPIC_API_KEY", "", "Anthropic's key.")
    anthropic_url: str = text("ANTHROPIC_BASE_URL", "https://api.anthropic.com", "Anthropic URL.")
    anthropic_model: str = text("ANTHROPIC_MODEL", DEFAULT_MODELS["anthropic"], "Claude model.")
    gemini_key: str = text(("GEMINI_API_KEY", "GOOGLE_API_KEY"), "", "Gemini's key.")
    gemini_url: str = text("GEMINI_BASE_URL", GEMINI_URL, "Gemini's OpenAI-format URL.")
    gemini_model: str = text("GEMINI_MODEL", DEFAULT_MODELS["gemini"], "Gemini model.")
    openrouter_key: str = text("OPENROUTER_API_KEY", "", "OpenRouter's key.")
    openrouter_url: str = text("OPENROUTER_BASE_URL", OPENROUTER_URL, "OpenRouter URL.")
    openrouter_model: str = text(
        "OPENROUTER_MODEL", DEFAULT_MODELS["openrouter"], "OpenRouter model."
    )
    timeout_ms: int = duration(
        "AGENTMEMORY_LLM_TIMEOUT_MS",
        60_000,
        "One model call, retries included (at most 170000).",
        unit="milliseconds",
        lo=1,
    )
    max_tokens: int = integer("MAX_TOKENS", 4096, "Tokens a model reply may take.", lo=1)
    breaker_failures: int = integer(
        "AGENTMEMORY_LLM_BREAKER_FAILURES",
        3,
        "Failures within the window that open a provider's breaker.",
        lo=1,
    )
    breaker_window_ms: int = duration(
        "AGENTMEMORY_LLM_BREAKER_WINDOW_MS",
        60_000,
        "After this long an old failure no longer counts.",
        unit="milliseconds",
        lo=1,
    )
    breaker_recovery_ms: int = duration(
        "AGENTMEMORY_LLM_BREAKER_RECOVERY_MS",
        30_000,
        "An open breaker waits this long before it lets one call probe.",
        unit="milliseconds",
        lo=1,
    )
    nothink: bool = flag(
        "AGENTMEMORY_LLM_NOTHINK", False, "Ask reasoning models to skip thinking (graph prompts)."
    )


@dataclass(frozen=True)
class ModelSettings:
    chain: tuple[Provider, ...] = ()
    """The primary first, then the fallbacks; empty: no model (keyless)."""
    breaker: BreakerSettings = field(default_factory=BreakerSettings)
    nothink: bool = False
    """AGENTMEMORY_LLM_NOTHINK: ask reasoning models to skip thinking (graph prompts)."""

    @property
    def enabled(self) -> bool:
        return bool(self.chain)

    @property
    def primary(self) -> str:
        return self.chain[0].name if self.chain else "noop"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ModelSettings:
        """The providers the environment (or `env`) configures."""
        e = load(ProviderSettings, env)
        breaker = BreakerSettings(
            failures=e.breaker_failures,
            window=e.breaker_window_ms / 1000,
            recovery=e.breaker_recovery_ms / 1000,
        )
        if e.provider == "noop":
            return cls(breaker=breaker, nothink=e.nothink)
        order = [p for p in PROVIDERS if provider(p, e) is not None]
        if e.provider in order:
            order.remove(e.provider)
            order.insert(0, e.provider)
        if not order:
            return cls(breaker=breaker, nothink=e.nothink)
        names = [order[0]]
        for name in (n.lower() for n in e.fallbacks):
            if name in PROVIDERS and name not in names and provider(name, e) is not None:
                names.append(name)
        chain = tuple(p for p in (provider(n, e) for n in names) if p is not None)
        return cls(chain=chain, breaker=breaker, nothink=e.nothink)


def provider(name: str, e: ProviderSettings) -> Provider | None:
    """The provider `name` as the settings configure it, or None without its key."""
    # upstream's OpenAI-scoped alias wins for back-compat; its hard cap stays under any
    # invocation timeout
    ms = (e.openai_timeout_ms if name == "openai" else None) or e.timeout_ms
    timeout = min(ms, 170_000) / 1000
    tokens = e.max_tokens
    if name == "openai":
        if not e.openai_key or not e.openai_for_llm:
            return None
        return Provider(
            name,
            "openai",
            e.openai_key,
            e.openai_model,
            e.openai_url,
            timeout,
            tokens,
            azure=is_azure(e.openai_url) or e.openai_azure,
            api_version=e.openai_api_version,
            reasoning_effort=e.openai_reasoning_effort,
        )
    if name == "minimax" and e.minimax_key:
        return Provider(
            name, "anthropic", e.minimax_key, e.minimax_model, e.minimax_url, timeout, tokens
        )
    if name == "anthropic" and e.anthropic_key:
        return Provider(
            name, "anthropic", e.anthropic_key, e.anthropic_model, e.anthropic_url, timeout, tokens
        )
    if name == "gemini" and e.gemini_key:
        return Provider(name, "openai", e.gemini_key, e.gemini_model, e.gemini_url, timeout, tokens)
    if name == "openrouter" and e.openrouter_key:
        return Provider(
            name,
            "openai",
            e.openrouter_key,
            e.openrouter_model,
            e.openrouter_url,
            timeout,
            tokens,
            headers=(("HTTP-Referer", REFERER),),
        )
    return None
