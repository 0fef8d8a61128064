"""The mesh operations (upstream's routes): the peers this instance copies the team's
records from and how each link is doing, registering one, a sync that tells the truth (a
round-trip probe: functions/team/links.py), and upstream's HTTP export and receive."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from typing import TYPE_CHECKING, Any

import httpx
import msgspec

from engine import FunctionError, Tool, operation
from functions.kernel.clock import now_iso
from functions.kernel.ids import kv_key
from functions.kernel.owned import routes
from functions.kernel.records import Memory, MemoryAdded, Observation
from functions.kernel.store import MemoryStore
from functions.kernel.trust import write_path as trust
from functions.memory.wire import from_wire
from functions.team import http_peer
from functions.team.links import http_view
from functions.team.records import Peer
from functions.team.wire import (
    ExportIn,
    ExportOut,
    PeersOut,
    ReceiveIn,
    ReceiveOut,
    RegisterIn,
    RegisterOut,
    SyncIn,
    SyncOut,
    SyncResult,
    item_view,
)

if TYPE_CHECKING:
    from functions.team.team_service import TeamService

rest = routes("team")


class MeshService:
    """Served beside the team service, over its book and links."""

    def __init__(self, team: TeamService) -> None:
        self.team = team

    @property
    def store(self) -> MemoryStore:
        return self.team.store

    @operation(
        "mem::mesh-list",
        description="The peers this instance copies the team's records from, and how each "
        "link is doing: its copy's state and the latest round trip of the probe",
        http=rest("GET", "mesh/peers", source="none"),
    )
    async def peers(self) -> PeersOut:
        t = self.team
        views = await t.links.views(await t.links.peers())
        return PeersOut(success=True, self_name=t.cfg.origin, team=t.cfg.team, peers=views)

    @operation(
        "mem::mesh-register",
        description="Register a peer instance by its JetStream domain: its TEAM stream is "
        "sourced over the leaf link from now on",
        http=rest("POST", "mesh/peers", status=201),
    )
    async def register(self, req: RegisterIn) -> RegisterOut:
        t = self.team
        if not t.cfg.meshed:
            if not req.url:
                raise FunctionError(
                    "CONFLICT",
                    "this instance has no JetStream domain: set nats.domain (and "
                    "nats.leafnodes) in the engine's config to link it with peers, or give the "
                    "peer's `url` to sync with it over HTTP (docs/TEAM.md)",
                    field="name",
                )
            return await self._register_http(req)
        if req.name == t.cfg.origin:
            raise FunctionError(
                "UNPROCESSABLE", f"{req.name} is this instance's own domain", field="name"
            )
        peers = await t.links.peers()
        if req.name in peers:
            raise FunctionError("CONFLICT", f"peer {req.name} is already registered", field="name")
        peer = Peer(name=req.name, url=req.url, registered_at=now_iso())
        await t.book.kv.put("peer." + kv_key(req.name), peer)
        peers = await t.links.source()
        await self.store.audit("mesh-register", [req.name], actor=t.cfg.user)
        [view] = [v for v in await t.links.views(peers) if v.name == req.name]
        return RegisterOut(success=True, peer=view)

    async def _register_http(self, req: RegisterIn) -> RegisterOut:
        t = self.team
        url = await http_peer.check_url(req.url)
        if req.name in await t.links.peers():
            raise FunctionError("CONFLICT", f"peer {req.name} is already registered", field="name")
        peer = Peer(name=req.name, url=url, registered_at=now_iso(), kind="http")
        await t.book.kv.put("peer." + kv_key(req.name), peer)
        await self.store.audit("mesh-register", [req.name], actor=t.cfg.user, reason=url)
        return RegisterOut(success=True, peer=http_view(peer, time.time()))

    async def _sync_http(self, peer: Peer) -> SyncResult:
        """Push what the team shared since the last good sync, pull what the peer did."""
        errors: list[str] = []
        pushed = pulled = 0
        if not http_peer.secret():
            errors.append("AGENTMEMORY_SECRET is not set: an HTTP peer needs the shared secret")
        else:
            since = peer.last_sync_at or None
            mine = await self.export(ExportIn(since=since))
            push = {"memories": mine.memories, "observations": mine.observations}
            try:
                got = await http_peer.exchange(peer.url, peer.last_sync_at, push)
                pushed = len(mine.memories) + len(mine.observations)
                pulled = (
                    await self.receive(
                        ReceiveIn(memories=got.memories, observations=got.observations)
                    )
                ).accepted
                for rid in got.forgotten:  # what the peer forgot, forgotten here too
                    await self.team.book.forgotten_by(rid, peer.name)
            except (httpx.HTTPError, ValueError) as exc:
                errors.append(f"{peer.url}: {exc}")
            except FunctionError as exc:
                errors.append(f"{peer.url} sent a record this instance refuses: {exc.message}")
        ok = not errors
        at = now_iso()

        def mark(cur: Peer | None) -> Peer | None:
            if cur is None:
                return None
            return msgspec.structs.replace(
                cur,
                status="connected" if ok else "error",
                last_sync_at=at if ok else cur.last_sync_at,
                error="; ".join(errors),
            )

        await self.team.book.kv.update("peer." + kv_key(peer.name), mark, type=Peer)
        return SyncResult(peer_id=peer.name, peer_name=peer.name,
                          status="connected" if ok else "error", pushed=pushed, pulled=pulled,
                          lag=0, errors=errors)  # fmt: skip

    @operation(
        "mem::mesh-sync",
        description="Sync with peer instances: make sure every peer's records are being "
        "copied over the leaf link, send a probe and wait until every peer has echoed it "
        "(what flows both ways, not whether the link is up) and every copied event is "
        "applied; say for each peer how it is doing and, when not converged, why.",
        http=rest("POST", "mesh/sync"),
        tool=Tool("memory_mesh_sync"),
    )
    async def sync(self, req: SyncIn) -> SyncOut:
        t = self.team
        links = t.links
        peers = await links.peers()
        if req.peer_id and req.peer_id not in peers:
            raise FunctionError("NOT_FOUND", f"no peer {req.peer_id}", field="peerId")
        wanted = [req.peer_id] if req.peer_id else list(peers)
        over_http = [await self._sync_http(peers[p]) for p in wanted if peers[p].kind == "http"]
        wanted = [p for p in wanted if peers[p].kind == "leaf"]
        if over_http and not wanted:
            return SyncOut(success=True, converged=all(not r.errors for r in over_http),
                           results=over_http)  # fmt: skip
        if t.cfg.meshed and peers:
            await links.source()
            await links.retry_stale(peers)
        probe = await links.probe()  # with no peers too: our own log must take writes
        deadline = time.monotonic() + req.wait_seconds
        trips: dict[str, float | None] = {}
        while True:
            got = await t.book.links()
            trips = {p: links.round_trip(got[p], only=probe) if p in got else None for p in wanted}
            done = all(v is not None for v in trips.values())
            if done and t.applied_seq >= await t.book.log.last_seq():
                break
            if time.monotonic() >= deadline or not probe:
                break
            await asyncio.sleep(0.1)
        views = {v.name: v for v in await links.views(peers)}
        converged = bool(probe) and all(v is not None for v in trips.values())
        converged = converged and t.applied_seq >= await t.book.log.last_seq()
        own = sum(1 for i in await t.book.items() if i.origin == t.cfg.origin)
        results = []
        for p in wanted:
            v = views[p]
            errors = []
            if trips.get(p) is None:
                errors.append(v.reason or f"{p} did not echo this sync's probe in time")
            if v.error and v.error not in errors[0:1]:
                errors.append(v.error)
            results.append(
                SyncResult(
                    peer_id=p,
                    peer_name=p,
                    status=v.status,
                    pushed=own,
                    pulled=v.applied,
                    lag=v.lag,
                    errors=errors,
                    round_trip_ms=trips.get(p),
                )
            )
        converged = converged and all(not r.errors for r in over_http)
        return SyncOut(
            success=True,
            converged=converged,
            results=[*over_http, *results],
            reason=links.probe_error,
        )

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
            origin=self.team.cfg.origin,
            team=self.team.cfg.team,
            memories=[],
            observations=[],
            forgotten=[],
        )
        for i in await self.team.book.items():
            if (since and _parse_time(i.shared_at, "") <= since) or (
                req.project and i.project != req.project
            ):
                continue
            view = item_view(i).content
            (out.memories if i.kind == "memory" else out.observations).append(view)
        out.forgotten = [
            t.id
            for t in await self.team.book.tombstones()
            if not since or _parse_time(t.at, "") > since
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
            if await self.team.book.gone(m.id):
                continue
            have = await st.get(st.memories, m.id, Memory)
            if have is not None and (have.version, have.updated_at) >= (m.version, m.updated_at):
                continue
            m.team, m.superseded_by = self.team.cfg.team, None
            await st.memories.put(kv_key(m.id), m)
            trust.count(st.client, m.trust)
            await st.publish(MemoryAdded(memory=m), msg_id=f"{m.id}.{m.version}")
            await self.team.book.share(m, "memory")
            accepted += 1
        for i, raw in enumerate(req.observations):
            o = _record(raw, Observation, f"observations[{i}]")
            if await self.team.book.gone(o.id) or await st.observation_presence(o.id) == "present":
                continue
            o.team = self.team.cfg.team
            await st.put_observation(o, replace=False, revive=True)
            trust.count(st.client, o.trust)
            await self.team.book.share(o, "observation")
            accepted += 1
        if accepted:
            await st.audit(
                "mesh-receive", [], reason=f"{accepted} records", actor=self.team.cfg.user
            )
        return ReceiveOut(success=True, accepted=accepted)


def _record(raw: dict[str, Any], type_: Any, field: str) -> Any:
    """A peer's record: decoded, then its words judged as a peer's (its own `trust` may
    hold it, never clear it), sanitized and scrubbed before anything is stored."""
    try:
        rec = from_wire(raw, type_)
    except (msgspec.ValidationError, TypeError) as exc:
        raise FunctionError(
            "UNPROCESSABLE", f"{field} is not a valid record: {exc}", field=field
        ) from None
    rec = trust.vet(rec, trust.PEER)
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
