"""Consolidation: tiers from synthetic sessions, idempotence, crash safety."""

from __future__ import annotations

import pytest

from functions.kernel.records import LIFECYCLE_BUCKET, Memory, Session
from functions.kernel.store import MemoryStore
from functions.lifecycle.consolidate import Consolidator, RunMarker
from functions.lifecycle.lifecycle_service import LifecycleService
from functions.lifecycle.wire import ConsolidateIn
from tests.lifecycle._data import at, obs, put_obs, put_session

WORKFLOW = [
    ("file_edit", "src/api.py", ""),
    ("command", "", "Ran: .venv/bin/pytest -q tests/test_api.py"),
    ("command", "", "Ran: git commit -m wip"),
]


async def seed(store: MemoryStore, sessions: int = 6) -> None:
    for s in range(sessions):
        sid = f"sess-{s:02d}"
        await put_session(store, sid, at(days=s, hours=1), status="ended")
        items = [obs(sid, 0, type="prompt", title=f"Prompt: task {s}", when=at(days=s))]
        for n, (kind, path, title) in enumerate(WORKFLOW, 1):
            items.append(
                obs(
                    sid,
                    n,
                    type=kind,
                    files=[path] if path else [],
                    title=title,
                    when=at(days=s),
                    concepts=["api"],
                )
            )
        items.append(obs(sid, 9, files=[f"src/only_{s}.py"], when=at(days=s)))
        await put_obs(store, *items)


async def tier(store: MemoryStore, kind: str) -> list[Memory]:
    return sorted(
        (m for m in await store.load_all(store.memories, Memory) if m.type == kind),
        key=lambda m: m.id,
    )


async def test_consolidation_run_twice_is_idempotent(
    store: MemoryStore, lifecycle: LifecycleService
) -> None:
    await seed(store)
    first = await lifecycle.consolidate(ConsolidateIn(now=at(days=10).isoformat()))
    assert first["summarized"] == 6
    assert first["semantic"]["created"] >= 3 and first["procedural"]["created"] >= 1
    before = {m.id: m for m in await store.load_all(store.memories, Memory)}

    second = await lifecycle.consolidate(ConsolidateIn(now=at(days=11).isoformat()))
    assert second["summarized"] == 0
    assert second["semantic"] == {
        "created": 0,
        "updated": 0,
        "unchanged": first["semantic"]["created"],
    }
    assert second["procedural"] == {
        "created": 0,
        "updated": 0,
        "unchanged": first["procedural"]["created"],
    }
    after = {m.id: m for m in await store.load_all(store.memories, Memory)}
    assert after == before


class Crash(Exception):
    pass


@pytest.mark.parametrize("phase", ["stage", "apply"])
async def test_crash_mid_consolidation_leaves_no_partial_tier_and_next_run_completes(
    store: MemoryStore, lifecycle: LifecycleService, phase: str
) -> None:
    await seed(store)

    def crash(where: str, i: int) -> None:
        if where == phase and i == 2:
            raise Crash(f"killed during {where} #{i}")

    broken = Consolidator(store, fault=crash)
    with pytest.raises(Crash):
        await broken.run(at(days=10))
    semantic = await tier(store, "semantic")
    if phase == "stage":
        # nothing committed: no record of either tier is visible
        assert semantic == [] and await tier(store, "procedural") == []
    else:
        # committed but not (fully) applied: the marker says so, the next run rolls forward
        life = await store.client.bucket(LIFECYCLE_BUCKET)
        marker = await store.get(life, "run.consolidate", RunMarker)
        assert marker is not None and marker.state == "committed"

    out = await Consolidator(store).run(at(days=10))
    if phase == "apply":
        assert out.recovered
    reference = await Consolidator(store).run(at(days=10))
    assert reference.semantic.created == 0 and reference.semantic.updated == 0
    assert reference.procedural.created == 0 and reference.procedural.updated == 0
    assert len(await tier(store, "semantic")) == out.semantic.created + out.semantic.unchanged
    assert await tier(store, "procedural")
    life = await store.client.bucket(LIFECYCLE_BUCKET)
    assert [k for k in await life.keys() if k.startswith("stage.")] == []


async def test_semantic_and_procedural_tiers_point_back_to_supporting_observations(
    store: MemoryStore, lifecycle: LifecycleService
) -> None:
    await seed(store)
    await lifecycle.consolidate(ConsolidateIn(now=at(days=10).isoformat()))
    facts = {m.title: m for m in await tier(store, "semantic")}
    api = facts["src/api.py is a hot spot"]
    assert api.confidence == pytest.approx(0.75)
    assert len(api.source_ids) == 6
    assert "Runs `pytest`" in facts and "Runs `git commit`" in facts
    assert not any("only_" in t for t in facts)  # one session is not a pattern
    (proc,) = await tier(store, "procedural")
    assert proc.steps == ["edit src/api.py", "run pytest", "run git commit"]
    expected = {obs(f"sess-{s:02d}", n).id for s in range(6) for n in (1, 2, 3)}
    assert set(proc.source_ids) <= expected and len(proc.source_ids) == 18
    assert (await store.get(store.sessions, "sess-00", Session)) is not None
