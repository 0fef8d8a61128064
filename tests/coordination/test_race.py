"""The race: 16 agent processes over both memory replicas (the engine as `make run` lays it
out: two memory workers sharing :3111, triggers for state and cron) race for leases on 100
actions and complete them. Every action is done exactly once, no two agents ever hold one
action at once (read from the audit log), and the lease of a holder killed with SIGKILL
passes to another agent once its TTL ran out."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx
import pytest

from engine import Client
from tests.fixtures import eventually

ROOT = Path(__file__).resolve().parents[2]
SECRET = "race-secret"
AGENTS = 16
ACTIONS = 100
HOLD_TTL_MS = 2000
CONFIG = f"""
env:
  AGENTMEMORY_SECRET: {SECRET}
  ENGINE_LOG_LEVEL: WARNING
workers:
  - name: triggers
    command: ["{{python}}", "-m", "workers.trigger_plugins", "state", "cron"]
  - name: memory
    module: workers.memory
    replicas: 2
    depends_on: [triggers]
    env:
      AGENTMEMORY_SEARCH: "off"
      ENGINE_TRIGGERS: http
"""


class Agent:
    def __init__(self, url: str, name: str, *extra: str) -> None:
        self.name = name
        self.lines: list[str] = []
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.coordination.agent", url, SECRET, name, "race", *extra],
            cwd=ROOT,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self.lines.append(raw.decode().strip())

    def done(self) -> list[str]:
        return [ln.split()[1] for ln in self.lines if ln.startswith("DONE ")]

    def holding(self) -> list[str] | None:
        return next((ln.split()[1:] for ln in self.lines if ln.startswith("HOLDING ")), None)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def ms(iso: str) -> int:
    from functions.kernel.clock import ms_of

    return ms_of(iso)


def check_exclusive(entries: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Replay each action's lease history from the audit log in the order the action record
    committed it (`actionRevision`): an acquisition only when nobody holds the action, a
    release or expiry only of the holder's lease, an acquisition after an expiry only once
    that lease's last expiry time passed. Returns the history per action; raises
    AssertionError at the first violation."""
    expiry: dict[str, int] = {}
    events: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in entries:
        d = e.get("details") or {}
        if e["action"] in ("lease-acquire", "lease-renew") and d.get("expiresAt"):
            expiry[d["leaseId"]] = max(expiry.get(d["leaseId"], 0), ms(d["expiresAt"]))
        if e["action"] in ("lease-acquire", "lease-release", "lease-expire"):
            events[e["targetIds"][0]].append(e)
    order = {"lease-expire": 0, "lease-release": 0, "lease-acquire": 1}
    for action_id, evs in events.items():
        evs.sort(key=lambda e: (e["details"]["actionRevision"], order[e["action"]]))
        holder: str | None = None
        last_expired: str | None = None
        for e in evs:
            d = e["details"]
            if e["action"] == "lease-acquire":
                assert holder is None, f"{action_id}: {d['agentId']} acquired while {holder} held"
                if last_expired is not None:
                    assert ms(d["committedAt"]) >= expiry[last_expired], (
                        f"{action_id}: taken over before lease {last_expired} expired"
                    )
                holder, last_expired = d["leaseId"], None
            else:
                assert holder == d["leaseId"], f"{action_id}: {e['action']} of a lease not held"
                holder = None
                last_expired = d["leaseId"] if e["action"] == "lease-expire" else None
    return events


@pytest.mark.unit
def test_the_checker_catches_two_holders_and_an_early_takeover() -> None:
    def acq(rev: int, lease: str, at: str = "2026-01-01T00:00:05.000Z") -> dict[str, Any]:
        return {
            "action": "lease-acquire",
            "targetIds": ["a"],
            "details": {
                "actionRevision": rev,
                "leaseId": lease,
                "agentId": lease,
                "committedAt": at,
                "expiresAt": "2026-01-01T00:00:10.000Z",
            },
        }

    def end(kind: str, rev: int, lease: str) -> dict[str, Any]:
        return {
            "action": kind,
            "targetIds": ["a"],
            "details": {"actionRevision": rev, "leaseId": lease},
        }

    check_exclusive([acq(1, "l1"), end("lease-release", 2, "l1"), acq(3, "l2")])
    with pytest.raises(AssertionError, match="acquired while"):
        check_exclusive([acq(1, "l1"), acq(2, "l2")])
    with pytest.raises(AssertionError, match="before lease l1 expired"):
        check_exclusive([acq(1, "l1"), end("lease-expire", 2, "l1"), acq(2, "l2")])
    with pytest.raises(AssertionError, match="not held"):
        check_exclusive([acq(1, "l1"), end("lease-release", 2, "l2")])


async def stats(client: Client, service: str) -> list[dict[str, Any]]:
    """Every `$SRV.STATS.<service>` reply (one per worker process)."""
    got: list[dict[str, Any]] = []
    inbox = client.nc.new_inbox()

    async def on(msg: Any) -> None:
        got.append(json.loads(msg.data))

    sub = await client.nc.subscribe(inbox, cb=on)
    await client.nc.publish(f"$SRV.STATS.{service}", b"", reply=inbox)
    await asyncio.sleep(0.5)
    await sub.unsubscribe()
    return got


async def test_sixteen_agents_race_for_a_hundred_actions(engine_factory) -> None:  # type: ignore[no-untyped-def]
    eng = engine_factory(CONFIG).start()
    url = f"http://127.0.0.1:{eng.anchor}"
    headers = {"Authorization": f"Bearer {SECRET}"}
    agents: list[Agent] = []
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as http:

        async def served() -> bool:
            return (await http.get("/agentmemory/frontier")).status_code == 200

        await eventually(served, timeout=30, what="coordination routes")
        ids = []
        for i in range(ACTIONS):
            r = await http.post(
                "/agentmemory/actions",
                json={"title": f"task {i}", "project": "race", "priority": 1 + i % 10},
            )
            assert r.status_code == 201, r.text
            ids.append(r.json()["action"]["id"])
        try:
            victim = Agent(url, "agent-00", "--hold", "--ttl-ms", str(HOLD_TTL_MS))
            agents.append(victim)
            agents += [Agent(url, f"agent-{n:02d}") for n in range(1, AGENTS)]
            held = await eventually(
                lambda: asyncio.sleep(0, victim.holding()), timeout=30, what="the victim's lease"
            )
            victim.proc.send_signal(signal.SIGKILL)  # dies holding it
            victim.proc.wait()
            held_id, held_until = held[0], ms(held[1])

            async def all_done() -> bool:
                r = await http.get(
                    "/agentmemory/actions",
                    params={"project": "race", "status": "done", "limit": 1000},
                )
                return len(r.json()["actions"]) == ACTIONS

            await eventually(all_done, timeout=90, interval=0.25, what="every action done")
            for ag in agents[1:]:
                await eventually(
                    lambda ag=ag: asyncio.sleep(0, ag.proc.poll() is not None),
                    timeout=15,
                    what=f"{ag.name} to finish",
                )
        finally:
            for ag in agents:
                ag.stop()

        # Every action done exactly once, by the agents' own account...
        done = [aid for ag in agents for aid in ag.done()]
        assert sorted(done) == sorted(ids)
        assert held_id not in victim.done()
        workers = {ag.name for ag in agents[1:] if ag.done()}
        assert len(workers) >= 4, workers  # the work was spread, not done by one agent

        # ...and by the audit log: one completing release per action, never two holders.
        entries = (await http.get("/agentmemory/audit", params={"limit": 10_000})).json()["entries"]
        releases = [
            e["targetIds"][0]
            for e in entries
            if e["action"] == "lease-release" and e["details"]["status"] == "done"
        ]
        assert sorted(releases) == sorted(ids)
        history = check_exclusive(entries)
        assert set(history) == set(ids)

        # The killed holder's lease expired (by its TTL) and passed to another agent.
        kinds = [(e["action"], e["details"].get("agentId")) for e in history[held_id]]
        assert kinds[0] == ("lease-acquire", "agent-00")
        assert ("lease-expire", "agent-00") in kinds
        taker = next(e for e in history[held_id][1:] if e["action"] == "lease-acquire")
        assert taker["details"]["agentId"] != "agent-00"
        assert ms(taker["details"]["committedAt"]) >= held_until

    # Both memory replicas served the leases.
    client = await eng.client()
    try:
        replies = await stats(client, "memory")
    finally:
        await client.nc.close()
    served_by = [
        next((ep["num_requests"] for ep in r["endpoints"] if ep["name"] == "mem-lease-acquire"), 0)
        for r in replies
    ]
    assert len(served_by) == 2 and all(n > 0 for n in served_by), served_by
    assert time.time()  # the engine fixture stops the engine
