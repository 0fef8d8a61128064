"""What the viewer charts, per day: memory growing (observations, memories, new versions,
sessions), what retrieval returned (search and context calls, the tokens of their replies
against the raw history they stand for) and the lifecycle (consolidated memories, removals
by kind).

Day records `d.<yyyymmdd>.<project key>` in `mem_viewer_days` are folded from MEM_EVENTS by
arrival day (when JetStream stored the event, the feed's clock), each remembering the last
sequence folded into it, so a fold cut short and run again counts nothing twice; the
cursor is `cursor.events`. Retrieval is sampled from the functions' own counters
(`$SRV.STATS`: calls and reply bytes per function and process, `sample.<instance>` keeps
the last reading), its deltas added to the day it was read in, under project "" (a call's
project is not counted). A fold runs on a cron tick and before each answer, bounded, so
a first look at a large memory says how far behind it still is instead of waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime, timedelta
from typing import Annotated

import msgspec

from engine import Bucket, Client, FunctionError, Http, operation, service_infos
from functions.kernel.clock import parse
from functions.kernel.ids import kv_key
from functions.kernel.owned import started
from functions.kernel.records import (
    MemEvent,
    MemoryAdded,
    ObservationAdded,
    RecordsRemoved,
    Session,
    SummaryAdded,
)
from functions.kernel.store import MemoryStore
from functions.viewer.activity import removal_kind

DAYS_BUCKET = "mem_viewer_days"
FOLD_LIMIT = 20_000
"""Events one fold reads at most (a cron tick or an answer waits no longer than that)."""
RECALL = {"mem::search": "search", "mem::smart-search": "search", "mem::context": "context"}
CONSOLIDATED = frozenset({"semantic", "procedural"})
TOKEN_CHARS = 4
"""Characters per token, the usual estimate for English and code."""
_decoder = msgspec.json.Decoder(MemEvent)


class Day(msgspec.Struct, kw_only=True, omit_defaults=True):
    day: str
    project: str = ""
    observations: int = 0
    memories: int = 0
    """New memories (first versions)."""
    versions: int = 0
    """New versions of memories (edits, supersessions)."""
    consolidated: int = 0
    summaries: int = 0
    removed: dict[str, int] = msgspec.field(default_factory=dict)
    """By kind: forget, auto-forget, superseded, team, restore, heal, removed."""
    raw_chars: int = 0
    """Of the observations' raw text (what an agent would otherwise re-read)."""
    searches: int = 0
    contexts: int = 0
    search_bytes: int = 0
    context_bytes: int = 0
    seq: int = 0
    """The last MEM_EVENTS sequence folded into this record."""


class Sample(msgspec.Struct, kw_only=True):
    counts: dict[str, tuple[int, int]]
    """function id -> (calls, reply bytes) as that process last reported them."""


class TrendsIn(msgspec.Struct, rename="camel", kw_only=True):
    days: Annotated[int, msgspec.Meta(ge=1, le=366)] = 30
    project: str = ""


class TrendsOut(msgspec.Struct, rename="camel", kw_only=True):
    days: list[str]
    """Oldest first, ending today (UTC)."""
    observations: list[int]
    memories: list[int]
    versions: list[int]
    sessions: list[int]
    """Sessions started that day."""
    consolidated: list[int]
    removed: dict[str, list[int]]
    searches: list[int]
    contexts: list[int]
    tokens_returned: list[int]
    """Tokens of what search and context replied (reply bytes / 4)."""
    raw_tokens: list[int]
    """The raw history to date: every observation's raw text so far, in tokens."""
    tokens_saved: list[int]
    """Per context reply, the raw history it stood for minus what it returned."""
    behind: int
    """MEM_EVENTS events not folded yet (the next answers catch up)."""
    recall_project_wide: bool = True
    """Retrieval is counted for every project (a call's project is not known)."""


def day_of(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d")


def day_key(day: str, project: str) -> str:
    return f"d.{day.replace('-', '')}.{kv_key(project or '-')}"


class Folder:
    """Day records in memory while one fold runs, written at its end."""

    def __init__(self, state: Bucket) -> None:
        self.state = state
        self.days: dict[str, Day] = {}

    async def day(self, day: str, project: str) -> Day:
        key = day_key(day, project)
        got = self.days.get(key)
        if got is None:
            stored: Day | None = await self.state.get(key, Day)
            got = stored or Day(day=day, project=project)
            self.days[key] = got
        return got

    async def add(self, seq: int, at: float, event: MemEvent) -> None:
        day = day_of(at)
        if isinstance(event, ObservationAdded):
            o = event.observation
            if o.revision:
                return  # a rewrite by the compression model: counted once, as first stored
            d = await self.day(day, o.project)
            if seq <= d.seq:
                return
            d.observations += 1
            d.raw_chars += len(o.raw or o.narrative)
        elif isinstance(event, MemoryAdded):
            m = event.memory
            d = await self.day(day, m.project)
            if seq <= d.seq:
                return
            if m.type in CONSOLIDATED:
                d.consolidated += 1
            elif m.supersedes or m.version > 1:
                d.versions += 1
            else:
                d.memories += 1
        elif isinstance(event, SummaryAdded):
            d = await self.day(day, event.summary.project)
            if seq <= d.seq:
                return
            d.summaries += 1
        elif isinstance(event, RecordsRemoved):
            d = await self.day(day, "")
            if seq <= d.seq:
                return
            kind, _ = removal_kind(event)
            d.removed[kind] = d.removed.get(kind, 0) + len(event.ids)
        else:
            return  # a quarantine decision: it adds or removes nothing
        d.seq = seq

    async def save(self) -> None:
        for key, d in self.days.items():
            await self.state.put(key, d)
        self.days.clear()


class TrendsService:
    def __init__(self) -> None:
        self._store: MemoryStore | None = None
        self._bucket: Bucket | None = None
        self._lock = asyncio.Lock()
        self._draining = False

    @property
    def store(self) -> MemoryStore:
        return started(self._store, "the viewer")

    @property
    def bucket(self) -> Bucket:
        return started(self._bucket, "the viewer")

    async def start(self, client: Client) -> None:
        self._store = await MemoryStore(client).open()
        self._bucket = await client.bucket(DAYS_BUCKET)

    async def drain(self, client: Client) -> None:
        """The worker is stopping: a fold saves what it has folded and ends."""
        self._draining = True

    async def fold(self, limit: int = FOLD_LIMIT) -> int:
        """Fold what is new (at most `limit` events) and sample retrieval's counters; how
        many events are still behind."""
        async with self._lock:
            behind = await self._fold_events(limit)
            with contextlib.suppress(FunctionError, TimeoutError):
                await self._sample_recall()
            return behind

    async def _fold_events(self, limit: int) -> int:
        st, state = self.store, self.bucket
        got: int | None = await state.get("cursor.events", int)
        cursor = got or 0
        info = await st.events.info()
        after = max(cursor, info.first_seq - 1)
        if info.last_seq <= after:
            return 0
        folder = Folder(state)
        last = after
        reader = st.events.read(after=after)
        async with contextlib.aclosing(reader) as messages:
            async for m in messages:
                last = m.seq
                with contextlib.suppress(msgspec.DecodeError, msgspec.ValidationError):
                    await folder.add(m.seq, m.at, _decoder.decode(m.data))
                if last - after >= limit or self._draining:
                    break
        await folder.save()
        await state.put("cursor.events", last)
        return max(info.last_seq - last, 0)

    async def _sample_recall(self) -> None:
        """Add what retrieval answered since the last reading to today's record."""
        replies = await service_infos(self.store.client, quiet=0.1, limit=0.5, verb="STATS")
        today = Folder(self.bucket)
        d = await today.day(day_of(datetime.now(UTC).timestamp()), "")
        changed = False
        for reply in replies:
            if not isinstance(reply, dict) or not reply.get("id"):
                continue
            counts: dict[str, tuple[int, int]] = {}
            for ep in reply.get("endpoints") or []:
                data = (ep or {}).get("data") or {}
                fid = data.get("function_id")
                if fid in RECALL:
                    counts[fid] = (int(data.get("calls") or 0), int(data.get("bytes_out") or 0))
            if not counts:
                continue
            key = "sample." + kv_key(str(reply["id"]))
            before: Sample | None = await self.bucket.get(key, Sample)
            for fid, (calls, size) in counts.items():
                was = before.counts.get(fid, (0, 0)) if before else (0, 0)
                # A process restarted since the last reading counts from zero again.
                dc, db = (calls, size) if calls < was[0] else (calls - was[0], size - was[1])
                if not dc:
                    continue
                changed = True
                if RECALL[fid] == "search":
                    d.searches, d.search_bytes = d.searches + dc, d.search_bytes + db
                else:
                    d.contexts, d.context_bytes = d.contexts + dc, d.context_bytes + db
            await self.bucket.put(key, Sample(counts=counts))
        if changed:
            await today.save()

    @operation(
        "mem::viewer::fold",
        description="Fold new MEM_EVENTS events and retrieval's counters into the viewer's "
        "day records (a cron tick; every trends answer does it too)",
    )
    async def tick(self) -> dict[str, int]:
        return {"behind": await self.fold()}

    @operation(
        "mem::viewer::trends",
        description="Per day, for the viewer's charts: observations, memories, versions and "
        "sessions; search and context calls, the tokens they returned against the raw "
        "history; consolidation and removals by kind (?days=&project=)",
        http=Http("GET", "/agentmemory/viewer/trends", tags=["viewer"]),
    )
    async def trends(self, req: TrendsIn) -> TrendsOut:
        behind = await self.fold()
        today = datetime.now(UTC).date()
        days = [(today - timedelta(days=req.days - 1 - i)).isoformat() for i in range(req.days)]
        index = {d: i for i, d in enumerate(days)}
        n = len(days)
        series: dict[str, list[int]] = {k: [0] * n for k in (
            "observations", "memories", "versions", "consolidated", "searches", "contexts",
            "returned", "raw", "context_bytes", "sessions")}  # fmt: skip
        removed: dict[str, list[int]] = {}
        raw_before = 0
        want = kv_key(req.project) if req.project else None
        async for key, d in self.bucket.scan("d.>", Day):
            mine = want is None or key.endswith("." + want)
            recall = not d.project  # retrieval and removals are kept project-wide
            i = index.get(d.day)
            if i is None:
                if mine and d.day < days[0]:
                    raw_before += d.raw_chars
                continue
            if mine:
                for k in ("observations", "memories", "versions", "consolidated"):
                    series[k][i] += getattr(d, k)
                series["raw"][i] += d.raw_chars
            if recall:
                series["searches"][i] += d.searches
                series["contexts"][i] += d.contexts
                series["returned"][i] += (d.search_bytes + d.context_bytes) // TOKEN_CHARS
                series["context_bytes"][i] += d.context_bytes
                for kind, count in d.removed.items():
                    removed.setdefault(kind, [0] * n)[i] += count
        async for _, s in self.store.sessions.scan(">", Session):
            if req.project and s.project != req.project:
                continue
            i = index.get(parse(s.started_at).date().isoformat()) if s.started_at else None
            if i is not None:
                series["sessions"][i] += 1
        raw_tokens, saved = [], []
        total = raw_before
        for i in range(n):
            total += series["raw"][i]
            raw_tokens.append(total // TOKEN_CHARS)
            returned = series["context_bytes"][i] // TOKEN_CHARS
            saved.append(max(series["contexts"][i] * (total // TOKEN_CHARS) - returned, 0))
        return TrendsOut(
            days=days, observations=series["observations"], memories=series["memories"],
            versions=series["versions"], sessions=series["sessions"],
            consolidated=series["consolidated"], removed=removed, searches=series["searches"],
            contexts=series["contexts"], tokens_returned=series["returned"],
            raw_tokens=raw_tokens, tokens_saved=saved, behind=behind,
        )  # fmt: skip
