"""The team and mesh operations (upstream's routes), and the three stream-triggered steps
that keep the team's book: applying what peers' TEAM streams bring, and sending on new
versions and explicit forgets of shared records made here (read from MEM_EVENTS)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from datetime import datetime
from typing import Any

import msgspec

from engine import Client, Context, FunctionError, State, Tool, operation
from functions.kernel.clock import now_iso
from functions.kernel.ids import kv_key
from functions.kernel.owned import routes, started
from functions.kernel.records import (
    Memory,
    MemoryAdded,
    Observation,
    ObservationAdded,
    RecordsRemoved,
)
from functions.kernel.scrub import scrub_value
from functions.kernel.store import MemoryStore
from functions.kernel.text import clip
from functions.memory.wire import from_wire
from functions.team.book import TeamBook
from functions.team.config import TeamConfig
from functions.team.log import TeamLog
from functions.team.records import TEAM_BUCKET, Peer, TeamEvent, TeamItem, origin_of
from functions.team.wire import (
    ConceptCount,
    ExportIn,
    ExportOut,
    FeedIn,
    FeedOut,
    FileCount,
    PeersOut,
    PeerStatus,
    PeerView,
    ProfileIn,
    ProfileOut,
    ReceiveIn,
    ReceiveOut,
    RegisterIn,
    RegisterOut,
    ShareIn,
    ShareOut,
    SyncIn,
    SyncOut,
    SyncResult,
    item_view,
)

STALE = 5.0
"""A source not heard from for this long (seconds) is disconnected: JetStream's sourcing
consumers send a heartbeat every second while the link is up (nats-server 2.15)."""
STABLE = 1.2
"""Seconds a caught-up state must last for mesh/sync to call it converged (a heartbeat's
worth: a gap the peer's next heartbeat reveals would have shown)."""
LINK_CHECK = 2.0
"""How often the sources are looked at (one stream info request)."""
RETRY_EVERY = 3.0
"""A disconnected peer's source is retried at most this often (see TeamLog.retry), so a
link that comes back is used within seconds, not after the server's backoff."""
EXPLICIT_FORGETS = ("forget", "governance-delete")
"""Removals a teammate's copy follows; others (auto-forget, restores, supersession) are
decisions of this instance about its own copy."""
SCOPES = ["memories", "observations"]
log = logging.getLogger("functions.team")


class Applied(msgspec.Struct, kw_only=True):
    outcome: str


rest = routes("team")


class TeamService:
    def __init__(self) -> None:
        self._book: TeamBook | None = None
        self.cfg = TeamConfig.from_env()
        self.applied_seq = 0
        """The last TEAM stream sequence the apply step has handled."""
        self._retried: dict[str, float] = {}
        self._watch: asyncio.Task[None] | None = None

    @property
    def book(self) -> TeamBook:
        return started(self._book, "the team service")

    @property
    def store(self) -> MemoryStore:
        return self.book.store

    async def start(self, client: Client) -> None:
        self.cfg = TeamConfig.from_env()
        store = await MemoryStore(client).open()
        kv = await client.state(TEAM_BUCKET)
        team_log = TeamLog(client, self.cfg.origin)
        await team_log.ensure()
        self._book = TeamBook(store, kv, team_log, self.cfg)
        if self.cfg.meshed:
            await self._source()
            self._watch = asyncio.get_running_loop().create_task(self._watch_links())

    async def stop(self, client: Client) -> None:
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._watch

    async def _watch_links(self) -> None:
        while True:
            await asyncio.sleep(LINK_CHECK)
            try:
                await self._retry_stale(await self._peers())
            except Exception as exc:  # the bus is away for a moment: next round
                log.debug("team links not checked: %s", exc)

    async def _retry_stale(self, peers: dict[str, Peer], force: bool = False) -> None:
        states = await self.book.log.peer_states()
        now = time.monotonic()
        stale = [
            p
            for p in peers
            if (st := states.get(p)) is None or st.active is None or st.active > STALE
        ]
        due = [p for p in stale if force or now - self._retried.get(p, 0.0) >= RETRY_EVERY]
        if due:
            self._retried.update((p, now) for p in due)
            await self.book.log.retry(due, list(peers))

    async def _peers(self) -> dict[str, Peer]:
        kv: State = self.book.kv
        out = {p: Peer(name=p) for p in self.cfg.peers}
        async for _, peer in kv.scan("peer.>", Peer):
            out[peer.name] = peer
        return out

    async def _source(self) -> dict[str, Peer]:
        peers = await self._peers()
        await self.book.log.source_peers(list(peers))
        return peers

    async def _views(self, peers: dict[str, Peer]) -> list[PeerView]:
        states = await self.book.log.peer_states() if self.cfg.meshed else {}
        out = []
        for name, peer in sorted(peers.items()):
            st = states.get(name)
            status: PeerStatus = "disconnected"
            if st is not None and st.error:
                status = "error"
            elif st is not None and st.active is not None and st.active < STALE:
                status = "syncing" if st.lag else "connected"
            out.append(
                PeerView(
                    id=name,
                    name=name,
                    url=peer.url,
                    status=status,
                    lag=st.lag if st else 0,
                    last_seen_seconds=st.active if st else None,
                    applied=self.book.applied.get(name, 0),
                    shared_scopes=SCOPES,
                    error=st.error if st else "",
                )
            )
        return out

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
            record = await st.get(st.observations, req.item_id, Observation)
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

    # ---- mesh ------------------------------------------------------------------------
    @operation(
        "mem::mesh-list",
        description="The peers this instance copies the team's records from, and how each "
        "link is doing",
        http=rest("GET", "mesh/peers", source="none"),
    )
    async def peers(self) -> PeersOut:
        views = await self._views(await self._peers())
        return PeersOut(success=True, self_name=self.cfg.origin, team=self.cfg.team, peers=views)

    @operation(
        "mem::mesh-register",
        description="Register a peer instance by its JetStream domain: its TEAM stream is "
        "sourced over the leaf link from now on",
        http=rest("POST", "mesh/peers", status=201),
    )
    async def register(self, req: RegisterIn) -> RegisterOut:
        if not self.cfg.meshed:
            raise FunctionError(
                "CONFLICT",
                "this instance has no JetStream domain: set nats.domain (and nats.leafnodes) "
                "in the engine's config to link it with peers (docs/TEAM.md)",
                field="name",
            )
        if req.name == self.cfg.origin:
            raise FunctionError(
                "UNPROCESSABLE", f"{req.name} is this instance's own domain", field="name"
            )
        peers = await self._peers()
        if req.name in peers:
            raise FunctionError("CONFLICT", f"peer {req.name} is already registered", field="name")
        peer = Peer(name=req.name, url=req.url, registered_at=now_iso())
        await self.book.kv.put("peer." + kv_key(req.name), peer)
        peers = await self._source()
        await self.store.audit("mesh-register", [req.name], actor=self.cfg.user)
        [view] = [v for v in await self._views(peers) if v.name == req.name]
        return RegisterOut(success=True, peer=view)

    @operation(
        "mem::mesh-sync",
        description="Sync with peer instances: make sure every peer's records are being "
        "copied over the leaf link, wait until they are copied and applied, and say how each "
        "peer is doing.",
        http=rest("POST", "mesh/sync"),
        tool=Tool("memory_mesh_sync"),
    )
    async def sync(self, req: SyncIn) -> SyncOut:
        peers = await self._peers()
        if req.peer_id and req.peer_id not in peers:
            raise FunctionError("NOT_FOUND", f"no peer {req.peer_id}", field="peerId")
        wanted = [req.peer_id] if req.peer_id else list(peers)
        if self.cfg.meshed and peers:
            await self._source()
            await self._retry_stale(peers)
        # A source's state is what it last heard: after an outage it says "no lag" until the
        # peer is heard from again. So a peer is caught up once it was heard from since the
        # sync began, with nothing left to copy, and stayed so for a heartbeat more.
        start = time.monotonic()
        deadline = start + req.wait_seconds
        since: float | None = None
        converged = False
        while True:
            views = {v.name: v for v in await self._views(peers)}
            now = time.monotonic()
            heard = all(
                views[p].status == "connected" and (views[p].last_seen_seconds or 0.0) < now - start
                for p in wanted
            )
            done = heard and self.applied_seq >= await self.book.log.last_seq()
            since = (since or now) if done else None
            converged = since is not None and (not wanted or now - since >= STABLE)
            if converged or now >= deadline:
                break
            await asyncio.sleep(0.1)
        own = sum(1 for i in await self.book.items() if i.origin == self.cfg.origin)
        results = [
            SyncResult(
                peer_id=p,
                peer_name=p,
                status=views[p].status,
                pushed=own,
                pulled=views[p].applied,
                lag=views[p].lag,
                errors=[views[p].error] if views[p].error else [],
            )
            for p in wanted
        ]
        return SyncOut(success=True, converged=converged, results=results)

    @operation(
        "mem::mesh-export",
        description="What this instance's team has shared (memories, observations) and "
        "forgotten, after ?since= (private records are never exported)",
        http=rest("GET", "mesh/export"),
    )
    async def export(self, req: ExportIn) -> ExportOut:
        # Given, it must be a date-time (an empty one too: the schema says so).
        since = _parse_time(req.since, "since", strict=True) if req.since is not None else 0.0
        out = ExportOut(
            origin=self.cfg.origin, team=self.cfg.team, memories=[], observations=[], forgotten=[]
        )
        for i in await self.book.items():
            if (since and _parse_time(i.shared_at, "") <= since) or (
                req.project and i.project != req.project
            ):
                continue
            view = item_view(i).content
            (out.memories if i.kind == "memory" else out.observations).append(view)
        out.forgotten = [
            t.id for t in await self.book.tombstones() if not since or _parse_time(t.at, "") > since
        ]
        return out

    @operation(
        "mem::mesh-receive",
        description="Accept memories and observations pushed by a peer over HTTP (upstream's "
        "mesh): each one new here, or a newer version, is stored and shared with the team",
        http=rest("POST", "mesh/receive", max_body=8 * 1024 * 1024),
    )
    async def receive(self, req: ReceiveIn) -> ReceiveOut:
        st = self.store
        accepted = 0
        for i, raw in enumerate(req.memories):
            m = _record(raw, Memory, f"memories[{i}]")
            if await self.book.gone(m.id):
                continue
            have = await st.get(st.memories, m.id, Memory)
            if have is not None and (have.version, have.updated_at) >= (m.version, m.updated_at):
                continue
            m.team, m.superseded_by = self.cfg.team, None
            await st.memories.put(kv_key(m.id), m)
            await st.publish(MemoryAdded(memory=m), msg_id=f"{m.id}.{m.version}")
            await self.book.share(m, "memory")
            accepted += 1
        for i, raw in enumerate(req.observations):
            o = _record(raw, Observation, f"observations[{i}]")
            if await self.book.gone(o.id) or await st.presence(st.observations, o.id) == "present":
                continue
            o.team = self.cfg.team
            await st.observations.put(kv_key(o.id), o)
            await st.publish_once(ObservationAdded(observation=o))
            await self.book.share(o, "observation")
            accepted += 1
        if accepted:
            await st.audit("mesh-receive", [], reason=f"{accepted} records", actor=self.cfg.user)
        return ReceiveOut(success=True, accepted=accepted)

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


def _record(raw: dict[str, Any], type_: Any, field: str) -> Any:
    try:
        rec = from_wire(scrub_value(raw), type_)
    except (msgspec.ValidationError, TypeError) as exc:
        raise FunctionError(
            "UNPROCESSABLE", f"{field} is not a valid record: {exc}", field=field
        ) from None
    if not rec.id:
        raise FunctionError("UNPROCESSABLE", f"{field} has no id", field=f"{field}.id")
    return rec


def _parse_time(value: str, field: str, strict: bool = False) -> float:
    if not value and not strict:
        return 0.0
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        if not field:
            return 0.0
        raise FunctionError(
            "BAD_REQUEST", f"{field} is not an ISO-8601 date-time: {value!r}", field=field
        ) from None
