"""The graph and profile feeds skip a record held at write and fold it when it is
released; a graph query leaves out what only held records support."""

from __future__ import annotations

from typing import Any

import msgspec

from engine import Client
from functions.graph.wire import GraphQueryIn
from functions.kernel.records import (
    PROFILES_BUCKET,
    ProjectProfile,
    Trust,
    profile_key,
)
from functions.kernel.store import MemoryStore
from functions.lifecycle.lifecycle_service import LifecycleService
from functions.lifecycle.settings import LifecycleConfig
from functions.lifecycle.wire import DigestIn
from functions.quarantine.quarantine_service import QuarantineService
from functions.quarantine.wire import DecideIn
from tests.lifecycle._data import at, obs, put_obs

HELD = Trust(held=True, reasons=["exfiltration"], source="web")


class Owner:
    def __init__(self, store: MemoryStore) -> None:
        self.store = store


def names(result: Any) -> set[str]:
    return {n["name"] for n in msgspec.to_builtins(result)["nodes"]}


async def concepts(client: Client) -> set[str]:
    state = await client.bucket(PROFILES_BUCKET)
    p = await state.get(profile_key("proj"), ProjectProfile)
    return {t.name for t in p.concepts} if p is not None else set()


async def test_held_records_feed_the_graph_and_profile_only_once_released(
    client: Client,
) -> None:
    store = await MemoryStore(client).open()
    life = LifecycleService(LifecycleConfig())
    await life.start(client)
    try:
        clean = obs("s1", 1, files=["src/api.py"], concepts=["billing"], when=at(minutes=1))
        planted = msgspec.structs.replace(
            obs("s1", 2, files=["src/exfil.py"], concepts=["exfilconcept"], when=at(minutes=2)),
            trust=HELD,
        )
        await put_obs(store, clean, planted)
        await life.digest_events(DigestIn())
        everything = GraphQueryIn(limit=100)
        shown = names(await life.graph_query(everything))
        assert "src/api.py" in shown and "billing" in shown
        assert "src/exfil.py" not in shown and "exfilconcept" not in shown
        assert "exfilconcept" not in await concepts(client)

        quarantine = QuarantineService(Owner(store))
        await quarantine.release(DecideIn(id=planted.id, reason="ours"))
        await life.digest_events(DigestIn())
        shown = names(await life.graph_query(everything))
        assert {"src/exfil.py", "exfilconcept"} <= shown
        assert "exfilconcept" in await concepts(client)

        # held by hand afterwards: what only it supports leaves the graph's answers
        await quarantine.hold(DecideIn(id=planted.id, reason="not ours after all"))
        shown = names(await life.graph_query(everything))
        assert "src/exfil.py" not in shown and "exfilconcept" not in shown
        assert "src/api.py" in shown  # supported by the clean record too
        # released again: back, and not folded twice
        await quarantine.release(DecideIn(id=planted.id))
        await life.digest_events(DigestIn())
        shown = names(await life.graph_query(everything))
        assert "exfilconcept" in shown
        state = await client.bucket(PROFILES_BUCKET)
        profile = await state.get(profile_key("proj"), ProjectProfile)
        assert profile is not None
        assert [t.count for t in profile.concepts if t.name == "exfilconcept"] == [1]
    finally:
        await life.stop(client)


async def test_a_replayed_event_of_a_held_record_is_not_folded(client: Client) -> None:
    store = await MemoryStore(client).open()
    life = LifecycleService(LifecycleConfig())
    await life.start(client)
    try:
        planted = msgspec.structs.replace(
            obs("s2", 1, files=["src/planted.py"], concepts=["plantedconcept"]), trust=HELD
        )
        await put_obs(store, planted)
        # the record's event once more: a rewrite stores it as a new version, still held
        rewritten = msgspec.structs.replace(planted, title="Edited src/planted.py again")
        assert await store.put_observation(rewritten)
        await life.digest_events(DigestIn())
        assert "plantedconcept" not in names(await life.graph_query(GraphQueryIn(limit=100)))
    finally:
        await life.stop(client)
