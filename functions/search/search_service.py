"""The search operations over an `IndexHolder` and the records in KV, each declared once:
bus function (`mem::search` …), REST route (`POST /agentmemory/search` …) and MCP tool."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import msgspec
import numpy as np

from engine import BUS_ERRORS, Client, FunctionError, Http, NoArgs, Tool, operation
from functions.kernel import followup
from functions.kernel.clock import now_iso
from functions.kernel.observation_records import ObservationRecords
from functions.kernel.owned import routes, started
from functions.kernel.records import (
    MEMORIES_BUCKET,
    PROFILES_BUCKET,
    SLOTS_BUCKET,
    SUMMARIES_BUCKET,
    Memory,
    ProjectProfile,
    profile_key,
)
from functions.kernel.store import events_stream
from functions.search.documents import KIND_MEMORY, KIND_OBSERVATION, KIND_SUMMARY, KINDS, Meta
from functions.search.feeder import IndexHolder
from functions.search.index import Hit
from functions.search.settings import search_settings
from functions.search.wire import (
    CompactHit,
    ContextIn,
    ContextOut,
    EnrichIn,
    EnrichOut,
    EnrichRequest,
    ProfileIn,
    ProfileOut,
    SearchIn,
    SearchOut,
    SearchStatusOut,
    SmartSearchOut,
    SmartSearchRequest,
    TimelineIn,
    TimelineOut,
)
from functions.slots.slot_service import pinned_context

log = logging.getLogger("functions.search")
AGENT = {"x-agent-id": "agentId"}
rest = routes("search", headers=AGENT)

_BUCKET = {
    KIND_MEMORY: MEMORIES_BUCKET,
    KIND_SUMMARY: SUMMARIES_BUCKET,
}
_encode = msgspec.json.Encoder().encode


_as_dict = msgspec.json.Decoder(dict[str, Any]).decode


def tokens_of(text: str) -> int:
    """~4 characters per token: the estimate upstream's budgets are written against."""
    return (len(text) + 3) // 4


def _kinds(kinds: Sequence[str] | None) -> list[str] | None:
    if kinds is None:
        return None
    bad = [k for k in kinds if k not in KINDS]
    if bad:
        raise FunctionError(
            "BAD_REQUEST", f"unknown kinds {bad}; expected {list(KINDS)}", field="kinds"
        )
    return list(kinds)


class SearchService:
    def __init__(self, holder: IndexHolder) -> None:
        self.holder = holder
        self.client: Client | None = None
        # Read-your-writes across processes: the index may live in another process than
        # the write path (workers.search), so a query first waits, up to this long, until
        # every event already in MEM_EVENTS is applied. 0 turns the fence off.
        self.freshness = search_settings().freshness_seconds
        self._records: ObservationRecords | None = None

    async def _fresh(self, project: str | None = None) -> None:
        """The freshness fence, scoped: a query of one project waits for that project's
        writes (and the shared ones), not for every writer's backlog."""
        if self.client is None or self.freshness <= 0:
            return
        try:
            await self.holder.caught_up(timeout=self.freshness, project=project or None)
        except Exception as exc:  # the bus is reconnecting: answer from what we have
            log.debug("freshness fence skipped: %s", exc)

    async def start(self, client: Client) -> None:
        self.client = client
        await self.holder.start(client)

    async def _observations(self) -> ObservationRecords:
        """Observations by id, for a hit the index's own copy lacks (read only)."""
        if self._records is None:
            client = started(self.client, "the search service")
            self._records = await ObservationRecords(client, events_stream(client)).open()
        return self._records

    async def stop(self, client: Client) -> None:
        await self.holder.stop(client)

    @operation(
        "mem::search-status",
        description="Index size, lag, snapshot age",
        http=Http("GET", "/agentmemory/search/status", source="none", tags=["search"]),
    )
    async def search_status(self, req: NoArgs) -> SearchStatusOut:
        return msgspec.convert(self.holder.status(), SearchStatusOut)

    @operation(
        "mem::index-audit",
        description="The index against KV: orphan entries and unindexed records (samples)",
        timeout=120,
    )
    async def index_audit(self, req: NoArgs) -> IndexAudit:
        return await audit_index(started(self.client, "the search service"), self.holder)

    # ---- enrichment ------------------------------------------------------------------
    async def record(self, kind: str, record_id: str) -> dict[str, Any] | None:
        if kind == KIND_OBSERVATION:
            # the index's own copy first: a get by key costs nats-server a block load
            local = self.holder.index.shown_record(record_id)
            if local is not None:
                with contextlib.suppress(msgspec.DecodeError):
                    found: dict[str, Any] = _as_dict(local)
                    return found
        if self.client is None:
            return None
        if kind == KIND_OBSERVATION:
            try:
                obs = await (await self._observations()).get(record_id)
            except Exception:
                return None
            return _as_dict(_encode(obs)) if obs is not None else None
        st = await self.client.bucket(_BUCKET[kind])
        key = record_id.removeprefix("summary:") if kind == KIND_SUMMARY else record_id
        try:
            value: dict[str, Any] | None = await st.get(key, dict[str, Any])
        except Exception:
            return None
        if value is None:
            return None
        return value

    async def _full(self, hits: list[Hit]) -> list[dict[str, Any]]:
        records = await asyncio.gather(*(self.record(h.kind, h.id) for h in hits))
        out: list[dict[str, Any]] = []
        for h, r in zip(hits, records, strict=True):
            item = msgspec.to_builtins(h)
            if r is not None:
                item["record"] = r
            out.append(item)
        return out

    def _search(self, query: str, project: str | None, agent_id: str | None,
                kinds: Sequence[str] | None, limit: int) -> list[Hit]:  # fmt: skip
        h = self.holder
        qv = None
        if h.embedder is not None and h.index.vectors is not None and h.index.vectors.count():
            qv = h.embedder.embed([query])[0]
        return h.index.search(
            query, project=project, agent_id=agent_id, kinds=_kinds(kinds), limit=limit,
            query_vector=qv,
        )  # fmt: skip

    # ---- functions -------------------------------------------------------------------
    @operation(
        "mem::search",
        description="Search past session observations for relevant context (BM25 + vectors "
        "+ graph); full records.",
        http=rest("POST", "search"),
        tool=Tool("memory_recall", tier="core,basic"),
    )
    async def search(self, req: SearchIn) -> SearchOut:
        await self._fresh(req.project)
        hits = self._search(req.query, req.project, req.agent_id, req.kinds, req.limit)
        full = await self._full(hits) if req.format != "compact" else [
            msgspec.to_builtins(h) for h in hits
        ]  # fmt: skip
        used = truncated = None
        if req.token_budget:
            found = len(full)
            full = _fit([(msgspec.json.encode(x).decode(), x) for x in full], req.token_budget)
            used = sum(tokens_of(msgspec.json.encode(x).decode()) for x in full)
            truncated = len(full) < found
        out = SearchOut(
            results=full,
            total=len(full),
            tokens_used=used,
            tokens_budget=req.token_budget,
            truncated=truncated,
        )
        if not full:
            where = f" in project {req.project!r}" if req.project else ""
            out.message = f"nothing in memory matches {req.query!r}{where}"
        if req.format == "narrative":
            out.text = (
                "\n".join(
                    f"- [{h['type']}] {h['title']} ({h['timestamp'][:10]}, relevance {h['score']:.2f})"
                    for h in full
                )
                or out.message
            )
        return out

    @operation(
        "mem::smart-search",
        description="Hybrid semantic+keyword search with progressive disclosure: compact "
        "hits; expandIds for full records.",
        http=rest("POST", "smart-search", headers={**AGENT, "x-agentmemory-source": "source"}),
        tool=Tool("memory_smart_search", tier="core,basic"),
    )
    async def smart_search(self, req: SmartSearchRequest) -> SmartSearchOut:
        if req.expand_ids:
            metas = [(i, self.holder.index.get(i)) for i in req.expand_ids[:100]]
            found = await asyncio.gather(
                *(self.record(m.kind if m else KIND_OBSERVATION, i) for i, m in metas)
            )
            return SmartSearchOut(mode="expanded", results=[r for r in found if r is not None])
        if not req.query.strip():
            raise FunctionError("BAD_REQUEST", "query must not be empty", field="query")
        await self._fresh(req.project)
        hits = self._search(req.query, req.project, req.agent_id, req.kinds, req.limit)
        if req.session_id and req.source != "viewer" and hits and self.client is not None:
            with contextlib.suppress(*BUS_ERRORS):  # a counter never fails a search
                await followup.note(self.client, req.session_id, req.query, [h.id for h in hits])
        return SmartSearchOut(
            mode="compact",
            results=[
                CompactHit(obs_id=h.id, session_id=h.session_id, title=h.title, type=h.type,
                           score=h.score, timestamp=h.timestamp, kind=h.kind,
                           matched=h.matched)
                for h in hits
            ],
        )  # fmt: skip

    def _metas(self, project: str | None, agent_id: str | None, kinds: list[str]) -> list[Meta]:
        idx = self.holder.index
        mask = idx.mask(project or None, agent_id, kinds)
        return [m for n in np.flatnonzero(mask).tolist() if (m := idx.meta[n]) is not None]

    async def _pinned(self, project: str) -> str:
        if self.client is None:
            return ""
        try:
            return await pinned_context(await self.client.bucket(SLOTS_BUCKET), project)
        except BUS_ERRORS as exc:  # the bus is away: the context goes without its slots
            log.warning("pinned slots unreadable: %s", exc)
            return ""

    @operation(
        "mem::context",
        description="Token-budgeted context for a session",
        http=rest("POST", "context"),
    )
    async def context(self, req: ContextIn) -> ContextOut:
        await self._fresh(req.project)
        project = req.project or None
        blocks: list[tuple[str, str]] = []
        pinned = await self._pinned(req.project)
        if pinned:
            blocks.append(("slots", pinned))
        memories = sorted(self._metas(project, req.agent_id, [KIND_MEMORY]),
                          key=lambda m: (-m.importance, m.timestamp), reverse=False)  # fmt: skip
        for m in memories[:20]:
            label = "pinned" if m.importance >= 8 else "memory"
            blocks.append((label, f"- [{m.type}] {m.title}"))
        prof = await self.profile(ProfileIn(project=req.project, agent_id=req.agent_id))
        if prof.observations:
            blocks.append(("profile", f"Project {prof.project}: {prof.sessions} sessions, "
                           f"{prof.observations} observations; files: {', '.join(prof.top_files[:8])}; "
                           f"concepts: {', '.join(prof.top_concepts[:8])}"))  # fmt: skip
        summaries = sorted(self._metas(project, req.agent_id, [KIND_SUMMARY]),
                           key=lambda m: m.timestamp, reverse=True)  # fmt: skip
        for m in summaries[:5]:
            blocks.append(("summary", f"- {m.timestamp[:10]} {m.title}"))
        if req.query.strip():
            hits = self._search(req.query, project, req.agent_id, [KIND_OBSERVATION], 10)
            important: list[Meta | None] = [self.holder.index.get(h.id) for h in hits]
        else:
            obs = self._metas(project, req.agent_id, [KIND_OBSERVATION])
            obs = [m for m in obs if m.session_id != req.session_id or not req.session_id]
            ranked = sorted(obs, key=lambda m: (m.importance, m.timestamp), reverse=True)
            important = list(ranked[:30])
        for om in important:
            if om is not None:
                blocks.append(("observation", f"- {om.timestamp[:16]} [{om.type}] {om.title}"))
        return _pack(blocks, req.budget)

    @operation(
        "mem::enrich",
        description="What memory knows about these files and terms",
        http=rest("POST", "enrich"),
    )
    async def enrich(self, req: EnrichRequest) -> EnrichOut:
        return await self._enrich(req)

    @operation(
        "mem::file-context",
        description="Get past observations about specific files (sessionId: the current "
        "session, left out).",
        http=rest("POST", "file-context"),
        tool=Tool("memory_file_history", tier="basic"),
    )
    async def file_context(self, req: EnrichRequest) -> EnrichOut:
        return await self._enrich(req, exclude_session=True)

    async def _enrich(self, req: EnrichIn, *, exclude_session: bool = False) -> EnrichOut:
        """What memory knows about files and terms; `exclude_session` leaves out the
        caller's own session (upstream's memory_file_history: "current session to exclude")."""
        await self._fresh(req.project)
        terms = [*req.files, *req.terms]
        if not terms:
            raise FunctionError("BAD_REQUEST", "give files or terms to enrich", field="files")
        hits = self._search(" ".join(terms), req.project, req.agent_id, None, 15)
        if exclude_session and req.session_id:
            hits = [h for h in hits if h.session_id != req.session_id]
        lines = [f"- [{h.type}] {h.title} ({h.timestamp[:10]})" for h in hits]
        text, used = "", 0
        truncated = False
        for line in lines:
            t = tokens_of(line) + 1
            if used + t > req.budget:
                truncated = True
                break
            text += line + "\n"
            used += t
        return EnrichOut(context=text.rstrip("\n"), truncated=truncated)

    @operation(
        "mem::timeline",
        description="Chronological observations around an anchor (an ISO date or a keyword; "
        "before/after = how many records either side), or within a time window (before/after "
        "= ISO times).",
        http=rest("POST", "timeline"),
        tool=Tool("memory_timeline", tier="basic"),
    )
    async def timeline(self, req: TimelineIn) -> TimelineOut:
        await self._fresh(req.project)
        metas = self._metas(req.project, req.agent_id, list(KINDS))
        if req.session_id:
            metas = [m for m in metas if m.session_id == req.session_id]
        if req.anchored:
            return self._around(req, metas)
        if req.after:
            metas = [m for m in metas if m.timestamp >= str(req.after)]
        if req.before:
            metas = [m for m in metas if m.timestamp < str(req.before)]
        metas.sort(key=lambda m: m.timestamp, reverse=True)
        return TimelineOut(entries=[_entry(m) for m in metas[: req.limit]])

    def _around(self, req: TimelineIn, metas: list[Meta]) -> TimelineOut:
        """Upstream's timeline: `before` records before the anchor and `after` after it."""
        before = req.before if isinstance(req.before, int) else 5
        after = req.after if isinstance(req.after, int) else 5
        anchor = req.anchor.strip()
        if not anchor:
            at = now_iso()
        elif _ISO_DATE.match(anchor):
            at = anchor
        else:
            hits = [h for h in self._search(anchor, req.project, req.agent_id, None, 20)
                    if not req.session_id or h.session_id == req.session_id]  # fmt: skip
            if not hits:
                return TimelineOut(entries=[], anchor=anchor, reason="no_match")
            # The latest record whose title names the keyword (upstream's rule); else the
            # best hit (the session stream also brings the rest of a matching session).
            named = [h for h in hits if anchor.lower() in h.title.lower()]
            at = max(h.timestamp for h in named) if named else hits[0].timestamp
        metas.sort(key=lambda m: (m.timestamp, m.id))
        if not metas:
            return TimelineOut(entries=[], anchor=anchor, reason="no_records")
        pos = min(range(len(metas)), key=lambda i: abs(_secs(metas[i].timestamp) - _secs(at)))
        lo, hi = max(0, pos - before), min(len(metas), pos + after + 1)
        entries = [{**_entry(m), "relativePosition": i - pos} for i, m in
                   zip(range(lo, hi), metas[lo:hi], strict=True)]  # fmt: skip
        return TimelineOut(entries=entries, anchor=anchor or at, anchor_index=pos - lo)

    @operation(
        "mem::profile",
        description="A project's profile: activity, top files and concepts, conventions.",
        http=rest("GET", "profile"),
        tool=Tool("memory_profile", tier="basic"),
    )
    async def profile(self, req: ProfileIn) -> ProfileOut:
        """The lifecycle's incremental profile of the project (decayed top files, concepts,
        commands, errors, conventions) when it has one; counts by type from the index.
        With an agent filter, or before the lifecycle has folded the project, everything
        comes from the index."""
        stored = None if req.agent_id else await self._stored_profile(req.project)
        if stored is None or not stored.observations:
            return self._index_profile(req, with_entities=True)
        out = self._index_profile(req, with_entities=False)
        out.top_files = [t.name for t in stored.files[:10]]
        out.top_concepts = [t.name for t in stored.concepts[:10]]
        out.top_commands = [t.name for t in stored.commands[:10]]
        out.recurring_errors = [t.name for t in stored.errors[:10]]
        out.conventions = list(stored.conventions)
        out.sessions = max(out.sessions, stored.sessions)
        out.last_activity = max(out.last_activity, stored.last_activity)
        return out

    async def _stored_profile(self, project: str) -> ProjectProfile | None:
        if self.client is None:
            return None
        try:
            st = await self.client.bucket(PROFILES_BUCKET)
            return await st.get(profile_key(project), ProjectProfile)
        except BUS_ERRORS as exc:  # the bus is away: the index answers
            log.warning(
                "project profile of %r unreadable, answering from the index: %s", project, exc
            )
            return None

    def _index_profile(self, req: ProfileIn, *, with_entities: bool) -> ProfileOut:
        idx = self.holder.index
        mask = idx.mask(req.project or None, req.agent_id, None)
        docs = np.flatnonzero(mask).tolist()
        types: Counter[str] = Counter()
        ents: Counter[str] = Counter()
        sessions: set[str] = set()
        memories = 0
        last = ""
        for n in docs:
            m = idx.meta[n]
            if m is None:
                continue
            if m.kind == KIND_MEMORY:
                memories += 1
            else:
                types[m.type] += 1
            if m.session_id:
                sessions.add(m.session_id)
            last = max(last, m.timestamp)
            if with_entities:
                for e in idx.graph.ents_of.get(n, ()):
                    ents[idx.graph.names[e]] += 1
        files = [e for e, _ in ents.most_common(200) if "/" in e or "." in e][:10]
        concepts = [e for e, _ in ents.most_common(200) if "/" not in e and "." not in e][:10]
        return ProfileOut(
            project=req.project, observations=sum(types.values()), memories=memories,
            sessions=len(sessions), top_files=files, top_concepts=concepts, types=dict(types),
            last_activity=last,
        )  # fmt: skip


class IndexAudit(msgspec.Struct, rename="camel", kw_only=True):
    documents: int
    records: int
    """Records in KV that the index should hold (current memories, observations, summaries)."""
    orphans: list[str]
    """Indexed ids whose record is gone (a sample)."""
    orphan_count: int
    unindexed: list[str]
    """Stored records the index lacks (a sample)."""
    unindexed_count: int
    lag: int


async def audit_index(client: Client, holder: IndexHolder, sample: int = 100) -> IndexAudit:
    """The index against KV: after `caught_up`, both should name the same records."""
    await holder.caught_up(timeout=5)
    ids: set[str] = set()
    async for o in (await ObservationRecords(client, events_stream(client)).open()).scan():
        ids.add(o.id)
    ids.update("summary:" + k for k in await (await client.bucket(SUMMARIES_BUCKET)).keys())
    async for key, m in (await client.bucket(MEMORIES_BUCKET)).scan(">", Memory):
        if not m.superseded_by:
            ids.add(key)
    indexed = set(holder.index.doc_of)
    orphans, missing = sorted(indexed - ids), sorted(ids - indexed)
    return IndexAudit(
        documents=len(indexed), records=len(ids), orphans=orphans[:sample],
        orphan_count=len(orphans), unindexed=missing[:sample], unindexed_count=len(missing),
        lag=int(holder.status().get("lag", 0)),
    )  # fmt: skip


_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")


def _secs(ts: str) -> float:
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def _entry(m: Meta) -> dict[str, Any]:
    return {"id": m.id, "kind": m.kind, "sessionId": m.session_id, "timestamp": m.timestamp,
            "type": m.type, "title": m.title, "importance": m.importance}  # fmt: skip


def _fit(items: list[tuple[str, dict[str, Any]]], budget: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    used = 0
    for text, item in items:
        t = tokens_of(text)
        if used + t > budget and out:
            break
        out.append(item)
        used += t
    return out


def _pack(blocks: list[tuple[str, str]], budget: int) -> ContextOut:
    """Greedy packing in priority order: a block that does not fit is skipped, and smaller
    ones after it may still fill the budget."""
    header = "<agentmemory-context>"
    footer = "</agentmemory-context>"
    used = tokens_of(header) + tokens_of(footer) + 2
    chosen: list[tuple[str, str]] = []
    for kind, text in blocks:
        t = tokens_of(text) + 1
        if used + t > budget:
            continue
        chosen.append((kind, text))
        used += t
    body = "\n".join(text for _, text in chosen)
    context = f"{header}\n{body}\n{footer}" if chosen else ""
    return ContextOut(
        context=context,
        blocks=[{"type": k, "content": t, "tokens": tokens_of(t)} for k, t in chosen],
        tokens=tokens_of(context),
    )
