"""diagnostics' memory checks as upstream's diagnostics.ts has them, on real workers (memory
workers serve mem::migrate, the lifecycle worker serves diagnostics): a memory still current
though another supersedes it (fail; heal marks it superseded, audited), one superseded by a
memory that is gone (fail; heal clears the link) and latest memories without a project
(pass, warn up to 10, fail above; heal runs infer-memory-projects)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from engine import Client
from functions.kernel.records import AuditEntry, Memory, Session
from functions.kernel.store import MemoryStore
from tests.fixtures import eventually
from tests.lifecycle._data import put_memory

A = "/agentmemory/"


async def coverage(rest: httpx.AsyncClient) -> dict[str, Any]:
    out = (await rest.post(A + "diagnostics", json={"categories": ["memories"]})).json()
    by_name: dict[str, Any] = {c["name"]: c for c in out["checks"]}
    return by_name


async def test_stale_latest_and_unscoped_memories_are_found_and_healed(
    rest: httpx.AsyncClient, client: Client, spawn: Any, tmp_path: Path
) -> None:
    spawn("workers.lifecycle", env={"HOME": str(tmp_path / "home"),
                                    "AGENTMEMORY_SEARCH": "off"})  # fmt: skip

    async def served() -> bool:
        return (await rest.post(A + "diagnostics", json={"categories": "slots"})).status_code == 200

    await eventually(served, timeout=30, what="diagnostics served")
    store = await MemoryStore(client).open()
    await put_memory(store, Memory(id="mem_old", content="v1", title="Old", project="p"))
    await put_memory(store, Memory(id="mem_new", content="v2", project="p", supersedes="mem_old",
                                   version=2))  # fmt: skip
    await put_memory(store, Memory(id="mem_hid", content="v", project="p",
                                   superseded_by="mem_gone"))  # fmt: skip
    checks = await coverage(rest)
    assert checks["dangling-supersededBy:mem_hid"]["status"] == "fail"
    stale = checks["memory-stale-latest:mem_old"]
    assert (stale["status"], stale["fixable"]) == ("fail", True)
    assert "mem_new" in stale["message"]
    assert checks["memory-project-coverage"]["status"] == "pass"
    assert "memories-ok" not in checks

    await store.sessions.put("sess-u", Session(id="sess-u", project="p"))
    for i in range(11):
        await put_memory(store, Memory(id=f"mem_u{i}", content=f"u{i}", source_ids=["sess-u"]))
    unscoped = (await coverage(rest))["memory-project-coverage"]
    assert (unscoped["status"], unscoped["fixable"]) == ("fail", True)
    assert unscoped["message"].startswith(
        "11 of 13 latest memories have no project scope"
    )  # mem_hid: superseded

    dry = (await rest.post(A + "diagnostics/heal", json={"categories": ["memories"],
                                                        "dryRun": True})).json()  # fmt: skip
    assert dry["fixed"] == 3
    old = await store.get(store.memories, "mem_old", Memory)
    assert old is not None and old.superseded_by is None  # a dry run changes nothing

    healed = (await rest.post(A + "diagnostics/heal", json={"categories": ["memories"]})).json()
    assert healed["success"] is True and healed["fixed"] == 3, healed
    hid = await store.get(store.memories, "mem_hid", Memory)
    assert hid is not None and hid.superseded_by is None  # its dangling link cleared
    old = await store.get(store.memories, "mem_old", Memory)
    assert old is not None and old.superseded_by == "mem_new"
    scoped = await store.get(store.memories, "mem_u3", Memory)
    assert scoped is not None and scoped.project == "p"
    audit = await store.load_all(store.audit_log, AuditEntry)
    assert any(e.action == "heal" and e.target_ids == ["mem_old"] for e in audit)
    assert any(e.action == "heal" and e.target_ids == ["mem_hid"] for e in audit)
    after = await coverage(rest)
    assert "memory-stale-latest:mem_old" not in after and "memories-ok" in after
    assert after["memory-project-coverage"]["status"] == "pass"

    for i in range(2):  # no session to infer a project from
        await put_memory(store, Memory(id=f"mem_lost{i}", content=f"lost {i}"))
    warn = (await coverage(rest))["memory-project-coverage"]
    assert warn["status"] == "warn" and warn["message"].startswith("2 of 15 latest")
