"""The one way memory calls a model: `ModelClient.ask(task, system, user, Type)`.

It walks the configured chain (primary, then `FALLBACK_PROVIDERS`), skipping a provider whose
breaker is open; a provider that fails (an HTTP error, a timeout, a connection error, an empty
or unreadable reply) counts a failure and the next one is tried. 429 and 503 are retried up to
three attempts within the provider's total timeout, waiting what `Retry-After` says (at most
5 s). No answer, or an answer that does not decode into `Type`, is None: the caller keeps its
keyless result, and the miss is counted.

Both prompts are scrubbed here, so no operation can send a secret by forgetting to; decoded
strings are scrubbed again (replies.py). httpx rather than the vendors' SDKs: see
docs/MODELS.md (one client for five providers and upstream's URL rules, MiniMax refuses the
SDKs' headers, replies decode into our Structs, and the SDKs would cost 26-54 MB per process).
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import time
from collections.abc import Callable
from typing import TypeVar

import httpx
import msgspec

from functions.kernel.models.breaker import Breaker
from functions.kernel.models.replies import decode
from functions.kernel.models.settings import ModelSettings, Provider
from functions.kernel.models.urls import auth_headers, chat_url, messages_url
from functions.kernel.models.wire import (
    ChatMessage,
    ChatReply,
    ChatRequest,
    MessagesReply,
    MessagesRequest,
)

log = logging.getLogger("functions.kernel.models")
T = TypeVar("T")
RETRY_STATUS = frozenset({429, 503})
ATTEMPTS = 3
MAX_RETRY_DELAY = 5.0
_encoder = msgspec.json.Encoder()


class ModelError(Exception):
    """One provider's call failed (the chain moves on)."""


class ProviderUsage(msgspec.Struct, rename="camel", kw_only=True):
    name: str
    model: str
    calls: int = 0
    ok: int = 0
    failed: int = 0
    skipped: int = 0
    """Calls not made because the breaker was open."""
    tokens_in: int = 0
    tokens_out: int = 0
    last_error: str = ""
    last_at: float = 0.0
    breaker: str = "closed"
    breaker_failures: int = 0
    opened_at: float = 0.0
    """Wall-clock time the breaker last opened (0: never)."""


class TaskUsage(msgspec.Struct, rename="camel", kw_only=True):
    calls: int = 0
    answered: int = 0
    """Replies decoded into the task's record."""
    malformed: int = 0
    fallback: int = 0
    """Calls whose result is the keyless one (no provider answered, or malformed)."""


class Usage(msgspec.Struct, rename="camel", kw_only=True):
    providers: dict[str, ProviderUsage] = msgspec.field(default_factory=dict)
    tasks: dict[str, TaskUsage] = msgspec.field(default_factory=dict)


def _retry_after(r: httpx.Response) -> float | None:
    raw = r.headers.get("retry-after", "").strip()
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def request_of(p: Provider, system: str, user: str, max_tokens: int) -> tuple[str, bytes]:
    """(url, body) of one chat call to `p`."""
    if p.format == "anthropic":
        msg = MessagesRequest(
            model=p.model,
            max_tokens=max_tokens,
            system=system,
            messages=[ChatMessage(role="user", content=user)],
        )
        return messages_url(p.base_url), _encoder.encode(msg)
    req = ChatRequest(
        model=p.model,
        max_tokens=max_tokens,
        stream=False,
        messages=[
            ChatMessage(role="system", content=system),
            ChatMessage(role="user", content=user),
        ],
        reasoning_effort=p.reasoning_effort or msgspec.UNSET,
    )
    return chat_url(p.base_url, azure=p.azure, api_version=p.api_version), _encoder.encode(req)


class ModelClient:
    def __init__(
        self,
        settings: ModelSettings,
        scrub: Callable[[str], str],
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        on_usage: Callable[[], None] | None = None,
    ) -> None:
        self.settings = settings
        self.scrub = scrub
        self.transport = transport
        self.on_usage = on_usage
        """Called after every call (the host flushes usage to KV)."""
        b = settings.breaker
        self.breakers = {
            p.name: Breaker(failures=b.failures, window=b.window, recovery=b.recovery)
            for p in settings.chain
        }
        self.usage = Usage(
            providers={p.name: ProviderUsage(name=p.name, model=p.model) for p in settings.chain}
        )
        self._http: httpx.AsyncClient | None = None

    @property
    def enabled(self) -> bool:
        return self.settings.enabled

    async def close(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            self._http = httpx.AsyncClient(transport=self.transport, follow_redirects=False)
        return self._http

    async def ask(
        self, task: str, system: str, user: str, type_: type[T], *, max_tokens: int | None = None
    ) -> T | None:
        """The model's answer as `type_`, or None (keep the keyless result)."""
        text = await self.complete(task, system, user, max_tokens=max_tokens)
        if text is None:
            return None
        got = decode(text, type_, self.scrub)
        t = self.usage.tasks[task]
        if got is None:
            t.malformed += 1
            t.fallback += 1
            log.warning("model reply for %s did not decode; keeping the keyless result", task)
        else:
            t.answered += 1
        self._changed()
        return got

    async def complete(
        self, task: str, system: str, user: str, *, max_tokens: int | None = None
    ) -> str | None:
        """The first non-empty answer along the chain, or None."""
        t = self.usage.tasks.setdefault(task, TaskUsage())
        t.calls += 1
        if not self.settings.chain:
            t.fallback += 1
            return None
        system, user = self.scrub(system), self.scrub(user)
        try:
            for p in self.settings.chain:
                u, breaker = self.usage.providers[p.name], self.breakers[p.name]
                if not breaker.allow():
                    u.skipped += 1
                    continue
                u.calls += 1
                u.last_at = time.time()
                try:
                    text, tin, tout = await self._call(p, system, user, max_tokens or p.max_tokens)
                except ModelError as err:
                    breaker.failure()
                    u.failed += 1
                    u.last_error = str(err)[:300]
                    log.warning("model %s (%s) failed for %s: %s", p.name, p.model, task, err)
                    continue
                finally:
                    self._breaker_view(p.name)
                breaker.success()
                self._breaker_view(p.name)
                u.ok += 1
                u.tokens_in += tin
                u.tokens_out += tout
                return text
            t.fallback += 1
            return None
        finally:
            self._changed()

    def _breaker_view(self, name: str) -> None:
        b, u = self.breakers[name], self.usage.providers[name]
        u.breaker, u.breaker_failures = b.current(), b.count
        if b.opened_at is not None:
            u.opened_at = time.time() - (b.clock() - b.opened_at)

    def _changed(self) -> None:
        if self.on_usage is not None:
            self.on_usage()

    async def _call(
        self, p: Provider, system: str, user: str, max_tokens: int
    ) -> tuple[str, int, int]:
        url, body = request_of(p, system, user, max_tokens)
        headers = {
            "Content-Type": "application/json",
            **auth_headers(p.api_key, fmt=p.format, azure=p.azure),
            **dict(p.headers),
        }
        loop = asyncio.get_running_loop()
        deadline = loop.time() + p.timeout
        try:
            async with asyncio.timeout_at(deadline):
                for attempt in range(1, ATTEMPTS + 1):
                    r = await self._client().post(url, content=body, headers=headers, timeout=None)
                    if r.status_code in RETRY_STATUS and attempt < ATTEMPTS:
                        delay = min(_retry_after(r) or 0.5 * 2 ** (attempt - 1), MAX_RETRY_DELAY)
                        if loop.time() + delay + 0.1 < deadline:
                            await asyncio.sleep(delay)
                            continue
                    break
        except TimeoutError:
            raise ModelError(f"no answer within {p.timeout:g} s") from None
        except httpx.HTTPError as exc:
            raise ModelError(f"{type(exc).__name__}: {exc}") from None
        if r.status_code >= 400:
            raise ModelError(f"HTTP {r.status_code}: {r.text[:200]}")
        try:
            if p.format == "anthropic":
                m = msgspec.json.decode(r.content, type=MessagesReply)
                text = m.text()
                tin, tout = (m.usage.input_tokens, m.usage.output_tokens) if m.usage else (0, 0)
            else:
                c = msgspec.json.decode(r.content, type=ChatReply)
                text = c.text()
                tin, tout = (
                    (c.usage.prompt_tokens, c.usage.completion_tokens) if c.usage else (0, 0)
                )
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise ModelError(f"unreadable reply: {exc}") from None
        if not text.strip():
            raise ModelError("empty reply")
        return text, tin, tout
