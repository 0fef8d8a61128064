"""A model's wording for consolidated memories (CONSOLIDATION_ENABLED, default on when a
provider is configured: functions/kernel/models).

The model only rewrites the title and content of a semantic or procedural memory the
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
from typing import Any

import msgspec

from engine import Bucket
from functions.kernel.models.client import ModelClient
from functions.kernel.records import Memory

TASK = "consolidation"
PARALLEL = 4
TITLE_MAX = 120
CONTENT_MAX = 1200
SYSTEM = (
    "You reword memory records that a coding agent's memory service derived from its "
    "sessions. Keep every fact, file path, command, count and date exactly; add nothing. "
    "Make the title a short statement (at most 100 characters) and the content one or two "
    'plain sentences. Reply with JSON only: {"title": "...", "content": "..."}'
)


class Rewrite(msgspec.Struct, kw_only=True):
    """`mem_lifecycle/llm.<memoryId>`"""

    fingerprint: str
    title: str
    content: str


class Wording(msgspec.Struct, kw_only=True):
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


class Rewriter:
    def __init__(self, model: ModelClient, life: Bucket, max_calls: int) -> None:
        self.model = model
        self.life = life
        self.max_calls = max_calls
        self.calls = 0
        self.failed = 0

    async def apply(self, planned: list[Memory]) -> list[Memory]:
        """`planned` with the model's wording where cached or newly obtained (same order, ids)."""
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
                elif len(todo) < self.max_calls:
                    todo.append(i)
        gate = asyncio.Semaphore(PARALLEL)

        async def one(i: int) -> None:
            m = out[i]
            async with gate:
                self.calls += 1
                got = await self.model.ask(TASK, SYSTEM, _prompt(m), Wording)
            title = (got.title[:TITLE_MAX] if got else "").strip()
            content = (got.content[:CONTENT_MAX] if got else "").strip()
            if not title or not content:
                self.failed += 1
                return
            await self.life.put(
                f"llm.{m.id}", Rewrite(fingerprint=fingerprint(m), title=title, content=content)
            )
            out[i] = msgspec.structs.replace(m, title=title, content=content)

        await asyncio.gather(*(one(i) for i in todo))
        return out
