"""The cluster benches' workload (cluster.py, partition.py): what runs against the
three-host cluster while it is faulted, and what is checked after.

- `Load`: a bounded open-loop load on loopback, 80% `POST /agentmemory/observe` and 20%
  `POST /agentmemory/search`, each client homed on one host's REST port and failing over
  to the next host when its own does not answer (as behind a load balancer). An observe is
  retried until its deadline with the same eventId, as a hook spool would; a search
  succeeds when a 200 comes back within the profile's deadline, retries included. Most
  searches look for the unique word of an observation acknowledged earlier: its absence
  from the hits is a read-your-writes miss.
- `Ticks`: a cron trigger firing every second, each call counted by tick.
- `verify`: once the load stops and the inboxes drain, every acknowledged observation
  looked up (`acked_lost`) and the events counted (`duplicates`).
"""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from engine import Client, Context, Worker
from functions.kernel.observation_records import ObservationRecords
from functions.kernel.records import EVENTS_STREAM, ObservationAdded
from functions.kernel.store import events_stream
from ops.bench.harness import Connection, HttpFailure
from ops.cluster.cluster import Cluster
from ops.cluster.hosts import Host

SECRET = "cluster-bench-secret"
PROJECT = "clusterbench"
EVENT_SUBJECTS = "mem.events.observation.>"
WORDS = (
    "parser cache token refresh migration schema index retry queue worker socket timeout "
    "deploy rollback config secret header cookie session router handler middleware build "
    "compile linker fixture mock assert coverage profile memory leak thread lock deadlock "
    "replica leader follower snapshot stream consumer subject bucket key value revision"
).split()


@dataclass
class Profile:
    rate: float
    """Operations started per second (open loop)."""
    warm: float
    settle: float
    host_down: float
    tail: float
    in_flight: int = 400
    observe_deadline: float = 60.0
    """A hook spool resends for much longer; a minute covers every fault here."""
    search_deadline: float = 5.0
    """What a searching agent waits, retries included."""
    observe_attempt: float = 6.0
    search_attempt: float = 2.5
    """One search attempt: longer than the freshness fence (2 s, which a search waits out
    while the event stream elects a leader), short enough to try another host once."""


def token(i: int) -> str:
    """A word of letters only, unique to observation i (the analyser keeps it whole)."""
    out = ""
    n = i
    for _ in range(6):
        out += chr(ord("a") + n % 26)
        n //= 26
    return "zq" + out


def observe_body(run: str, i: int, rng: random.Random) -> dict[str, Any]:
    words = " ".join(rng.choice(WORDS) for _ in range(12))
    return {
        "hookType": "post_tool_use",
        "sessionId": f"{run}-s{i % 24}",
        "project": PROJECT,
        "cwd": "/work/clusterbench",
        "timestamp": "2026-11-29T10:00:00.000Z",
        "eventId": f"toolu_{run}_{i:07d}",
        "data": {
            "tool_name": "Bash",
            "tool_input": {"command": f"pytest -q tests/test_{token(i)}.py"},
            "tool_output": f"{token(i)} {words}\n" * 4,
        },
    }


@dataclass
class Sample:
    kind: str
    started: float
    done: float
    ok: bool
    attempts: int
    host: int = -1
    """The host that answered (-1: none did)."""


@dataclass
class Load:
    hosts: list[Host]
    profile: Profile
    run: str
    rng: random.Random = field(default_factory=lambda: random.Random(18))
    samples: list[Sample] = field(default_factory=list)
    acked: dict[int, str] = field(default_factory=dict)
    """Observation index -> the id its acknowledgement named."""
    searchable: list[int] = field(default_factory=list)
    """Observations acknowledged as stored (201/200), whose word a search must find."""
    stats: Counter[str] = field(default_factory=Counter)
    _pools: dict[int, list[Connection]] = field(default_factory=dict)
    _next: int = 0

    def _take(self, host: Host) -> Connection:
        pool = self._pools.setdefault(host.index, [])
        return pool.pop() if pool else Connection(host.address, host.port(0), SECRET)

    def _give(self, host: Host, conn: Connection) -> None:
        self._pools.setdefault(host.index, []).append(conn)

    async def _attempt(self, host: Host, path: str, body: Any, timeout: float) -> tuple[int, bytes]:
        conn = self._take(host)
        try:
            out = await asyncio.wait_for(conn.request("POST", path, body), timeout)
        except (HttpFailure, TimeoutError):
            conn.close()
            raise
        self._give(host, conn)
        return out

    async def _call(
        self, home: int, path: str, body: Any, deadline: float, attempt_s: float,
        ok: tuple[int, ...],
    ) -> tuple[int, bytes, int, int] | None:  # fmt: skip
        """Try `home`, then the other hosts in turn, until a status in `ok` or the
        deadline: (status, body, attempts, host that answered). None when the deadline
        passed."""
        attempt = 0
        while time.monotonic() < deadline:
            host = self.hosts[(home + attempt) % len(self.hosts)]
            attempt += 1
            try:
                left = deadline - time.monotonic()
                status, data = await self._attempt(host, path, body, min(attempt_s, left))
            except (HttpFailure, TimeoutError) as exc:
                self.stats[f"{path.rsplit('/', 1)[1]}_{type(exc).__name__}"] += 1
                await asyncio.sleep(min(0.05 * attempt, 0.5))
                continue
            if status in ok:
                return status, data, attempt, host.index
            self.stats[f"{path.rsplit('/', 1)[1]}_{status}"] += 1
            if 400 <= status < 500 and status not in (408, 429):
                raise RuntimeError(f"{path} refused with {status}: {data[:300]!r}")
            await asyncio.sleep(min(0.05 * attempt, 0.5))
        return None

    async def observe(self, i: int) -> None:
        t0 = time.monotonic()
        body = observe_body(self.run, i, self.rng)
        got = await self._call(i % len(self.hosts), "/agentmemory/observe", body,
                               t0 + self.profile.observe_deadline, self.profile.observe_attempt,
                               (200, 201, 202))  # fmt: skip
        done = time.monotonic()
        if got is None:
            self.stats["observe_gave_up"] += 1
            self.samples.append(Sample("observe", t0, done, False, 0))
            return
        status, data, attempts, host = got
        reply = msgspec.json.decode(data)
        self.acked[i] = reply["observationId"]
        self.stats[f"observe_{reply['status']}"] += 1
        if status in (200, 201):
            self.searchable.append(i)
        self.samples.append(Sample("observe", t0, done, True, attempts, host))

    async def search(self, k: int) -> None:
        t0 = time.monotonic()
        target = self.rng.choice(self.searchable) if self.searchable else None
        query = token(target) if target is not None else " ".join(self.rng.sample(WORDS, 2))
        body = {"query": query, "limit": 10, "project": PROJECT, "format": "compact"}
        got = await self._call(k % len(self.hosts), "/agentmemory/search", body,
                               t0 + self.profile.search_deadline, self.profile.search_attempt,
                               (200,))  # fmt: skip
        done = time.monotonic()
        self.samples.append(
            Sample("search", t0, done, got is not None, got[2] if got else 0,
                   got[3] if got else -1)
        )  # fmt: skip
        if got is None:
            self.stats["search_failed"] += 1
            return
        reply = msgspec.json.decode(got[1])
        stale = bool(reply.get("stale"))
        self.stats["search_stale"] += stale  # answered by an index out of reach of the stream
        if target is not None:
            ids = {h.get("id") for h in reply.get("results", [])}
            self.stats["search_checked"] += 1
            if self.acked[target] not in ids:
                self.stats["search_misses"] += 1
                self.stats["search_misses_stale"] += stale

    async def drive(self, stop: asyncio.Event) -> None:
        """Start `rate` operations a second, at most `in_flight` at once, until `stop`."""
        interval = 1.0 / self.profile.rate
        tasks: set[asyncio.Task[None]] = set()
        next_at = time.monotonic()
        n_obs = n_search = 0
        while not stop.is_set():
            if len(tasks) < self.profile.in_flight:
                if self.rng.random() < 0.8:
                    t = asyncio.create_task(self.observe(n_obs))
                    n_obs += 1
                else:
                    t = asyncio.create_task(self.search(n_search))
                    n_search += 1
                tasks.add(t)
                t.add_done_callback(tasks.discard)
            else:
                self.stats["throttled"] += 1
            next_at += interval
            delay = next_at - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            else:
                next_at = time.monotonic()
        self.stats["observe_sent"] = n_obs
        self.stats["search_sent"] = n_search
        if tasks:
            await asyncio.gather(*tasks)
        for pool in self._pools.values():
            for c in pool:
                c.close()


@dataclass
class Ticks:
    """Calls of a cron trigger firing every second, by tick (its Idempotency-Key): cron
    fires once per tick across the hosts, through the faults."""

    calls: Counter[str] = field(default_factory=Counter)
    times: list[float] = field(default_factory=list)

    async def start(self, client: Client) -> Worker:
        worker = Worker("clusterbench-ticks")

        @worker.function("clusterbench::tick")
        async def tick(req: Any, ctx: Context) -> None:
            self.calls[ctx.headers.get("Idempotency-Key", "?")] += 1
            self.times.append(time.monotonic())

        worker.trigger("cron", "clusterbench::tick", schedule="@every 1s")
        await worker.start(client.nc, client)
        return worker

    def figures(self, start: float, end: float, healed: float) -> dict[str, Any]:
        """`healed`: when the last fault had recovered."""
        inside = sorted(t for t in self.times if start <= t <= end)
        return {
            "cron_ticks": len(self.calls),
            "cron_ticks_after_faults": sum(1 for t in inside if t >= healed),
            "cron_after_faults_s": round(end - healed, 1),
            # A tick whose call ran but whose acknowledgement died with its host comes again
            # with the same Idempotency-Key (at least once): the function can tell.
            "cron_duplicates": sum(n - 1 for n in self.calls.values()),
            "cron_longest_gap_s": round(
                max((b - a for a, b in itertools.pairwise([start, *inside, end])), default=0), 2
            ),
        }


def longest_gap(samples: list[Sample], kind: str, start: float, end: float) -> float:
    """Longest time in [start, end] with no successful completion of `kind`."""
    times = sorted(s.done for s in samples if s.kind == kind and s.ok and start <= s.done <= end)
    points = [start, *times, end]
    return max(b - a for a, b in itertools.pairwise(points)) if times else end - start


async def wait_until(probe: Any, timeout: float, what: str) -> float:
    t0 = time.monotonic()
    while not await asyncio.to_thread(probe):
        if time.monotonic() - t0 > timeout:
            raise RuntimeError(f"{what} not reached in {timeout:.0f}s")
        await asyncio.sleep(0.05)
    return time.monotonic() - t0


def rest_answers(host: Host) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(f"{host.rest_url}/agentmemory/livez", timeout=1) as r:
            return bool(r.status == 200)
    except OSError:
        return False


async def verify(cluster: Cluster, client: Client, load: Load) -> dict[str, Any]:
    def pending() -> int:
        return sum(1 for h in cluster.hosts for _ in h.data_dir.rglob("inbox/pending/*.json"))

    deadline = time.monotonic() + 90
    while pending() and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    ids = list(load.acked.values())
    records = await ObservationRecords(client, events_stream(client)).open()
    present = set(await records.get_many(ids))  # by id, through the index
    # Records are per project, not per observation: count them by the observation they carry
    # (each record is one message; a duplicate would be a second).
    per_obs: Counter[str] = Counter()
    async for m in client.stream(EVENTS_STREAM).read(subject=EVENT_SUBJECTS):
        per_obs[msgspec.json.decode(m.data, type=ObservationAdded).observation.id] += 1
    stored_ids = set(load.acked.values())
    return {
        "acked": len(load.acked),
        "acked_lost": sum(1 for oid in ids if oid not in present) + (len(ids) - len(stored_ids)),
        # of those: not in the stream at all, or in it but not found by id (the index)
        "acked_lost_from_stream": sum(1 for oid in stored_ids if oid not in per_obs),
        "acked_unfound_by_id": sum(
            1 for oid in stored_ids if oid in per_obs and oid not in present
        ),
        "duplicates": sum(n - 1 for n in per_obs.values() if n > 1),
        "events_published": len(per_obs),
        "observations_stored": sum(per_obs.values()),
        "inbox_left": pending(),
    }


def write_samples(
    path: Path, samples: list[Sample], log: list[dict[str, Any]], t0: float, ticks: list[float]
) -> None:
    """Every operation, fault and cron call as JSON lines, times in seconds from the load's
    start."""
    import json

    with path.open("w") as f:
        for t in ticks:
            f.write(json.dumps({"tick": round(t - t0, 3)}) + "\n")
        for fault in log:
            f.write(json.dumps({"fault": fault["fault"], "target": fault["target"],
                                "at": round(fault["at"] - t0, 3),
                                "recovery_s": fault["recovery_s"]}) + "\n")  # fmt: skip
        for x in samples:
            f.write(json.dumps({"kind": x.kind, "at": round(x.started - t0, 3),
                                "ms": round(1000 * (x.done - x.started), 1), "ok": x.ok,
                                "attempts": x.attempts, "host": x.host}) + "\n")  # fmt: skip
