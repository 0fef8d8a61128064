"""Project profiles, maintained from MEM_EVENTS: top terms by decayed count, bounded lists,
conventions, recurring errors."""

from __future__ import annotations

import pytest

from engine import Client
from functions.kernel.records import PROFILES_BUCKET, ProjectProfile, profile_key
from functions.kernel.store import MemoryStore
from functions.lifecycle.lifecycle_service import LifecycleService
from functions.lifecycle.settings import LifecycleConfig, ProfileConfig
from functions.lifecycle.wire import DigestIn, ProjectProfileIn
from tests.fixtures import wire
from tests.lifecycle._data import at, obs, put_obs


async def test_profile_ranks_recent_work_keeps_lists_bounded_and_derives_conventions(
    store: MemoryStore, client: Client
) -> None:
    svc = wire(LifecycleService(LifecycleConfig(profile=ProfileConfig(top=5, half_life_days=30))))
    await svc.start(client)
    items = []
    # a year ago: legacy.py, edited a lot
    items += [obs("old", n, files=["src/legacy.py"], when=at(days=-365)) for n in range(12)]
    # now: api.py a few times, tests run with pytest, one recurring error, 3 sessions
    for s in range(3):
        sid = f"new{s}"
        items += [
            obs(sid, 1, files=["src/api.py"], concepts=["routing"], when=at(days=s)),
            obs(sid, 2, files=["tests/test_api.py"], concepts=["routing"], when=at(days=s)),
            obs(sid, 3, type="command", title="Ran: uv run pytest -q", when=at(days=s)),
            obs(sid, 4, type="error", title="Bash failed: KeyError: 'user' at line 12",
                when=at(days=s)),
        ]  # fmt: skip
    # many one-off files: the list must stay at its top-N
    items += [obs("misc", n, files=[f"src/gen/m{n}.py"], when=at(days=2)) for n in range(30)]
    await put_obs(store, *items)
    await svc.digest_events(DigestIn())

    out = await svc.project_profile(ProjectProfileIn(project="proj"))
    p = out["profile"]
    files = [f["file"] for f in p["topFiles"]]
    # 3 recent mentions outrank 12 from a year ago (12 / 2^12 after decay)
    assert set(files[:2]) == {"src/api.py", "tests/test_api.py"}
    assert [f["frequency"] for f in p["topFiles"][:2]] == [3, 3]
    assert len(p["topFiles"]) == 5
    stored = await (await client.bucket(PROFILES_BUCKET)).get(profile_key("proj"), ProjectProfile)
    assert stored is not None and max(len(stored.files), len(stored.concepts)) <= 5
    # routing: twice in each of sessions new0..new2 (1 + 1/4 a session), which lie 3, 2 and 1
    # sessions back (misc came last; halving every 1.5 sessions), two days of time decay
    assert p["topConcepts"] == [
        {"concept": "routing", "frequency": 6, "score": pytest.approx(1.57, abs=0.02)}
    ]
    assert p["topCommands"][0]["command"] == "uv run"
    assert p["commonErrors"] == ["KeyError: 'user' at line <n>"]
    assert p["recurringErrors"][0]["frequency"] == 3
    assert "Python project" in p["conventions"] and "Has test files" in p["conventions"]
    assert "Tests run with `uv run`" in p["conventions"]
    assert "Frequently uses: routing" in p["conventions"]
    assert p["sessionCount"] == 5 and p["totalObservations"] == len(items)
    assert p["lastActivity"] == max(o.timestamp for o in items)

    # incremental: a new event moves the profile on the next run, the old counts stay
    await put_obs(store, obs("new9", 1, files=["src/api.py"], when=at(days=3)))
    again = await svc.project_profile(ProjectProfileIn(project="proj", refresh=True))
    # once in each of new0..new2 (now 4, 3 and 2 sessions back) and 1 for new9
    assert again["profile"]["topFiles"][0] == {
        "file": "src/api.py",
        "frequency": 4,
        "score": pytest.approx(1.77, abs=0.02),
    }
    assert again["profile"]["totalObservations"] == len(items) + 1

    nothing = await svc.project_profile(ProjectProfileIn(project="elsewhere"))
    assert nothing["profile"] is None
    await svc.stop(client)
