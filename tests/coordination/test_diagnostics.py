"""diagnostics and diagnostics/heal over the coordination layer, as upstream's
diagnostics.ts has them: real memory workers (which own the coordination buckets and answer
mem::coordination-diagnose) and the real lifecycle worker (which serves diagnostics), state
broken on purpose in the buckets, then found, dry-run healed (nothing changes) and healed
(each fix as upstream's: unblock, expire the lease and hand the action back, expire the
sentinel, discard the sketch, delete the signal)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import msgspec

from engine import Client
from functions.coordination import records as r
from functions.kernel.clock import iso_ms, now_ms
from functions.kernel.ids import kv_key
from tests.coordination.test_actions import make
from tests.coordination.test_gates import status_of
from tests.fixtures import eventually

A = "/agentmemory/"
COORD = ["actions", "leases", "sentinels", "sketches", "signals", "crystals"]


async def break_things(rest: httpx.AsyncClient, client: Client) -> dict[str, str]:
    """One broken record per coordination category; their ids."""
    past, now = iso_ms(now_ms() - 3_600_000), iso_ms(now_ms())
    stuck = await make(rest, "blocked by nothing")
    held = await make(rest, "held by a dead lease")
    actions = await client.bucket(r.ACTIONS_BUCKET)
    for aid, changes in ((stuck["id"], {"status": "blocked"}),
                         (held["id"], {"status": "active", "lease_id": "lse_1",
                                       "assigned_to": "agent-a"})):  # fmt: skip
        cur = await actions.get(kv_key(str(aid)), r.Action)
        assert cur is not None
        await actions.put(kv_key(str(aid)), msgspec.structs.replace(cur, **changes))
    leases = await client.bucket(r.LEASES_BUCKET, marker_ttl=r.MARKER_TTL)
    await leases.put(kv_key(str(held["id"])), r.Lease(
        id="lse_1", action_id=str(held["id"]), agent_id="agent-a", acquired_at=past,
        expires_at=past))  # fmt: skip
    await leases.put("gone", r.Lease(id="lse_2", action_id="act_gone", agent_id="b",
                                     acquired_at=past, expires_at=now))  # fmt: skip
    await (await client.bucket(r.SENTINELS_BUCKET)).put("snl_old", r.Sentinel(
        id="snl_old", name="late", type="custom", created_at=past, expires_at=past,
        linked_action_ids=["act_missing"]))  # fmt: skip
    await (await client.bucket(r.SKETCHES_BUCKET)).put("skt_old", r.Sketch(
        id="skt_old", title="old idea", created_at=past, expires_at=past))  # fmt: skip
    await (await client.bucket(r.SIGNALS_BUCKET)).put("sig_old", r.Signal(
        id="sig_old", from_="a", content="ping", thread_id="t", created_at=past,
        expires_at=past))  # fmt: skip
    await (await client.bucket(r.CRYSTALS_BUCKET)).put("cry_empty", r.Crystal(
        id="cry_empty", narrative=" ", created_at=past))  # fmt: skip
    return {"stuck": str(stuck["id"]), "held": str(held["id"])}


async def test_diagnose_and_heal_the_coordination_layer(
    rest: httpx.AsyncClient, client: Client, spawn: Any, tmp_path: Path
) -> None:
    spawn("workers.lifecycle", env={"HOME": str(tmp_path / "home"),
                                    "AGENTMEMORY_INBOX_DIR": str(tmp_path / "inbox"),
                                    "AGENTMEMORY_SEARCH": "off"})  # fmt: skip

    async def served() -> bool:
        return (await rest.post(A + "diagnostics", json={"categories": "slots"})).status_code == 200

    await eventually(served, timeout=30, what="diagnostics served")
    ids = await break_things(rest, client)

    diag = (await rest.post(A + "diagnostics", json={})).json()
    by_name = {c["name"]: c for c in diag["checks"]}
    expect_fixable = {
        f"blocked-unblockable:{ids['stuck']}", "lease-expired:lse_1", "lease-orphaned:lse_2",
        "sentinel-expired:snl_old", "sketch-expired:skt_old", "signal-expired:sig_old",
    }  # fmt: skip
    assert expect_fixable <= {n for n, c in by_name.items() if c["fixable"]}
    assert by_name[f"active-without-lease:{ids['held']}"]["status"] == "warn"
    assert by_name["sentinel-missing-action:snl_old"]["status"] == "warn"
    assert by_name["crystal-empty:cry_empty"]["status"] == "warn"
    # every category answered: problems or an <x>-ok; the mesh's worker is not running
    assert diag["skipped"] == ["mesh"]
    answered = {c["category"] for c in diag["checks"]}
    assert answered | {"mesh"} == {
        "sessions", "memories", "summaries", "facets", "relations", "slots", "index",
        "profile", "lessons", "actions", "leases", "sentinels", "sketches", "signals",
        "crystals", "mesh", "semantic", "procedural", "insights",
    }  # fmt: skip
    assert diag["summary"]["fixable"] == sum(c["fixable"] for c in diag["checks"])

    dry = (await rest.post(A + "diagnostics/heal", json={"categories": COORD,
                                                        "dryRun": True})).json()  # fmt: skip
    assert dry["dryRun"] is True and dry["fixed"] == len(expect_fixable)
    assert await status_of(rest, ids["stuck"]) == "blocked"  # a dry run changes nothing

    healed = (await rest.post(A + "diagnostics/heal", json={"categories": COORD})).json()
    assert healed["success"] is True and healed["fixed"] == len(expect_fixable), healed
    assert await status_of(rest, ids["stuck"]) == "pending"
    assert await status_of(rest, ids["held"]) == "pending"  # the dead lease handed it back
    sentinels = (await rest.get(A + "sentinels")).json()["sentinels"]
    assert {s["id"]: s["status"] for s in sentinels}["snl_old"] == "expired"
    signals = await client.bucket(r.SIGNALS_BUCKET)
    assert await signals.get("sig_old", r.Signal) is None
    sketches = await client.bucket(r.SKETCHES_BUCKET)
    sketch = await sketches.get("skt_old", r.Sketch)
    assert sketch is not None and sketch.status == "discarded"

    after = (await rest.post(A + "diagnostics", json={"categories": COORD})).json()
    left = {c["name"] for c in after["checks"] if c["status"] != "pass"}
    assert left == {"crystal-empty:cry_empty"}  # a warning, nothing to fix
    assert {f"{c}-ok" for c in COORD if c != "crystals"} <= {c["name"] for c in after["checks"]}
