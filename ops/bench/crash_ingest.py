"""Crash test of the observe write path.

8 concurrent clients send N observations (distinct eventIds) to `mem::observe`, resending
whatever was not acknowledged, as a hook spool would. With `--no-event-ids` they send what
the upstream hooks send instead: prompts without an eventId, all with one timestamp, so
only the fallback dedup key tells a resend from a new event. During the run the memory worker is
SIGKILLed (and restarted), then nats-server is SIGKILLed (and restarted on the same store
and port). Afterwards every acknowledged observation must be stored, exactly once.

    python ops/bench/crash_ingest.py [--n 5000] [--quick] [--no-event-ids]

Last line: JSON with `acked_lost` and `duplicates` (both must be 0). An event acknowledged
under the id of another event (merged by the dedup key) counts as lost.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from engine import Client, FunctionError, connect  # noqa: E402
from engine.server import NatsServer  # noqa: E402
from engine.settings import environ  # noqa: E402
from functions.kernel.observation_records import ObservationRecords  # noqa: E402
from functions.kernel.records import EVENTS_STREAM, Observation  # noqa: E402
from functions.kernel.store import events_stream  # noqa: E402
from functions.memory.wire import ObserveOut  # noqa: E402
from ops.bench.harness import free_port, spawn_python  # noqa: E402

CLIENTS = 8
IN_FLIGHT = 4  # per client


class WorkerProc:
    def __init__(self, url: str, inbox: Path) -> None:
        self.url, self.inbox = url, inbox
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = environ(
            ENGINE_NATS_URL=self.url,
            PYTHONPATH=str(ROOT),
            AGENTMEMORY_INBOX_DIR=str(self.inbox),
            AGENTMEMORY_SEARCH="off",
            ENGINE_LOG_LEVEL="WARNING",
        )
        self.proc = spawn_python(
            ["-m", "workers.memory"], env=env, ready_mark="ENGINE_WORKER_READY"
        )

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()


_PROMPT = re.compile(r"crash prompt (\d+) ")


def body(i: int, event_ids: bool = True) -> dict[str, Any]:
    if not event_ids:
        return {
            "hookType": "prompt_submit",
            "sessionId": f"crash-{i % 16}",
            "project": "crash",
            "cwd": "/work/crash",
            "timestamp": "2026-11-29T10:00:00.000Z",
            "data": {"prompt": f"crash prompt {i} : run the tests again"},
        }
    return {
        "hookType": "post_tool_use",
        "sessionId": f"crash-{i % 16}",
        "project": "crash",
        "cwd": "/work/crash",
        "timestamp": "2026-11-29T10:00:00.000Z",
        "eventId": f"toolu_crash_{i:06d}",
        "data": {
            "tool_name": "Bash",
            "tool_input": {"command": f"pytest -q tests/test_{i}.py"},
            "tool_output": f"{i} passed in 0.1s\n" * 20,
        },
    }


async def client_loop(
    url: str, ids: list[int], acked: dict[int, str], stats: Counter[str], event_ids: bool
) -> None:
    nc = await connect(url, name="crash-client")
    c = Client(nc)
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in ids:
        queue.put_nowait(i)

    async def one() -> None:
        while True:
            try:
                i = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            attempt = 0
            while True:
                attempt += 1
                try:
                    out = await c.call(
                        "mem::observe", body(i, event_ids), response=ObserveOut, timeout=2.0
                    )
                except FunctionError as err:
                    stats["resends"] += 1
                    stats[f"err_{err.code}"] += 1
                    await asyncio.sleep(min(1.0, 0.05 * attempt))
                    continue
                acked[i] = out.observation_id
                stats[out.status] += 1
                break

    await asyncio.gather(*(one() for _ in range(IN_FLIGHT)))
    await nc.close()


async def chaos(
    srv: NatsServer, worker: WorkerProc, acked: dict[int, str], n: int, log: list[str]
) -> None:
    while len(acked) < n * 0.3:
        await asyncio.sleep(0.01)
    worker.kill()
    log.append(f"SIGKILL worker at {len(acked)} acked")
    await asyncio.sleep(0.3)
    await asyncio.to_thread(worker.start)
    log.append("worker restarted")
    while len(acked) < n * 0.6:
        await asyncio.sleep(0.01)
    srv.kill()
    log.append(f"SIGKILL nats-server at {len(acked)} acked")
    await asyncio.sleep(0.5)
    await asyncio.to_thread(srv.start)
    log.append("nats-server restarted")


def event_of(o: Observation) -> str:
    """Which sent event a stored observation is: its eventId, else the prompt's number."""
    if o.event_id:
        return o.event_id
    m = _PROMPT.search(o.raw or o.narrative or o.title)
    return m.group(1) if m else o.id


async def verify(url: str, inbox: Path, acked: dict[int, str]) -> dict[str, Any]:
    nc = await connect(url, name="crash-verify")
    c = Client(nc)
    js = nc.jetstream()
    deadline = time.monotonic() + 60
    while any((inbox / "pending").glob("*.json")) and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    # Every record is one message on MEM_EVENTS: a duplicate would be a second message of
    # one event. The acknowledged ones are then read by id, through the index.
    records = await ObservationRecords(c, events_stream(c)).open()
    stored: list[Observation] = [o async for o in records.scan()]
    found = await records.get_many(set(acked.values()))
    by_event = Counter(event_of(o) for o in stored)
    present = set(found)
    ev = await js.stream_info(EVENTS_STREAM)
    await nc.close()
    return {
        "stored": len(stored),
        "distinct_events_stored": len(by_event),
        "duplicates": sum(v - 1 for v in by_event.values()),
        "acked_lost": sum(1 for oid in acked.values() if oid not in present)
        + (len(acked) - len(set(acked.values()))),
        "mem_events": ev.state.messages,
        "inbox_left": sum(1 for _ in (inbox / "pending").glob("*.json")),
        "dead_letters": sum(1 for _ in (inbox / "dead").glob("*.json"))
        if (inbox / "dead").exists()
        else 0,
    }


async def run(n: int, event_ids: bool = True) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="crash-ingest-"))
    srv = NatsServer(store_dir=tmp / "js", port=free_port()).start()
    worker = WorkerProc(srv.url, tmp / "inbox")
    try:
        await asyncio.to_thread(worker.start)
        acked: dict[int, str] = {}
        stats: Counter[str] = Counter()
        log: list[str] = []
        ids = list(range(n))
        random.Random(7).shuffle(ids)
        started = time.perf_counter()
        chaos_task = asyncio.create_task(chaos(srv, worker, acked, n, log))
        await asyncio.gather(
            *(
                client_loop(srv.url, ids[k::CLIENTS], acked, stats, event_ids)
                for k in range(CLIENTS)
            )
        )
        await chaos_task
        elapsed = time.perf_counter() - started
        result = await verify(srv.url, tmp / "inbox", acked)
        for line in log:
            print(line, file=sys.stderr)
        return {
            "bench": "crash_ingest",
            "event_ids": event_ids,
            "sent": n,
            "acked": len(acked),
            **result,
            "accepted": stats["accepted"],
            "duplicate_replies": stats["duplicate"],
            "retrying_replies": stats["retrying"],
            "resends": stats["resends"],
            "worker_kills": 1,
            "server_kills": 1,
            "seconds": round(elapsed, 2),
        }
    finally:
        worker.stop()
        srv.kill()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--quick", action="store_true", help="1,000 observations")
    ap.add_argument(
        "--no-event-ids",
        action="store_true",
        help="send prompts without eventId sharing one timestamp (as the upstream hooks do)",
    )
    args = ap.parse_args()
    n = 1000 if args.quick else args.n
    out = asyncio.run(run(n, event_ids=not args.no_event_ids))
    print(json.dumps(out))
    ok = out["acked_lost"] == 0 and out["duplicates"] == 0 and out["acked"] == n
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
