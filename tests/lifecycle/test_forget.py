"""Auto-forget: TTL, contradictions and low-value observations; dry run; audit."""

from __future__ import annotations

from functions.kernel.clock import iso
from functions.kernel.records import AuditEntry, Memory
from functions.kernel.store import MemoryStore
from functions.lifecycle.lifecycle_service import LifecycleService
from functions.lifecycle.wire import AutoForgetIn
from tests.lifecycle._data import T0, at, obs, put_memory, put_obs


def mem(mid: str, **kw: object) -> Memory:
    base: dict[str, object] = {
        "id": mid,
        "content": mid,
        "project": "proj",
        "created_at": iso(T0),
        "updated_at": iso(T0),
        "strength_at": iso(at(days=9)),
    }
    base.update(kw)
    return Memory(**base)  # type: ignore[arg-type]


async def test_ttl_and_contradiction_forgetting_remove_exactly_what_they_should(
    store: MemoryStore, lifecycle: LifecycleService
) -> None:
    now = at(days=10)
    await put_memory(store, mem("ttl-expired", ttl_days=5))
    await put_memory(store, mem("ttl-alive", ttl_days=30))
    await put_memory(store, mem("ttl-pinned", ttl_days=5, pinned=True))
    await put_memory(store, mem("db-old", content="we use postgres", concepts=["database"]))
    await put_memory(
        store,
        mem(
            "db-new",
            content="we moved to sqlite",
            concepts=["Database"],
            created_at=iso(at(days=2)),
        ),
    )
    await put_memory(store, mem("other-concept", concepts=["database", "cache"]))
    await put_obs(
        store,
        obs("s", 1, type="file_read", importance=3, when=at(days=-40)),
        obs("s", 2, type="file_read", importance=3, when=at(days=-1)),
        obs("s", 3, type="error", importance=7, when=at(days=-40)),
    )
    old_read, _, _ = (o.id for o in [obs("s", 1), obs("s", 2), obs("s", 3)])

    preview = await lifecycle.auto_forget(AutoForgetIn(now=now.isoformat(), dry_run=True))
    assert preview["removed"] == {"ttl": 1, "contradiction": 1, "low-value": 1}
    assert preview["ids"] == {
        "ttl": ["ttl-expired"],
        "contradiction": ["db-old"],
        "low-value": [old_read],
    }
    assert len(await store.load_all(store.memories, Memory)) == 6  # a dry run removes nothing

    out = await lifecycle.auto_forget(AutoForgetIn(now=now.isoformat()))
    assert out["removed"] == preview["removed"]
    left = sorted(m.id for m in await store.load_all(store.memories, Memory))
    assert left == ["db-new", "other-concept", "ttl-alive", "ttl-pinned"]
    assert len(await store.load_observations()) == 2

    audit = await store.load_all(store.audit_log, AuditEntry)
    removed = {i for e in audit if e.action == "auto-forget" for i in e.target_ids}
    assert removed == {"ttl-expired", "db-old", old_read}
    reasons = {e.reason for e in audit}
    assert {"auto-forget: ttl", "auto-forget: contradiction", "auto-forget: low-value"} <= reasons

    again = await lifecycle.auto_forget(AutoForgetIn(now=now.isoformat()))
    assert again["removed"] == {}
