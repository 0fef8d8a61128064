"""One coding agent working a project's actions through its own host's REST, for the
partition bench: `python ops/bench/lease_agent.py URL SECRET AGENT PROJECT SECONDS`.

Loop: `next` -> `leases/acquire` (TTL `--ttl-ms`) -> work `--work` seconds, renewing every
second (a renewal that fails does not stop the work: a holder cut off from the others keeps
going, as an agent would) -> `leases/release` with a result. Prints one JSON line per
outcome: acquired, done (the release was accepted), refused (its late completion was not),
error; and a summary line at the end."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter

import httpx


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("secret")
    ap.add_argument("agent")
    ap.add_argument("project")
    ap.add_argument("seconds", type=float)
    ap.add_argument("--ttl-ms", type=int, default=3000)
    ap.add_argument("--work", type=float, default=1.5)
    a = ap.parse_args()
    http = httpx.Client(
        base_url=a.url, headers={"Authorization": f"Bearer {a.secret}"}, timeout=2.0
    )
    counts: Counter[str] = Counter()

    def say(kind: str, **what: object) -> None:
        counts[kind] += 1
        print(json.dumps({"t": round(time.time(), 3), "agent": a.agent, "kind": kind, **what}),
              flush=True)  # fmt: skip

    end = time.monotonic() + a.seconds
    while time.monotonic() < end:
        try:
            nxt = http.get("/agentmemory/next", params={"project": a.project, "agentId": a.agent})
            suggestion = nxt.json().get("suggestion") if nxt.status_code == 200 else None
            if not suggestion:
                time.sleep(0.2)
                continue
            aid = suggestion["actionId"]
            got = http.post(
                "/agentmemory/leases/acquire",
                json={"actionId": aid, "agentId": a.agent, "ttlMs": a.ttl_ms},
            )
            if got.status_code != 200 or not got.json().get("success"):
                time.sleep(0.05)
                continue
            lease = got.json()["lease"]
            say("acquired", action=aid, lease=lease["id"], expires=lease["expiresAt"])
            started = time.monotonic()
            while time.monotonic() - started < a.work:
                time.sleep(min(1.0, a.work))
                try:
                    http.post("/agentmemory/leases/renew",
                              json={"actionId": aid, "agentId": a.agent, "ttlMs": a.ttl_ms})  # fmt: skip
                except httpx.HTTPError:
                    pass  # cut off: keep working
            while time.monotonic() < end + 60:  # its result is worth sending until it lands
                sent = round(time.time(), 3)
                try:
                    rel = http.post(
                        "/agentmemory/leases/release",
                        json={"actionId": aid, "agentId": a.agent, "result": f"by {a.agent}"},
                    )
                except httpx.HTTPError:
                    time.sleep(0.5)
                    continue
                if rel.status_code >= 500:
                    time.sleep(0.5)
                    continue
                ok = rel.status_code == 200 and rel.json().get("success")
                say("done" if ok else "refused", action=aid, lease=lease["id"], sent=sent,
                    status=rel.status_code, error=rel.json().get("error", ""))  # fmt: skip
                break
        except (httpx.HTTPError, ValueError) as exc:
            say("error", error=type(exc).__name__)
            time.sleep(0.3)
    print(json.dumps({"agent": a.agent, "summary": dict(counts)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
