"""Optional LLM wording for consolidated memories (`CONSOLIDATION_ENABLED=true` and a
provider: `ANTHROPIC_API_KEY` or `OPENAI_API_KEY`, see config.LlmConfig).

The LLM only rewrites the title and content of a semantic or procedural memory the
deterministic planner produced; ids, evidence, confidence and provenance stay the planner's,
and the records go through the same stage/commit/apply pipeline. Idempotency holds because
a rewrite is cached under `mem_lifecycle/llm.<memoryId>` with a fingerprint of the
deterministic text it replaced: unchanged evidence gives the same fingerprint, hence the
cached wording, hence an identical record and nothing to write. A failure, a timeout or an
unusable answer leaves the deterministic text (and no cache entry, so a later run retries).
At most `max_calls` calls are made per run.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
from typing import Any

import httpx
import msgspec

from engine import State
from functions.kernel.config import LlmConfig
from functions.kernel.records import Memory
from functions.kernel.scrub import scrub

log = logging.getLogger("functions.kernel.llm")
PARALLEL = 4
TITLE_MAX = 120
CONTENT_MAX = 1200
SYSTEM = (
    "You reword memory records that a coding agent's memory service derived from its "
    "sessions. Keep every fact, file path, command, count and date exactly; add nothing. "
    "Make the title a short statement (at most 100 characters) and the content one or two "
    'plain sentences. Reply with JSON only: {"title": "...", "content": "..."}'
)
_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


class Rewrite(msgspec.Struct, kw_only=True):
    """`mem_lifecycle/llm.<memoryId>`"""

    fingerprint: str
    title: str
    content: str


def fingerprint(m: Memory) -> str:
    return hashlib.sha256(f"{m.title}\x1f{m.content}".encode()).hexdigest()[:32]


def _prompt(m: Memory) -> str:
    body: dict[str, Any] = {"type": m.type, "title": m.title, "content": m.content}
    if m.steps:
        body["steps"] = m.steps
    if m.files:
        body["files"] = m.files
    if m.concepts:
        body["concepts"] = m.concepts
    return json.dumps(body, ensure_ascii=False)


def parse_answer(text: str) -> tuple[str, str] | None:
    """(title, content) from the model's reply, scrubbed and capped; None if unusable."""
    found = _OBJECT.search(text or "")
    if not found:
        return None
    try:
        data = json.loads(found.group(0))
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    title, content = data.get("title"), data.get("content")
    if not isinstance(title, str) or not isinstance(content, str):
        return None
    title, content = scrub(title.strip())[:TITLE_MAX], scrub(content.strip())[:CONTENT_MAX]
    if not title or not content:
        return None
    return title, content


class Provider:
    """One chat call in the OpenAI chat-completions or the Anthropic messages wire format."""

    def __init__(self, cfg: LlmConfig, http: httpx.AsyncClient) -> None:
        self.cfg = cfg
        self.http = http

    async def complete(self, user: str, system: str = SYSTEM) -> str:
        cfg = self.cfg
        base = cfg.base_url.rstrip("/")
        if cfg.provider == "anthropic":
            url = base + ("/messages" if base.endswith("/v1") else "/v1/messages")
            r = await self.http.post(
                url,
                headers={"x-api-key": cfg.api_key, "anthropic-version": "2023-06-01"},
                json={
                    "model": cfg.model,
                    "max_tokens": 500,
                    "temperature": 0,
                    "system": system,
                    "messages": [{"role": "user", "content": user}],
                },
            )
            r.raise_for_status()
            blocks = r.json().get("content") or []
            return "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        r = await self.http.post(
            base + "/chat/completions",
            headers={"Authorization": f"Bearer {cfg.api_key}"},
            json={
                "model": cfg.model,
                "temperature": 0,
                "max_tokens": 500,
                "messages": [
                    {"role": "system", "content": system},
                    {"role": "user", "content": user},
                ],
            },
        )
        r.raise_for_status()
        choices = r.json().get("choices") or [{}]
        return str((choices[0].get("message") or {}).get("content") or "")


class Rewriter:
    def __init__(self, cfg: LlmConfig, life: State) -> None:
        self.cfg = cfg
        self.life = life
        self.calls = 0
        self.failed = 0

    async def apply(self, planned: list[Memory]) -> list[Memory]:
        """`planned` with LLM wording where cached or newly obtained (same order, ids)."""
        out = list(planned)
        todo: list[int] = []
        for start in range(0, len(out), 64):
            chunk = out[start : start + 64]
            cached: list[Rewrite | None] = await asyncio.gather(
                *(self.life.get(f"llm.{m.id}", Rewrite) for m in chunk)
            )
            for i, (m, c) in enumerate(zip(chunk, cached, strict=True), start):
                if c is not None and c.fingerprint == fingerprint(m):
                    out[i] = msgspec.structs.replace(m, title=c.title, content=c.content)
                elif len(todo) < self.cfg.max_calls:
                    todo.append(i)
        if not todo:
            return out
        gate = asyncio.Semaphore(PARALLEL)
        async with httpx.AsyncClient(timeout=self.cfg.timeout) as http:
            provider = Provider(self.cfg, http)

            async def one(i: int) -> None:
                m = out[i]
                async with gate:
                    self.calls += 1
                    try:
                        text = await asyncio.wait_for(
                            provider.complete(_prompt(m)), self.cfg.timeout
                        )
                    except (httpx.HTTPError, TimeoutError, ValueError) as err:
                        self.failed += 1
                        log.warning("llm rewrite of %s failed: %s", m.id, err)
                        return
                got = parse_answer(text)
                if got is None:
                    self.failed += 1
                    return
                title, content = got
                await self.life.put(
                    f"llm.{m.id}", Rewrite(fingerprint=fingerprint(m), title=title, content=content)
                )
                out[i] = msgspec.structs.replace(m, title=title, content=content)

            await asyncio.gather(*(one(i) for i in todo))
        return out
