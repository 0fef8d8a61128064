"""The search operations over an `IndexHolder` and the records in KV, each declared once:
bus function (`mem::search` …), REST route (`POST /agentmemory/search` …) and MCP tool."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

import msgspec
import numpy as np

from engine import BUS_ERRORS, Client, Context, FunctionError, Http, NoArgs, Tool, operation
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
from functions.quarantine.frame import FRAME_OVERHEAD, frame_context, inert, one_line
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
    SmartSearchIn,
    SmartSearchOut,
    SmartSearchRequest,
    Staleness,
    TimelineIn,
    TimelineOut,
)
from functions.slots.slot_service import pinned_context

log = logging.getLogger("functions.search")
T = TypeVar("T")
AGENT = {"x-agent-id": "agentId"}
rest = routes("search", headers=AGENT)

_BUCKET = {
    KIND_MEMORY: MEMORIES_BUCKET,
    KIND_SUMMARY: SUMMARIES_BUCKET,
}
_encode = msgspec.json.Encoder().encode


_as_dict = msgspec.json.Decoder(dict[str, Any]).decode
ANSWER_MARGIN = 0.1
"""Seconds before its caller's deadline a context stops waiting, to answer in time."""
LEFT_OUT_RECENT = "the latest writes (the index could not catch up with the stream)"
LEFT_OUT_SLOTS = "pinned slots"


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
        settings = search_settings()
        self.freshness = settings.freshness_seconds
        self.reach = settings.stream_reach_seconds
        """How long the fence tries to learn what it must wait for before the query answers
        from the index as it is, and says so (a partition, a leader election)."""
        self._records: ObservationRecords | None = None

    async def _fresh(self, project: str | None = None, wait: float | None = None) -> bool:
        """The freshness fence, scoped: a query of one project waits for that project's
        writes (and the shared ones), not for every writer's backlog; `wait` bounds it
        further. False when the index could not be brought up to the stream in time (the
        stream out of reach, or not applied yet): the query then answers from what this
        replica has, marked stale. Writes are not concerned: they still need the stream."""
        if self.client is None or self.freshness <= 0:
            return True
        timeout = self.freshness if wait is None else min(self.freshness, wait)
        if timeout <= 0:
            return False
        try:
            return await self.holder.caught_up(
                timeout=timeout, project=project or None, reach=self.reach
            )
        except Exception as exc:  # out of reach (a partition, an election): what we have
            log.debug("freshness fence: the stream is out of reach (%s)", exc)
            return False

    def _staleness(self) -> Staleness:
        """What a stale answer covers: the last event applied and when it was stored."""
        at = self.holder.applied_at
        return Staleness(
            stale=True,
            indexed_seq=self.holder.index.seq,
            indexed_at=_iso(at) if at else None,
        )

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
                kinds: Sequence[str] | None, limit: int,
                quarantined: bool = False) -> list[Hit]:  # fmt: skip
        h = self.holder
        qv = None
        if h.embedder is not None and h.index.vectors is not None and h.index.vectors.count():
            qv = h.embedder.embed([query])[0]
        return h.index.search(
            query, project=project, agent_id=agent_id, kinds=_kinds(kinds), limit=limit,
            query_vector=qv, quarantined=quarantined,
        )  # fmt: skip

    def _flag(self, item: dict[str, Any], record_id: str) -> dict[str, Any]:
        """A held record's hit, as `includeQuarantined` returns it: flagged, with its reasons."""
        why = self.holder.index.held_reasons(record_id)
        if why is not None:
            item["quarantined"] = True
            item["reasons"] = why
        return item

    # ---- functions -------------------------------------------------------------------
    @operation(
        "mem::search",
        description="Search past session observations for relevant context (BM25 + vectors "
        "+ graph); full records.",
        http=rest("POST", "search"),
        tool=Tool("memory_recall", tier="core,basic"),
    )
    async def search(self, req: SearchIn) -> SearchOut:
        fresh = await self._fresh(req.project)
        hits = self._search(
            req.query, req.project, req.agent_id, req.kinds, req.limit, req.include_quarantined
        )
        full = await self._full(hits) if req.format != "compact" else [
            msgspec.to_builtins(h) for h in hits
        ]  # fmt: skip
        if req.include_quarantined:
            full = [self._flag(x, h.id) for x, h in zip(full, hits, strict=True)]
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
        if not fresh:
            st = self._staleness()
            out.stale, out.indexed_seq, out.indexed_at = st.stale, st.indexed_seq, st.indexed_at
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
        index = self.holder.index
        if req.expand_ids:
            # a held record is not expanded either (unless asked for): its id alone leaks
            # nothing, its text would
            wanted = [
                i for i in req.expand_ids[:100]
                if req.include_quarantined or index.held_reasons(i) is None
            ]  # fmt: skip
            metas = [(i, index.get(i)) for i in wanted]
            found = await asyncio.gather(
                *(self.record(m.kind if m else KIND_OBSERVATION, i) for i, m in metas)
            )
            results: list[Any] = [r for r in found if r is not None and not _held_record(r, req)]
            if req.include_quarantined:
                results = [self._flag(r, str(r.get("id", ""))) for r in results]
            return SmartSearchOut(mode="expanded", results=results)
        if not req.query.strip():
            raise FunctionError("BAD_REQUEST", "query must not be empty", field="query")
        fresh = await self._fresh(req.project)
        hits = self._search(
            req.query, req.project, req.agent_id, req.kinds, req.limit, req.include_quarantined
        )
        if req.session_id and req.source != "viewer" and hits and self.client is not None:
            with contextlib.suppress(*BUS_ERRORS):  # a counter never fails a search
                await followup.note(self.client, req.session_id, req.query, [h.id for h in hits])
        compact = [
            CompactHit(obs_id=h.id, session_id=h.session_id, title=h.title, type=h.type,
                       score=h.score, timestamp=h.timestamp, kind=h.kind, matched=h.matched)
            for h in hits
        ]  # fmt: skip
        results = (
            [self._flag(msgspec.to_builtins(c), c.obs_id) for c in compact]
            if req.include_quarantined
            else list(compact)
        )
        out = SmartSearchOut(mode="compact", results=results)
        if not fresh:
            st = self._staleness()
            out.stale, out.indexed_seq, out.indexed_at = st.stale, st.indexed_seq, st.indexed_at
        return out

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
    async def context(self, req: ContextIn, ctx: Context | None = None) -> ContextOut:
        """What the index holds is read at once; what must be waited for (the freshness
        fence, the pinned slots and the stored profile in KV) is waited for until the
        caller's deadline allows (a session start gives it a fraction of the hooks' wait),
        and what is not ready by then is left out and named in the reply."""
        until = ctx.deadline - ANSWER_MARGIN if ctx is not None else None
        left_out: list[str] = []
        # The reads from KV go on while the fence waits: neither needs the other.
        slots = asyncio.create_task(self._pinned(req.project))
        stored = (
            asyncio.create_task(self._stored_profile(req.project)) if not req.agent_id else None
        )
        try:
            if not await self._fresh(req.project, wait=_left(until)):
                left_out.append(LEFT_OUT_RECENT)
            pinned = await _by(slots, until)
            if pinned is None:
                left_out.append(LEFT_OUT_SLOTS)
            prof = await self._profile(
                ProfileIn(project=req.project, agent_id=req.agent_id), stored, until
            )
        finally:
            slots.cancel()
            if stored is not None:
                stored.cancel()
        return _pack(self._blocks(req, pinned or "", prof), req.budget, left_out)

    def _blocks(self, req: ContextIn, pinned: str, prof: ProfileOut) -> list[tuple[str, str]]:
        """The context's blocks in priority order, from the index's per-project lists."""
        project = req.project or None
        blocks: list[tuple[str, str]] = []
        if pinned:
            blocks.append(("slots", pinned))
        index = self.holder.index
        view = index.context
        for m in view.best(index, project, req.agent_id, KIND_MEMORY, 20):
            label = "pinned" if m.importance >= 8 else "memory"
            blocks.append((label, f"- [{m.type}] {m.title}"))
        if prof.observations:
            blocks.append(("profile", f"Project {prof.project}: {prof.sessions} sessions, "
                           f"{prof.observations} observations; files: {', '.join(prof.top_files[:8])}; "
                           f"concepts: {', '.join(prof.top_concepts[:8])}"))  # fmt: skip
        for m in view.best(index, project, req.agent_id, KIND_SUMMARY, 5):
            blocks.append(("summary", f"- {m.timestamp[:10]} {m.title}"))
        if req.query.strip():
            hits = self._search(req.query, project, req.agent_id, [KIND_OBSERVATION], 10)
            important: list[Meta | None] = [index.get(h.id) for h in hits]
        else:
            important = list(view.best(index, project, req.agent_id, KIND_OBSERVATION, 30,
                                       skip_session=req.session_id))  # fmt: skip
        for om in important:
            if om is not None:
                blocks.append(("observation", f"- {om.timestamp[:16]} [{om.type}] {om.title}"))
        return blocks

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
        reading = (
            asyncio.create_task(self._stored_profile(req.project)) if not req.agent_id else None
        )
        return await self._profile(req, reading, None)

    async def _profile(
        self,
        req: ProfileIn,
        reading: asyncio.Task[ProjectProfile | None] | None,
        until: float | None,
    ) -> ProfileOut:
        """`profile`, with the stored one being read by `reading` (None: not wanted), waited
        for until `until` (epoch; then the index's answers)."""
        stored = None
        if reading is not None:
            try:
                stored = await _by(reading, until)
            finally:
                if not reading.done():
                    reading.cancel()
                    log.info("project profile of %r not read in time: the index's", req.project)
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
        got = idx.context.profile(idx, req.project or None, req.agent_id, entities=with_entities)
        names = [idx.graph.names[v] for v in got.nodes]
        files = [e for e in names if "/" in e or "." in e][:10]
        concepts = [e for e in names if "/" not in e and "." not in e][:10]
        return ProfileOut(
            project=req.project, observations=got.observations, memories=got.memories,
            sessions=got.sessions, top_files=files, top_concepts=concepts, types=got.types,
            last_activity=got.last_activity,
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


def _held_record(record: dict[str, Any], req: SmartSearchIn) -> bool:
    """A record read from KV whose own write verdict holds it (the index knows it too, but
    an id the index no longer holds reads its record from KV)."""
    trust = record.get("trust")
    return not req.include_quarantined and isinstance(trust, dict) and bool(trust.get("held"))


async def _by(task: asyncio.Task[T], until: float | None) -> T | None:
    """The task's result if it is done by `until` (epoch; None: no limit), else None (the
    task goes on; its owner cancels it)."""
    done, _ = await asyncio.wait({task}, timeout=_left(until))
    return task.result() if done else None


def _left(until: float | None) -> float | None:
    """Seconds until `until` (epoch), at least 0; None: no limit."""
    return None if until is None else max(0.0, until - time.time())


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=UTC).isoformat(timespec="milliseconds")


def left_out_line(left_out: list[str]) -> str:
    """The line a context ends with when parts of it were not ready in time."""
    return f"(agentmemory: not ready in time, left out: {', '.join(left_out)})"


def _pack(
    blocks: list[tuple[str, str]], budget: int, left_out: list[str] | None = None
) -> ContextOut:
    """Greedy packing in priority order: a block that does not fit is skipped, and smaller
    ones after it may still fill the budget. What was not ready in time (`left_out`) is
    named on the context's last line, whose room is kept first. The block is framed as
    retrieved data (functions/quarantine/frame.py): no record's text can end the frame, and
    a record's line stays one line (pinned slots keep theirs: the owner wrote them)."""
    used = tokens_of("x" * FRAME_OVERHEAD) + 1
    note = left_out_line(left_out) if left_out else ""
    if note:
        used += tokens_of(note) + 1
    chosen: list[tuple[str, str]] = []
    for kind, raw in blocks:
        text = inert(raw if kind == "slots" else one_line(raw))
        t = tokens_of(text) + 1
        if used + t > budget:
            continue
        chosen.append((kind, text))
        used += t
    lines = [text for _, text in chosen] + ([note] if note else [])
    body = "\n".join(lines)
    context = frame_context(body) if lines else ""
    return ContextOut(
        context=context,
        blocks=[{"type": k, "content": t, "tokens": tokens_of(t)} for k, t in chosen],
        tokens=tokens_of(context),
        left_out=list(left_out or []),
    )
