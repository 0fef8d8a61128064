"""How this instance's links to its peers are doing, told from what actually flowed.

Two sources of truth, and only the second proves anything: the state of our copies of the
peers' TEAM streams (JetStream's sourcing: connected, lag, last heard), and the round-trip
probe. A source can look connected, with no lag, while nothing the peer writes arrives
(a leaf link that may not carry one direction: measured with the hub's leaf user denied
`$JS.S.>`), so convergence is claimed only when our probe came back: we publish a Probe on
our own log, each peer that applies it answers with an Echo on its log, and the Echo
reaching us has travelled both ways through the same streams and apply steps as shares.
A peer's own probes reaching us tell the one direction that works when the other fails.
"""

from __future__ import annotations

import asyncio
import logging
import time

from engine import Bucket, SourceStatus
from functions.kernel import clock
from functions.kernel.clock import now_iso
from functions.kernel.ids import new_id
from functions.team.book import TeamBook
from functions.team.config import TeamConfig
from functions.team.records import Link, Peer, Probe
from functions.team.wire import PeerStatus, PeerView

log = logging.getLogger("functions.team")

STALE = 5.0
"""A source not heard from for this long (seconds) is disconnected: JetStream's sourcing
consumers send a heartbeat every second while the link is up (nats-server 2.15)."""
LINK_CHECK = 2.0
"""How often the sources are looked at (one stream info request)."""
RETRY_EVERY = 3.0
"""A disconnected peer's source is retried at most this often (see TeamLog.retry), so a
link that comes back is used within seconds, not after the server's backoff."""
PROBE_EVERY = 15.0
"""A probe this often while meshed keeps `mesh/peers` and Health true without a sync (one
message per instance and one echo per peer each time: the stream keeps only the latest)."""
SCOPES = ["memories", "observations"]


class Links:
    def __init__(self, cfg: TeamConfig, book: TeamBook) -> None:
        self.cfg = cfg
        self.book = book
        self._retried: dict[str, float] = {}
        self.sent: dict[str, float] = {}
        """This instance's recent probes (id -> epoch seconds sent), newest last."""
        self.probe_error = ""
        """Why the latest probe could not be sent ("" when it was)."""

    @property
    def kv(self) -> Bucket:
        return self.book.kv

    async def peers(self) -> dict[str, Peer]:
        out = {p: Peer(name=p) for p in self.cfg.peers}
        async for _, peer in self.kv.scan("peer.>", Peer):
            out[peer.name] = peer
        return out

    async def source(self) -> dict[str, Peer]:
        peers = await self.peers()
        await self.book.log.source_peers([p for p, v in peers.items() if v.kind == "leaf"])
        return peers

    async def retry_stale(self, peers: dict[str, Peer]) -> None:
        states = await self.book.log.peer_states()
        now = time.monotonic()
        stale = [p for p in peers if _stale(states.get(p))]
        due = [p for p in stale if now - self._retried.get(p, 0.0) >= RETRY_EVERY]
        if due:
            self._retried.update((p, now) for p in due)
            await self.book.log.retry(due, list(peers))

    async def probe(self) -> str:
        """Send a new probe; its id ("" when our own TEAM stream would not take it: the
        reason is then in `probe_error`)."""
        pid = new_id("probe")
        try:
            await self.book.log.probe(Probe(id=pid, origin=self.cfg.origin, at=now_iso()))
        except Exception as exc:  # what JetStream said is the reason sync reports
            self.probe_error = f"this instance cannot write its TEAM stream: {exc}"
            return ""
        self.sent[pid] = time.time()
        while len(self.sent) > 3:
            del self.sent[next(iter(self.sent))]
        self.probe_error = ""
        return pid

    async def watch(self) -> None:
        """While meshed: retry stale sources every LINK_CHECK s, probe every PROBE_EVERY s."""
        last_probe = 0.0
        while True:
            await asyncio.sleep(LINK_CHECK)
            try:
                peers = await self.peers()
                await self.retry_stale(peers)
                if peers and time.monotonic() - last_probe >= PROBE_EVERY:
                    last_probe = time.monotonic()
                    await self.probe()
            except Exception as exc:  # the bus is away for a moment: next round
                log.debug("team links not checked: %s", exc)

    async def views(self, peers: dict[str, Peer]) -> list[PeerView]:
        states = await self.book.log.peer_states() if self.cfg.meshed else {}
        links = await self.book.links()
        now = time.time()
        out = []
        for name, peer in sorted(peers.items()):
            if peer.kind == "http":
                out.append(http_view(peer, now))
                continue
            st = states.get(name)
            link = links.get(name) or Link()
            status: PeerStatus = "disconnected"
            if st is not None and st.error:
                status = "error"
            elif st is not None and st.active is not None and st.active < STALE:
                status = "syncing" if st.lag else "connected"
            trip = self.round_trip(link)
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
                    round_trip_ms=trip,
                    echo_seconds=round(now - link.echoed_at, 1) if link.echoed_at else None,
                    heard_seconds=round(now - link.heard_at, 1) if link.heard_at else None,
                    reason="" if trip is not None else self.reason(name, st, link, now),
                )
            )
        return out

    def round_trip(self, link: Link, only: str = "") -> float | None:
        """Milliseconds from one of our recent probes (or exactly `only`) to its echo from
        this peer; None when there is no such echo. A probe just sent has not had time to
        come back: the one before it still counts until the next is due."""
        sent = self.sent.get(link.echoed)
        if sent is None or (only and link.echoed != only):
            return None
        if not only and time.time() - sent > 2 * PROBE_EVERY + 5:
            return None  # an old round trip proves nothing about now
        return round(max(link.echoed_at - sent, 0.0) * 1000, 1)

    def reason(self, peer: str, st: SourceStatus | None, link: Link, now: float) -> str:
        """Why there is no round trip with `peer`, in words a person can act on."""
        if self.probe_error:
            return self.probe_error
        if not self.sent:
            return "no probe sent yet (mesh/sync sends one)"
        waited = now - next(reversed(self.sent.values()))
        if st is not None and st.error:
            return f"the copy of {peer}'s TEAM stream fails: {st.error}"
        heard = now - link.heard_at if link.heard_at else None
        if heard is not None and heard < max(2 * PROBE_EVERY, waited + 5):
            return (
                f"{peer} does not get what this instance writes: our probe got no echo in "
                f"{waited:.0f} s, while {peer}'s own probe reached us {heard:.0f} s ago. Check "
                f"that the link carries both directions (the hub's leaf permissions, "
                f"{peer}'s `mesh/peers`; docs/TEAM.md, checking both directions)"
            )
        if _stale(st):
            since = f"{st.active:.0f} s" if st is not None and st.active is not None else "ever"
            return (
                f"nothing heard from {peer} for {since}: the link is down or {peer} is not "
                "running (its leaf link, its engine)"
            )
        return (
            f"nothing {peer} writes reaches this instance, though the link looks up (no echo "
            f"of our probe in {waited:.0f} s, and none of {peer}'s own probes): check that "
            f"{peer}'s side of the link may send (the hub's leaf permissions; docs/TEAM.md)"
        )


def http_view(peer: Peer, now: float) -> PeerView:
    """An HTTP peer as its last sync left it (disconnected until one ran)."""
    status: PeerStatus = peer.status or "disconnected"
    seen = clock.parse(peer.last_sync_at).timestamp() if peer.last_sync_at else None
    return PeerView(
        id=peer.name,
        name=peer.name,
        url=peer.url,
        status=status,
        lag=0,
        last_seen_seconds=round(now - seen, 1) if seen is not None else None,
        applied=0,
        shared_scopes=SCOPES,
        error=peer.error,
        reason="" if status == "connected" else peer.error or "no sync yet (mesh/sync runs one)",
    )


def _stale(st: SourceStatus | None) -> bool:
    return st is None or st.active is None or st.active > STALE
