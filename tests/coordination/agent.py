"""One coding agent working a project's actions over REST, as a separate process:
`python -m tests.coordination.agent URL SECRET AGENT PROJECT [--ttl-ms N] [--hold]`.

Loop: `next` → `leases/acquire` → `leases/release` with a result (marks it done), printing
`DONE <actionId>` after each release the server accepted. It exits once every action of the
project is done. With `--hold` it stops after its first acquisition, prints `HOLDING
<actionId> <expiresAt>` and waits to be killed: a holder that died."""

from __future__ import annotations

import argparse
import sys
import time

import httpx


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("secret")
    ap.add_argument("agent")
    ap.add_argument("project")
    ap.add_argument("--ttl-ms", type=int, default=10_000)
    ap.add_argument("--hold", action="store_true")
    a = ap.parse_args()
    http = httpx.Client(base_url=a.url, headers={"Authorization": f"Bearer {a.secret}"}, timeout=30)
    print("READY", flush=True)
    idle = 0
    while True:
        nxt = http.get("/agentmemory/next", params={"project": a.project, "agentId": a.agent})
        nxt.raise_for_status()
        suggestion = nxt.json()["suggestion"]
        if suggestion is None:
            listed = http.get(
                "/agentmemory/actions", params={"project": a.project, "limit": 1000}
            ).json()["actions"]
            if listed and all(x["status"] == "done" for x in listed):
                return 0
            idle += 1
            time.sleep(min(0.2, 0.02 * idle))
            continue
        idle = 0
        action_id = suggestion["actionId"]
        got = http.post(
            "/agentmemory/leases/acquire",
            json={"actionId": action_id, "agentId": a.agent, "ttlMs": a.ttl_ms},
        )
        body = got.json()
        if got.status_code != 200 or not body.get("success"):
            continue  # another agent holds it, or it is done: ask again
        if a.hold:
            print(f"HOLDING {action_id} {body['lease']['expiresAt']}", flush=True)
            while True:
                time.sleep(3600)
        rel = http.post(
            "/agentmemory/leases/release",
            json={"actionId": action_id, "agentId": a.agent, "result": f"done by {a.agent}"},
        )
        if rel.status_code == 200 and rel.json().get("success"):
            print(f"DONE {action_id}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
