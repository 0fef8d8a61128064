"""The provider layer against a local stand-in speaking each wire format: the request's
path, headers and body are what each provider documents (upstream's URL rules included),
the chain moves on from a 5xx and from a hang, the breaker opens and half-opens, 429 waits
what Retry-After says, and a secret in a prompt never reaches the stand-in."""

from __future__ import annotations

import time
from collections.abc import Iterator

import msgspec
import pytest

from engine.settings import SettingsError
from functions.kernel.models.breaker import Breaker
from functions.kernel.models.client import ModelClient
from functions.kernel.models.settings import ModelSettings
from functions.kernel.models.urls import chat_url, messages_url
from functions.kernel.scrub import scrub
from tests.models.standin import Answer, Seen, StandIn, answer, anthropic, fail, hang, openai

pytestmark = pytest.mark.unit

SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


class Note(msgspec.Struct):
    title: str
    facts: list[str] = []


@pytest.fixture
def standin() -> Iterator[StandIn]:
    s = StandIn(reply=lambda _: 'Here:\n```json\n{"title": "t", "facts": ["a"]}\n```')
    yield s
    s.close()


def client_for(env: dict[str, str]) -> ModelClient:
    return ModelClient(ModelSettings.from_env(env), scrub)


def test_base_urls_follow_upstreams_rules() -> None:
    assert chat_url("http://localhost:11434") == "http://localhost:11434/v1/chat/completions"
    assert chat_url("http://localhost:1234/v1/") == "http://localhost:1234/v1/chat/completions"
    assert chat_url("https://h/api/paas/v4") == "https://h/api/paas/v4/chat/completions"
    legacy = chat_url(
        "https://r.openai.azure.com/openai/deployments/gpt", azure=True, api_version="2024-08-01"
    )
    assert (
        legacy
        == "https://r.openai.azure.com/openai/deployments/gpt/chat/completions?api-version=2024-08-01"
    )
    assert chat_url("https://r.openai.azure.com", azure=True).endswith(
        "/openai/v1/chat/completions"
    )
    assert chat_url("https://r.openai.azure.com/openai/v1", azure=True) == (
        "https://r.openai.azure.com/openai/v1/chat/completions"
    )
    assert messages_url("https://api.minimax.io/anthropic") == (
        "https://api.minimax.io/anthropic/v1/messages"
    )
    assert messages_url("https://x/v1") == "https://x/v1/messages"


def test_precedence_and_fallbacks_are_upstreams() -> None:
    both = {"ANTHROPIC_API_KEY": "a", "OPENAI_API_KEY": "o", "GEMINI_API_KEY": "g"}
    assert ModelSettings.from_env(both).primary == "openai"
    assert (
        ModelSettings.from_env({**both, "OPENAI_API_KEY_FOR_LLM": "false"}).primary == "anthropic"
    )
    assert (
        ModelSettings.from_env({"MINIMAX_API_KEY": "m", "ANTHROPIC_API_KEY": "a"}).primary
        == "minimax"
    )
    assert (
        ModelSettings.from_env({"GOOGLE_API_KEY": "g", "OPENROUTER_API_KEY": "r"}).primary
        == "gemini"
    )
    s = ModelSettings.from_env(
        {
            "OPENROUTER_API_KEY": "r",
            "ANTHROPIC_API_KEY": "a",
            "FALLBACK_PROVIDERS": "openrouter, bogus, gemini",
        }
    )
    assert [p.name for p in s.chain] == ["anthropic", "openrouter"]  # gemini has no key
    assert s.chain[1].model == "anthropic/claude-sonnet-5"  # its own default model (#778)
    forced = ModelSettings.from_env({**both, "AGENTMEMORY_PROVIDER": "gemini"})
    assert forced.primary == "gemini"
    assert not ModelSettings.from_env({**both, "AGENTMEMORY_PROVIDER": "noop"}).enabled
    assert not ModelSettings.from_env({"OPENAI_API_KEY": "  "}).enabled
    t = ModelSettings.from_env({"OPENAI_API_KEY": "o", "AGENTMEMORY_LLM_TIMEOUT_MS": "1500"})
    assert t.chain[0].timeout == 1.5
    with pytest.raises(SettingsError, match="OPENAI_TIMEOUT_MS"):  # a typo, not 30 ms
        ModelSettings.from_env({"OPENAI_API_KEY": "o", "OPENAI_TIMEOUT_MS": "30ms"})
    assert (
        ModelSettings.from_env({"OPENAI_API_KEY": "o", "OPENAI_TIMEOUT_MS": "900"}).chain[0].timeout
        == 0.9
    )
    assert (
        ModelSettings.from_env({"ANTHROPIC_API_KEY": "a", "MAX_TOKENS": "512"}).chain[0].max_tokens
        == 512
    )


async def test_openai_compatible_with_an_ollama_base_and_no_secret_sent(standin: StandIn) -> None:
    c = client_for(
        {"OPENAI_API_KEY": "local", "OPENAI_BASE_URL": standin.url, "OPENAI_MODEL": "qwen3:8b"}
    )
    got = await c.ask("test", "system words", f"notes with {SECRET} inside", Note)
    await c.close()
    assert got == Note("t", ["a"])
    [seen] = standin.requests
    assert seen.path == "/v1/chat/completions"  # Ollama's, from a base without /v1
    assert seen.headers["authorization"] == "Bearer local"
    assert seen.headers["content-type"] == "application/json"
    assert seen.body["model"] == "qwen3:8b" and seen.body["stream"] is False
    assert seen.body["max_tokens"] == 4096 and "reasoning_effort" not in seen.body
    assert [m["role"] for m in seen.body["messages"]] == ["system", "user"]
    assert SECRET not in seen.text and "[REDACTED" in seen.text
    assert c.usage.providers["openai"].tokens_in == 11 and c.usage.tasks["test"].answered == 1


async def test_azure_sends_api_key_and_api_version(standin: StandIn) -> None:
    c = client_for({
        "OPENAI_API_KEY": "az", "OPENAI_AZURE": "true", "OPENAI_API_VERSION": "2025-01-01",
        "OPENAI_BASE_URL": standin.url + "/openai/deployments/mini", "OPENAI_REASONING_EFFORT": "low",
    })  # fmt: skip
    assert await c.ask("test", "s", "u", Note) is not None
    await c.close()
    [seen] = standin.requests
    assert seen.path == "/openai/deployments/mini/chat/completions"
    assert seen.query == "api-version=2025-01-01"
    assert seen.headers["api-key"] == "az" and "authorization" not in seen.headers
    assert seen.body["reasoning_effort"] == "low"


@pytest.mark.parametrize(
    ("env", "path"),
    [
        ({"ANTHROPIC_API_KEY": "k"}, "/v1/messages"),
        ({"MINIMAX_API_KEY": "k"}, "/anthropic/v1/messages"),
    ],
)
async def test_anthropic_format(standin: StandIn, env: dict[str, str], path: str) -> None:
    name = "ANTHROPIC" if "ANTHROPIC_API_KEY" in env else "MINIMAX"
    base = standin.url + ("/anthropic" if name == "MINIMAX" else "")
    c = client_for({**env, f"{name}_BASE_URL": base, f"{name}_MODEL": "m"})
    assert await c.ask("test", "be brief", "u", Note) == Note("t", ["a"])
    await c.close()
    [seen] = standin.requests
    assert seen.path == path
    assert seen.headers["x-api-key"] == "k" and seen.headers["anthropic-version"] == "2023-06-01"
    assert not any(h.startswith("x-stainless") for h in seen.headers)  # MiniMax refuses them
    assert seen.body == {
        "model": "m", "max_tokens": 4096, "system": "be brief",
        "messages": [{"role": "user", "content": "u"}],
    }  # fmt: skip
    assert c.usage.providers[c.settings.primary].tokens_out == 7


@pytest.mark.parametrize(
    ("name", "path", "referer"),
    [
        ("GEMINI", "/v1beta/openai/chat/completions", False),
        ("OPENROUTER", "/api/v1/chat/completions", True),
    ],
)
async def test_gemini_and_openrouter(standin: StandIn, name: str, path: str, referer: bool) -> None:
    base = standin.url + path.removesuffix("/chat/completions")
    c = client_for({f"{name}_API_KEY": "k", f"{name}_BASE_URL": base})
    assert await c.ask("test", "s", "u", Note) is not None
    await c.close()
    [seen] = standin.requests
    assert seen.path == path and seen.headers["authorization"] == "Bearer k"
    assert ("http-referer" in seen.headers) is referer
    assert seen.body["model"] == (
        "gemini-3.7-flash" if name == "GEMINI" else "anthropic/claude-sonnet-5"
    )


async def test_the_chain_moves_on_from_a_5xx_and_a_hang_and_the_breaker_opens(
    standin: StandIn,
) -> None:
    standin.routes["/m/v1/messages"] = fail(502)
    standin.routes["/a/v1/messages"] = hang
    standin.routes["/g/chat/completions"] = answer(openai, '{"title": "from gemini"}')
    c = client_for({
        "MINIMAX_API_KEY": "m", "MINIMAX_BASE_URL": standin.url + "/m",
        "ANTHROPIC_API_KEY": "a", "ANTHROPIC_BASE_URL": standin.url + "/a",
        "GEMINI_API_KEY": "g", "GEMINI_BASE_URL": standin.url + "/g",
        "FALLBACK_PROVIDERS": "anthropic,gemini", "AGENTMEMORY_LLM_TIMEOUT_MS": "300",
        "AGENTMEMORY_LLM_BREAKER_RECOVERY_MS": "500",
    })  # fmt: skip
    assert [p.name for p in c.settings.chain] == ["minimax", "anthropic", "gemini"]
    for _ in range(3):
        assert await c.ask("test", "s", "u", Note) == Note("from gemini")
    u = c.usage.providers
    assert (u["minimax"].failed, u["anthropic"].failed, u["gemini"].ok) == (3, 3, 3)
    assert "502" in u["minimax"].last_error and "0.3 s" in u["anthropic"].last_error
    assert c.breakers["minimax"].state == c.breakers["anthropic"].state == "open"
    before = len(standin.requests)
    assert await c.ask("test", "s", "u", Note) == Note("from gemini")
    assert len(standin.requests) == before + 1  # the open ones are not asked
    assert u["minimax"].skipped == u["anthropic"].skipped == 1
    time.sleep(0.55)
    assert c.breakers["minimax"].current() == "half-open"
    standin.routes["/m/v1/messages"] = answer(anthropic, '{"title": "minimax is back"}')
    assert await c.ask("test", "s", "u", Note) == Note("minimax is back")
    assert c.breakers["minimax"].state == "closed"  # the half-open call succeeded
    await c.close()


async def test_every_provider_failing_or_a_malformed_reply_is_none_and_counted(
    standin: StandIn,
) -> None:
    standin.routes["/v1/chat/completions"] = answer(openai, "I cannot answer in JSON, sorry")
    c = client_for({"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": standin.url})
    assert await c.ask("test", "s", "u", Note) is None
    assert c.usage.tasks["test"].malformed == 1 and c.usage.tasks["test"].fallback == 1
    standin.routes["/v1/chat/completions"] = fail(500)
    assert await c.ask("test", "s", "u", Note) is None
    assert c.usage.tasks["test"].fallback == 2 and c.usage.providers["openai"].failed == 1
    standin.routes["/v1/chat/completions"] = answer(openai, "")
    assert await c.ask("test", "s", "u", Note) is None  # empty content is a failure
    await c.close()
    assert await ModelClient(ModelSettings(), scrub).ask("test", "s", "u", Note) is None  # keyless


async def test_429_waits_what_retry_after_says(standin: StandIn) -> None:
    calls: list[float] = []

    def limited(_: Seen) -> Answer:
        calls.append(time.monotonic())
        if len(calls) == 1:
            return 429, {"error": "slow down"}, {"Retry-After": "0.4"}
        return 200, openai('{"title": "t"}'), {}

    standin.routes["/v1/chat/completions"] = limited
    c = client_for({"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": standin.url})
    assert await c.ask("test", "s", "u", Note) == Note("t")
    await c.close()
    assert len(calls) == 2 and calls[1] - calls[0] >= 0.4


def test_breaker_counts_failures_within_its_window_only() -> None:
    now = [0.0]
    b = Breaker(failures=3, window=60, recovery=30, clock=lambda: now[0])
    b.failure()
    now[0] = 61
    b.failure()
    b.failure()
    assert b.state == "closed"  # the first failure fell out of the window
    b.failure()
    assert b.state == "open" and not b.allow()
    now[0] = 92
    assert b.current() == "half-open" and b.allow()
    b.failure()
    assert b.state == "open" and not b.allow()  # a failed half-open call reopens it
