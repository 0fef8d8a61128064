"""An in-memory mirror of the graph's node (`n.*`), adjacency (`a.*`) and edge (`e.*`)
records and `stats`, kept by a watch on `mem_graph`, so a query reads memory instead of one
KV key per record it touches.

Why a mirror and not a cache: a query touches a node's adjacency, the page's nodes and every
edge among them (hundreds for a page of 50, thousands for 500), each a round trip and a
message parse; holding all of them costs what the graph holds (compaction bounds the graph)
and needs no staleness rule. Nodes and adjacency lists are decoded (small, read on every
query); edges, the bulk (up to 32 provenance ids each), are kept as the stored bytes, about
the bucket's own size, and decoded only for a page.

Freshness: `sync()` reads the stream's last sequence and waits until the watch has applied
it, so a query sees every write made before it started (read-your-writes for the feed and
compaction, as reading KV did). The watch is on `>` (values of other keys are skipped) so
the sequences it sees are the stream's own.

Purges: compaction removes keys with a stream purge (no tombstone, so nothing is delivered
to a watcher). After its purges it writes `PURGED`; when the watch reaches that key the
mirror drops the entries whose subject is gone (checked against the stream's subjects, then
confirmed by key) before it counts that sequence as applied.

If the mirror cannot catch up (its watch broke, or a crashed compaction left the last
sequence purged) a query falls back to reading KV: slower, never wrong.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import msgspec

from engine import Bucket, Client, SnapshotEnd, Watch
from functions.graph.adjacency import Adjacency
from functions.graph.keys import STATS
from functions.kernel.records import GRAPH_BUCKET, GraphNode, GraphStats

log = logging.getLogger(__name__)

PURGED = "purged"
"""Written by compaction after its purges: the mirror reconciles when it sees it."""
SYNC_WAIT = 10.0
"""Seconds a query waits for the mirror before reading KV instead."""

_node = msgspec.json.Decoder(GraphNode)
_adj = msgspec.json.Decoder(Adjacency)
_stats = msgspec.json.Decoder(GraphStats)


class PurgeNote(msgspec.Struct, kw_only=True):
    """`purged`: the last compaction's purge count (a fresh write per compaction)."""

    at: str
    keys: int


class GraphMirror:
    def __init__(self, state: Bucket) -> None:
        self.state = state
        self.nodes: dict[str, GraphNode] = {}
        self.adj: dict[str, Adjacency] = {}
        self.edges: dict[str, bytes] = {}
        """By full key (`e.<src>.<dst>.<kind>`): the stored JSON."""
        self.stats: GraphStats | None = None
        """`stats` (the unfiltered listing's edge count)."""
        self.seq = 0
        """The last stream sequence applied."""
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        """(sequence, future) of queries waiting for the watch."""
        self._task: asyncio.Task[None] | None = None
        self._stopped = False
        self.started: asyncio.Future[None] | None = None
        """Set by `mirror()`: concurrent first queries wait for one start."""

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done() and not self._stopped

    async def start(self) -> None:
        watch = await self.state.changes(">")
        self._task = asyncio.create_task(self._run(watch), name="graph-mirror")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self, watch: Watch) -> None:
        # The watch ends by itself when the connection closes (engine/_watch.py).
        try:
            async for ch in watch:
                if isinstance(ch, SnapshotEnd):
                    continue  # sequences tell freshness
                await self._apply(ch.key, ch.op == "delete", ch.value, ch.revision)
        except asyncio.CancelledError:
            raise
        except Exception:  # a broken watch: queries fall back to KV, the next restarts it
            log.exception("graph mirror watch stopped")
        finally:
            self._stopped = True
            self._wake()  # waiters see it stopped
            if _mirrors.get(id(self.state)) is self:
                del _mirrors[id(self.state)]  # nothing kept for a closed connection
            await watch.stop()

    def _wake(self) -> None:
        """Resolve the waiters whose sequence is applied (all of them once stopped)."""
        done = not self.running
        keep: list[tuple[int, asyncio.Future[None]]] = []
        for target, fut in self._waiters:
            if done or self.seq >= target:
                if not fut.done():
                    fut.set_result(None)
            else:
                keep.append((target, fut))
        self._waiters = keep

    async def _apply(self, key: str, deleted: bool, value: bytes | None, rev: int) -> None:
        kind, _, rest = key.partition(".")
        if kind == "n" and rest:
            if deleted or not value:
                self.nodes.pop(rest, None)
            else:
                self.nodes[rest] = _node.decode(value)
        elif kind == "a" and rest:
            if deleted or not value:
                self.adj.pop(rest, None)
            else:
                self.adj[rest] = _adj.decode(value)
        elif kind == "e" and rest:
            if deleted or not value:
                self.edges.pop(key, None)
            else:
                self.edges[key] = value
        elif key == STATS:
            self.stats = None if deleted or not value else _stats.decode(value)
        elif key == PURGED and not deleted:
            await self._reconcile()
        self.seq = max(self.seq, rev)
        if self._waiters:  # nothing to do per message while no query waits
            self._wake()

    async def _reconcile(self) -> None:
        """Drop entries whose keys compaction purged (no tombstone reaches a watcher)."""
        held: dict[str, dict[str, Any]] = {"n.": self.nodes, "a.": self.adj, "": self.edges}
        for prefix, records in held.items():
            short = prefix or "e."  # edges are held by their full key
            present = set(await self.state.stored_keys(f"{short}>"))
            for k in [k for k in records if f"{prefix}{k}" not in present]:
                # Confirmed by key: a subject listing is never trusted to drop a live record.
                if await self.state.entry(prefix + k, bytes) is None:
                    records.pop(k, None)

    async def sync(self, wait: float = SYNC_WAIT) -> bool:
        """Wait until every write made before this call is applied. False if the mirror
        stopped or did not get there within `wait` seconds (the caller reads KV then)."""
        last = (await self.state.info()).last_seq
        if self.seq < last and self.running:
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append((last, fut))
            try:
                await asyncio.wait_for(asyncio.shield(fut), wait)
            except TimeoutError:
                return False
            finally:
                self._waiters = [w for w in self._waiters if w[1] is not fut]
        return self.seq >= last


_mirrors: dict[int, GraphMirror] = {}
"""One mirror per bucket handle (per connection) in this process."""


async def mirror(state: Bucket) -> GraphMirror:
    """The running mirror of this bucket handle, started on first use (the lifecycle worker
    starts it when it starts, so the first query does not pay the load)."""
    got = _mirrors.get(id(state))
    if got is not None and got.state is state and got.started is not None:
        with contextlib.suppress(Exception):  # a failed start: start another below
            await asyncio.shield(got.started)
        if got.running:
            return got
    m = GraphMirror(state)
    _mirrors[id(state)] = m
    m.started = asyncio.ensure_future(m.start())
    await m.started
    return m


async def stop_all() -> None:
    for m in list(_mirrors.values()):
        await m.stop()
    _mirrors.clear()


async def start_for(client: Client) -> None:
    """Worker start hook: the mirror loads in the background from the start, so the first
    query finds it (nearly) current instead of starting it."""
    await mirror(await client.bucket(GRAPH_BUCKET))


async def stop_for(client: Client) -> None:
    await stop_all()
