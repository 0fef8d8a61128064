"""`remember`: memories saved on purpose. A near duplicate in the same project supersedes
the old one (the version chain is kept, the old version leaves the indexes); a merely
similar one comes back as a `similarTo` hint."""

from __future__ import annotations

import re

from engine import FunctionError
from functions.kernel.clock import now_iso
from functions.kernel.ids import new_id
from functions.kernel.records import Memory
from functions.kernel.store import MemoryStore
from functions.kernel.trust import write_path as trust
from functions.kernel.views import MemoryView, as_view
from functions.memory.observe import held_fields
from functions.memory.wire import RememberIn, RememberOut, Similar

SUPERSEDE_AT = 0.7
SIMILAR_AT = 0.4
_TOKEN = re.compile(r"[a-z0-9_]{2,}")


def tokens(text: str) -> frozenset[str]:
    return frozenset(_TOKEN.findall(text.lower()))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


async def remember(
    store: MemoryStore, req: RememberIn, source: trust.Source = trust.REMEMBER
) -> RememberOut:
    """Save `req` as a memory; its words judged as `source` wrote them (the agent's
    `remember` call, or MEMORY.md for the bridge)."""
    now = now_iso()
    words = {"content": req.content, "title": req.title, "concepts": req.concepts}
    verdict = trust.classify_value(words, source)
    text = trust.stored_text  # invisible characters out, then secrets
    content = text(req.content)
    verdict = await trust.second_opinion(store.client, verdict, trust.stored_value(words), source)
    agent = store.default_agent(req.agent_id)
    memory = Memory(
        id=new_id("mem"),
        content=content,
        type=text(req.type) or "fact",
        title=text(req.title) or _title(content),
        project=text(req.project),
        agent_id=text(agent),
        concepts=[text(c) for c in req.concepts if c],
        files=[text(f) for f in req.files if f],
        created_at=now,
        updated_at=now,
        ttl_days=req.ttl_days,
        source_ids=list(
            dict.fromkeys(
                ([text(req.session_id)] if req.session_id else [])
                + [text(o) for o in req.source_observation_ids[:100] if o]
            )
        ),
        trust=trust.trust_of(verdict, source),
    )
    edited = await _edited(store, req, agent)
    if edited is not None:
        memory.project, memory.agent_id = edited.project, edited.agent_id
    mine = tokens(content)
    scored: list[tuple[float, Memory]] = []
    for m in await store.load_all(store.memories, Memory):
        if m.superseded_by or m.project != memory.project or m.agent_id != memory.agent_id:
            continue
        if edited is not None and m.id == edited.id:
            continue
        score = jaccard(mine, tokens(m.content))
        if score >= SIMILAR_AT:
            scored.append((score, m))
    scored.sort(key=lambda x: x[0], reverse=True)

    superseded: Memory | None = edited
    if superseded is None and not req.distinct and scored and scored[0][0] >= SUPERSEDE_AT:
        superseded = scored[0][1]
        scored = scored[1:]
    if superseded is not None:
        memory.supersedes = superseded.id
        memory.version = superseded.version + 1
        memory.pinned = superseded.pinned

    old_id = superseded.id if superseded is not None else ""
    await store.save_memory(memory, supersedes=old_id, reason="superseded")
    trust.count(store.client, memory.trust)
    if superseded is not None:
        await store.audit(
            "supersede",
            [old_id, memory.id],
            reason="edited: a new version"
            if edited is not None
            else f"near duplicate of {old_id} (token Jaccard >= {SUPERSEDE_AT})",
            actor=memory.agent_id,
            project=memory.project,
        )
    return RememberOut(
        success=True,
        memory=as_view(memory, MemoryView),
        superseded_id=superseded.id if superseded is not None else None,
        similar_to=[Similar(id=m.id, score=round(s, 3), title=m.title) for s, m in scored[:3]]
        or None,
        **held_fields(memory),
    )


async def _edited(store: MemoryStore, req: RememberIn, agent: str) -> Memory | None:
    """The memory an edit supersedes: it must exist, be visible and still be current."""
    if not req.supersedes:
        return None
    old = await store.get(store.memories, req.supersedes, Memory)
    if old is None or not store.visible(old.agent_id, agent):
        raise FunctionError("NOT_FOUND", f"no memory {req.supersedes}", field="supersedes")
    if old.superseded_by:
        raise FunctionError(
            "CONFLICT",
            f"{old.id} was already superseded by {old.superseded_by}: edit that version",
            field="supersedes",
        )
    return old


def _title(content: str) -> str:
    line = next((ln.strip() for ln in content.splitlines() if ln.strip()), "")
    return line if len(line) <= 80 else line[:79] + "…"


async def memory_chain(store: MemoryStore, memory_id: str) -> list[Memory]:
    """The versions of a memory, newest first, following `supersedes` links."""
    chain: list[Memory] = []
    cur = await store.get(store.memories, memory_id, Memory)
    while cur is not None and len(chain) < 100:
        chain.append(cur)
        cur = await store.get(store.memories, cur.supersedes, Memory) if cur.supersedes else None
    # A shared memory edited on two instances while apart: the other branches are its
    # versions too (the team keeps them; see functions/team/records.Chain).
    seen = {m.id for m in chain}
    for alt in chain[0].alternates if chain else []:
        m = await store.get(store.memories, alt, Memory) if alt not in seen else None
        if m is not None:
            chain.append(m)
    return chain
