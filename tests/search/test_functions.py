"""The search functions in a real memory worker process, fed by the real write path."""

from __future__ import annotations

from typing import Any

import pytest

from engine import Client, FunctionError
from functions.kernel.records import Observation
from functions.kernel.store import MemoryStore
from tests.fixtures import eventually

ENV = {"SEARCH_SNAPSHOT_SECONDS": "0.5", "EMBEDDING_PROVIDER": "none"}


async def observe(client: Client, session: str, project: str, prompt: str) -> str:
    out = await client.call("mem::observe", {
        "hookType": "prompt_submit", "sessionId": session, "project": project,
        "timestamp": "2026-02-03T10:00:00Z", "data": {"prompt": prompt},
    })  # fmt: skip
    return str(out["observationId"])


async def found(client: Client, query: str, project: str, obs_id: str) -> bool:
    out = await client.call("mem::smart-search", {"query": query, "project": project, "limit": 50})
    return any(r["obsId"] == obs_id for r in out["results"])


async def test_observed_records_are_found_by_smart_search_in_their_project_only(
    client: Client, spawn: Any
) -> None:
    spawn("workers.memory", env=ENV)
    mine = await observe(
        client, "s1", "alpha", "Fix the flaky parseConfigFile test in src/app/config.py"
    )
    other = await observe(client, "s2", "beta", "Fix the flaky parseConfigFile test elsewhere")
    await eventually(lambda: found(client, "flaky parse config", "alpha", mine), timeout=15)
    out = await client.call(
        "mem::smart-search", {"query": "flaky parse config", "project": "alpha"}
    )
    assert out["mode"] == "compact"
    assert {r["obsId"] for r in out["results"]} == {mine}
    assert set(out["results"][0]) >= {"obsId", "sessionId", "title", "type", "score", "timestamp"}
    full = await client.call("mem::smart-search", {"expandIds": [other]})
    assert full["mode"] == "expanded" and full["results"][0]["id"] == other
    res = await client.call("mem::search", {"query": "parseConfigFile", "project": "beta"})
    assert [r["id"] for r in res["results"]] == [other]
    assert res["results"][0]["record"]["project"] == "beta"


async def test_context_is_packed_within_the_token_budget(client: Client, spawn: Any) -> None:
    spawn("workers.memory", env=ENV)
    ids = [
        await observe(client, f"s{i}", "gamma", f"step {i}: " + "investigate the cache " * 20)
        for i in range(30)
    ]
    await eventually(lambda: found(client, "investigate cache", "gamma", ids[-1]), timeout=20)
    out = await client.call("mem::context", {"sessionId": "new", "project": "gamma", "budget": 300})
    assert 0 < out["tokens"] <= 300
    assert out["blocks"] and out["context"].startswith("<agentmemory-context>")


async def test_bad_search_input_is_rejected_with_the_field_named(
    client: Client, spawn: Any
) -> None:
    spawn("workers.memory", env=ENV)
    with pytest.raises(FunctionError) as err:
        await client.call("mem::smart-search", {"query": "x", "limit": 0})
    assert err.value.code == "BAD_REQUEST" and err.value.field == "limit"
    with pytest.raises(FunctionError) as err:
        await client.call("mem::search", {"query": "x", "kinds": ["nope"]})
    assert err.value.code == "BAD_REQUEST" and err.value.field == "kinds[0]"  # names the item


async def test_a_restarted_worker_restores_its_snapshot_and_replays_the_tail(
    client: Client, spawn: Any
) -> None:
    proc = spawn("workers.memory", env=ENV)
    first = await observe(client, "s1", "delta", "rotate the signing keys for the webhook relay")
    await eventually(lambda: found(client, "signing keys webhook", "delta", first), timeout=15)
    st = await eventually(lambda: _snapshotted(client), timeout=15)
    assert st["snapshotSeq"] >= 1
    proc.kill()
    proc.wait()
    # written while no search replica runs: only the stream holds it
    late = Observation(id="late-1", session_id="s9", project="delta", hook_type="prompt_submit",
                       timestamp="2026-02-04T00:00:00Z", narrative="webhook relay retries exhausted")  # fmt: skip
    store = await MemoryStore(client).open()
    assert await store.add_observation(late)
    await store.close()
    spawn("workers.memory", env=ENV)
    await eventually(lambda: found(client, "signing keys webhook", "delta", first), timeout=15)
    await eventually(lambda: found(client, "webhook relay retries", "delta", "late-1"), timeout=15)
    status = await client.call("mem::search-status", {})
    assert status["documents"] >= 2 and status["lag"] == 0


async def _snapshotted(client: Client) -> dict[str, Any] | None:
    st: dict[str, Any] = await client.call("mem::search-status", {})
    return st if st.get("snapshotSeq") else None


async def test_profile_reads_the_lifecycle_profile_and_falls_back_to_the_index(
    client: Client, spawn: Any
) -> None:
    from functions.kernel.records import PROFILES_BUCKET, ProfileTerm, ProjectProfile, profile_key

    spawn("workers.memory", env=ENV)
    first = await observe(client, "s1", "alpha", "Edit src/app/config.py to parse YAML")
    await observe(client, "s2", "alpha", "Run pytest on tests/test_config.py")
    await eventually(lambda: found(client, "parse yaml", "alpha", first), timeout=15)
    before = await client.call("mem::profile", {"project": "alpha"})
    assert before["observations"] == 2 and before["conventions"] == []
    assert "src/stored/module.py" not in before["topFiles"]
    # what the lifecycle's digest keeps up to date from MEM_EVENTS
    profiles = await client.bucket(PROFILES_BUCKET)
    stored = ProjectProfile(
        project="alpha",
        observations=2,
        sessions=2,
        files=[ProfileTerm(name="src/stored/module.py", score=3.0)],
        concepts=[ProfileTerm(name="yaml", score=2.0)],
        commands=[ProfileTerm(name="pytest", score=1.0)],
        conventions=["tests under tests/ (pytest)"],
    )
    await profiles.put(profile_key("alpha"), stored)
    after = await client.call("mem::profile", {"project": "alpha"})
    assert after["topFiles"] == ["src/stored/module.py"]
    assert after["topConcepts"] == ["yaml"] and after["topCommands"] == ["pytest"]
    assert after["conventions"] == ["tests under tests/ (pytest)"]
    assert after["observations"] == 2 and after["types"] == before["types"]
    # an agent-scoped profile cannot come from the per-project record
    scoped = await client.call("mem::profile", {"project": "alpha", "agentId": "someone"})
    assert "src/stored/module.py" not in scoped["topFiles"]
    context = await client.call("mem::context", {"project": "alpha", "sessionId": "s3"})
    assert "src/stored/module.py" in context["context"]
