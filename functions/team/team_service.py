"""The team operations (upstream's routes, and the conflicts of shared memories), and the
three stream-triggered steps that keep the team's book: applying what peers' TEAM streams
bring, and sending on new versions and explicit forgets of shared records made here (read
from MEM_EVENTS). The mesh's operations are functions/team/mesh.py."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from typing import Any

import msgspec

from engine import Client, Context, FunctionError, Tool, operation
from functions.kernel.clock import now_iso
from functions.kernel.owned import routes, started
from functions.kernel.records import Memory, MemoryAdded, Observation, RecordsRemoved
from functions.kernel.store import MemoryStore
from functions.kernel.text import clip
from functions.team.book import TeamBook
from functions.team.config import LOCAL, TeamConfig
from functions.team.links import Links
from functions.team.log import TeamLog
from functions.team.records import TEAM_BUCKET, Chain, TeamEvent, TeamItem, origin_of
from functions.team.wire import (
    ChainIn,
    ChainOut,
    ChainVersion,
    ConceptCount,
    FeedIn,
    FeedOut,
    FileCount,
    ProfileIn,
    ProfileOut,
    ResolveIn,
    ResolveOut,
    ShareIn,
    ShareOut,
    item_view,
)

EXPLICIT_FORGETS = ("forget", "governance-delete")
"""Removals a teammate's copy follows; others (auto-forget, restores, supersession) are
decisions of this instance about its own copy."""
ADOPTING_KEY = "adopting"
"""The team bucket's key naming the origin whose shared records this instance is taking
over (set before its TEAM stream's subjects change, removed once they are announced again
and the old subjects purged)."""
log = logging.getLogger("functions.team")


class Applied(msgspec.Struct, kw_only=True):
    outcome: str


rest = routes("team")


class TeamService:
    def __init__(self) -> None:
        self._book: TeamBook | None = None
        self._links: Links | None = None
        self.cfg = TeamConfig.from_env()
        self.applied_seq = 0
        """The last TEAM stream sequence the apply step has handled."""
        self._watch: asyncio.Task[None] | None = None

    @property
    def book(self) -> TeamBook:
        return started(self._book, "the team service")

    @property
    def links(self) -> Links:
        return started(self._links, "the team service")

    @property
    def store(self) -> MemoryStore:
        return self.book.store

    async def start(self, client: Client) -> None:
        self.cfg = TeamConfig.from_env()
        store = await MemoryStore(client).open()
        kv = await client.bucket(TEAM_BUCKET)
        team_log = TeamLog(client, self.cfg.origin)
        # The stream's subjects say which origin it was made for until ensure() changes
        # them; the marker keeps that word until the adoption is done, so a start cut off
        # in between (a crash, a timeout under load) adopts on the next one.
        previous = await team_log.previous_origin() or (await kv.get(ADOPTING_KEY, str) or "")
        if previous == self.cfg.origin:
            previous = ""
        if previous:
            await kv.put(ADOPTING_KEY, previous)
        await team_log.ensure()  # brought to this origin's subjects if it had others
        self._book = TeamBook(store, kv, team_log, self.cfg)
        self._links = Links(self.cfg, self._book)
        if previous:
            await self._adopt(previous)
            await kv.delete(ADOPTING_KEY)
        if self.cfg.meshed:
            await self._links.source()
            self._watch = asyncio.get_running_loop().create_task(self._links.watch())

    async def _adopt(self, previous: str) -> None:
        """What this instance shared under its former origin (`local` before it got a
        domain) is its own under the new one: announced again on the new subjects, so
        peers get it too, then the former subjects are purged."""
        n = await self.book.adopt(previous)
        purged = await self.book.log.purge_origin(previous)
        log.warning(
            "team: this instance is %s now (was %s): %d shared record(s) announced again, "
            "%d old event(s) purged", self.cfg.origin, previous, n, purged,
        )  # fmt: skip
        if previous != LOCAL:
            log.warning("team: a domain is a machine's name among its peers: keep it fixed")

    async def stop(self, client: Client) -> None:
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._watch
        if self._book is not None:
            with contextlib.suppress(Exception):
                await self._book.store.close()

    # ---- team ------------------------------------------------------------------------
    @operation(
        "mem::team-share",
        description="Share a memory or observation with team members.",
        http=rest("POST", "team/share", status=201, headers={"x-agent-id": "agentId"}),
        tool=Tool("memory_team_share"),
    )
    async def share(self, req: ShareIn) -> ShareOut:
        st = self.store
        record: Memory | Observation | None
        if req.item_type == "observation":
            record = await st.get_observation(req.item_id)
            if record is not None and req.session_id and record.session_id != req.session_id:
                record = None
        else:
            record = await st.get(st.memories, req.item_id, Memory)
        if record is None or not st.visible(record.agent_id, req.agent_id):
            what = "observation" if req.item_type == "observation" else "memory"
            raise FunctionError("NOT_FOUND", f"no {what} {req.item_id}", field="itemId")
        item, new = await self.book.share(record, req.item_type)
        await st.audit("share", [record.id], actor=self.cfg.user, project=record.project)
        return ShareOut(success=True, shared_item=item_view(item), already_shared=not new)

    @operation(
        "mem::team-feed",
        description="Get recent shared items from all team members.",
        http=rest("GET", "team/feed"),
        tool=Tool("memory_team_feed"),
    )
    async def feed(self, req: FeedIn) -> FeedOut:
        items = [i for i in await self.book.items() if not req.origin or i.origin == req.origin]
        items.sort(key=lambda i: (i.shared_at, i.id), reverse=True)
        return FeedOut(items=[item_view(i) for i in items[: req.limit]], total=len(items))

    @operation(
        "mem::team-profile",
        description="The team's profile: members, the concepts and files its shared memories "
        "are about, its shared patterns and conventions (?teamId=).",
        http=rest("GET", "team/profile"),
    )
    async def profile(self, req: ProfileIn) -> ProfileOut:
        team = req.team_id or self.cfg.team
        items = await self.book.items() if team == self.cfg.team else []
        concepts: Counter[str] = Counter()
        files: Counter[str] = Counter()
        patterns: list[str] = []
        conventions: list[str] = []
        for i in sorted(items, key=lambda i: i.shared_at, reverse=True):
            rec: Any = i.memory or i.observation
            if rec is None:
                continue
            concepts.update(rec.concepts)
            files.update(rec.files)
            if i.memory is not None and (i.item_type == "pattern" or i.memory.type == "pattern"):
                patterns.append(i.memory.content[:100])
            if i.memory is not None and i.memory.type in ("pattern", "decision", "preference"):
                conventions.append(i.memory.title or clip(i.memory.content, 80))
        return ProfileOut(
            team_id=team,
            members=sorted({i.shared_by for i in items}),
            instances=sorted({i.origin for i in items}),
            top_concepts=[
                ConceptCount(concept=c, frequency=n) for c, n in concepts.most_common(10)
            ],
            top_files=[FileCount(file=f, frequency=n) for f, n in files.most_common(10)],
            shared_patterns=patterns[:10],
            conventions=list(dict.fromkeys(conventions))[:10],
            total_shared_items=len(items),
            shared_items=len(items),
            updated_at=now_iso(),
        )

    @operation(
        "mem::team-chain",
        description="The versions of a shared memory from every instance (newest first): "
        "which is the head, and whether two of them compete (a conflict: two instances "
        "edited it while apart)",
        http=rest("GET", "team/chain"),
    )
    async def chain(self, req: ChainIn) -> ChainOut:
        chain, _ = await self._chain_of(req.memory_id)
        head, competing = chain.head(), chain.conflict()
        versions = []
        for vid, v in sorted(chain.versions.items(), key=lambda kv: (kv[1].version,
                             kv[1].created_at, kv[0]), reverse=True):  # fmt: skip
            item = await self.book.item(vid)
            m = await self.store.get(self.store.memories, vid, Memory)
            versions.append(
                ChainVersion(
                    id=vid,
                    version=v.version,
                    created_at=v.created_at,
                    parent=v.parent,
                    origin=item.origin if item else "",
                    shared_by=item.shared_by if item else "",
                    head=vid == head,
                    live=not v.gone,
                    competing=vid in competing,
                    title=m.title if m else "",
                    content=m.content if m else "",
                )
            )
        res = chain.resolution
        return ChainOut(
            root=chain.root, head=head, conflict=bool(competing), competing=competing,
            versions=versions, resolved_by=(res.by or res.origin) if res else "",
            resolved_at=res.at if res else "",
        )  # fmt: skip

    @operation(
        "mem::team-resolve",
        description="Resolve a conflict of a shared memory: keep this version as the head "
        "(on every instance); the others stay listed as its versions",
        http=rest("POST", "team/resolve"),
        tool=Tool("memory_team_resolve"),
    )
    async def resolve(self, req: ResolveIn) -> ResolveOut:
        chain, root = await self._chain_of(req.memory_id)
        competing = chain.conflict()
        if req.memory_id not in competing:
            if chain.head() == req.memory_id:
                return ResolveOut(success=True, head=req.memory_id, over=[])
            raise FunctionError(
                "CONFLICT",
                f"{req.memory_id} is not one of the competing versions of its memory"
                + (f" (they are {', '.join(competing)})" if competing else " (it has no conflict)"),
                field="memoryId",
            )
        over = [v for v in competing if v != req.memory_id]
        await self.book.resolve(root, req.memory_id, over)
        await self.store.audit("team-resolve", [req.memory_id, *over], actor=self.cfg.user,
                               reason="conflict resolved: kept this version")  # fmt: skip
        return ResolveOut(success=True, head=req.memory_id, over=over)

    async def _chain_of(self, memory_id: str) -> tuple[Chain, str]:
        item = await self.book.item(memory_id)
        chain = await self.book.chains.get(item.root or item.id) if item else None
        if item is None or chain is None or memory_id not in chain.versions:
            raise FunctionError(
                "NOT_FOUND", f"{memory_id} is not a shared memory's version", field="memoryId"
            )
        return chain, item.root or item.id

    # ---- the book's steps, on stream triggers ------------------------------------------
    @operation("mem::team-apply", description="Apply one event of the TEAM stream here")
    async def apply(self, req: TeamEvent, ctx: Context) -> Applied:
        outcome = await self.book.apply(req, origin_of(ctx.headers.get("Stream-Subject", "")))
        seq = int(ctx.headers.get("Stream-Seq", "0") or 0)
        self.applied_seq = max(self.applied_seq, seq)
        return Applied(outcome=outcome)

    @operation(
        "mem::team-send-version",
        description="A new version of a shared memory made here is shared too",
    )
    async def send_version(self, req: MemoryAdded) -> Applied:
        m = req.memory
        item: TeamItem | None = await self.book.share_version(m)
        if item is None and self.cfg.mode == "shared" and not m.instance and not m.supersedes:
            stored = await self.book.stored(m.id)
            if stored is not None:
                item, _ = await self.book.share(stored, "memory")
        return Applied(outcome="shared" if item else "private")

    @operation(
        "mem::team-send-forget",
        description="An explicit forget here of shared records is the team's forget",
    )
    async def send_forget(self, req: RecordsRemoved) -> Applied:
        if req.action not in EXPLICIT_FORGETS:
            return Applied(outcome="local")
        n = await self.book.forget(req.ids)
        return Applied(outcome=f"forgotten {n}")
