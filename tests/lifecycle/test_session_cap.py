"""Per-session observation cap: the lowest-value oldest observations of a session over the
cap go through auto-forget's audited removal."""

from __future__ import annotations

from engine import Client
from functions.kernel.records import AuditEntry, Session
from functions.kernel.store import MemoryStore
from functions.lifecycle.lifecycle_service import LifecycleService
from functions.lifecycle.settings import ForgetConfig, LifecycleConfig
from functions.lifecycle.wire import AutoForgetIn
from tests.fixtures import wire
from tests.lifecycle._data import at, obs, put_obs


async def test_sessions_over_the_cap_lose_their_lowest_value_oldest_observations(
    store: MemoryStore, client: Client
) -> None:
    svc = wire(LifecycleService(LifecycleConfig(forget=ForgetConfig(max_obs_per_session=10))))
    await svc.start(client)
    now = at(days=1)
    # "counted": its stored count announces it is over the cap; "imported": no count kept
    await store.sessions.put("counted", Session(id="counted", project="proj", observation_count=14))
    counted = [obs("counted", n, importance=5, when=at(minutes=n)) for n in range(12)]
    counted[11].importance = 2  # the newest, but the least valuable: goes first
    counted.append(obs("counted", 50, type="decision", importance=8, when=at(minutes=-5)))
    imported = [obs("imported", n, importance=6, when=at(minutes=n)) for n in range(11)]
    small = [obs("small", n, importance=1, when=at(minutes=n)) for n in range(10)]
    await put_obs(store, *counted, *imported, *small)

    preview = await svc.auto_forget(AutoForgetIn(now=now.isoformat(), dry_run=True))
    expected = {counted[11].id, counted[0].id, counted[1].id, imported[0].id}
    assert preview["removed"] == {"session-cap": 4}
    assert set(preview["ids"]["session-cap"]) == expected
    assert len(await store.load_observations()) == 34

    out = await svc.auto_forget(AutoForgetIn(now=now.isoformat()))
    assert out["removed"] == {"session-cap": 4}
    left = {o.id for o in await store.load_observations()}
    assert not left & expected and len(left) == 30
    assert counted[12].id in left  # the old decision outranks newer routine observations
    audit = await store.load_all(store.audit_log, AuditEntry)
    capped = {i for e in audit if e.reason == "auto-forget: session-cap" for i in e.target_ids}
    assert capped == expected

    again = await svc.auto_forget(AutoForgetIn(now=now.isoformat()))
    assert again["removed"] == {}
    await svc.stop(client)
