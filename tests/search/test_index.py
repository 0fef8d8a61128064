"""The index: ranking rules, filters applied before ranking, removals."""

from __future__ import annotations

import pytest

from functions.kernel.records import (
    Memory,
    MemoryAdded,
    Observation,
    ObservationAdded,
    RecordsRemoved,
)
from functions.search.index import SearchConfig, SearchIndex

pytestmark = pytest.mark.unit


def obs(
    i: int | str, text: str, project: str = "p", session: str = "s1", **kw: object
) -> Observation:
    return Observation(
        id=f"o{i}", session_id=session, project=project, hook_type="post_tool_use",
        timestamp="2026-01-01T00:00:00Z", title=text[:40], narrative=text, **kw,  # type: ignore[arg-type]
    )  # fmt: skip


def test_exact_match_outranks_prefix_match() -> None:
    idx = SearchIndex()
    # the prefix-only document is shorter and repeats its term: it would win on raw BM25
    idx.add(obs(1, "configurator configurator configurator"))
    idx.add(obs(2, "we changed the config loader and several unrelated modules around it today"))
    idx.add(obs(3, "nothing related here at all"))
    hits = idx.search("config", limit=5)
    assert [h.id for h in hits][:2] == ["o2", "o1"]


def test_prefix_matching_finds_completions() -> None:
    idx = SearchIndex()
    idx.add(obs(1, "kubernetesDeployment rolled out"))
    assert [h.id for h in idx.search("kubernetesdepl")] == ["o1"]


def test_project_filter_applies_before_ranking() -> None:
    idx = SearchIndex()
    for i in range(10_000):
        idx.add(obs(i, f"timeout error in worker pool {i}", project="big", session=f"b{i % 50}"))
    idx.add(
        obs("mine", "a long note that also mentions a timeout error somewhere", project="small")
    )
    hits = idx.search("timeout error", project="small", limit=5)
    assert [h.id for h in hits] == ["omine"]


def test_agent_filter_applies_before_ranking() -> None:
    idx = SearchIndex()
    idx.add(obs(1, "deploy script", agent_id="a"))
    idx.add(obs(2, "deploy script deploy", agent_id="b"))
    assert [h.id for h in idx.search("deploy", agent_id="a")] == ["o1"]


def test_superseding_memory_removes_the_old_version() -> None:
    idx = SearchIndex()
    idx.apply(MemoryAdded(memory=Memory(id="m1", content="use postgres 14 for tests", project="p")))
    idx.apply(
        MemoryAdded(
            memory=Memory(
                id="m2", content="use postgres 16 for tests", project="p", supersedes="m1"
            )
        )
    )
    assert [h.id for h in idx.search("postgres tests", project="p")] == ["m2"]


def test_records_removed_event_drops_records_from_results() -> None:
    idx = SearchIndex()
    idx.apply(ObservationAdded(observation=obs(1, "flaky test in ci")))
    idx.apply(ObservationAdded(observation=obs(2, "flaky network")))
    idx.apply(RecordsRemoved(ids=["o1"], reason="forget"))
    assert [h.id for h in idx.search("flaky")] == ["o2"]
    assert idx.get("o1") is None


def test_at_most_three_results_per_session_lead_the_list() -> None:
    # off by default (cross-validated on LoCoMo: it moved gold turns down), on when asked
    idx = SearchIndex(config=SearchConfig(per_session=3))
    for i in range(6):
        idx.add(obs(i, f"cache miss number {i}", session="busy"))
    idx.add(obs("x", "cache miss elsewhere and more words here", session="other"))
    ids = [h.id for h in idx.search("cache miss", limit=10)]
    assert "ox" in ids[:4]
    assert len(ids) == 7


def test_a_date_in_the_query_brings_records_of_that_day() -> None:
    idx = SearchIndex()
    idx.add(
        Observation(
            id="old",
            session_id="s1",
            project="p",
            hook_type="x",
            timestamp="2026-03-01T10:00:00Z",
            narrative="release notes written",
        )
    )
    idx.add(Observation(id="new", session_id="s2", project="p", hook_type="x",
                        timestamp="2026-05-20T10:00:00Z", narrative="release notes written"))  # fmt: skip
    assert idx.search("release notes on 20 May 2026")[0].id == "new"
    assert idx.search("release notes on 1 March 2026")[0].id == "old"


def test_a_redelivered_observation_takes_no_second_slot() -> None:
    idx = SearchIndex()
    ev = ObservationAdded(observation=obs(1, "read your writes"))
    idx.apply(ev)  # applied locally by the replica that wrote it
    idx.apply(ev, seq=1)  # then delivered by the stream
    assert len(idx.meta) == 1 and idx.seq == 1
    assert [h.id for h in idx.search("writes")] == ["o1"]


def test_vectors_are_held_as_float16_and_found_by_inner_product() -> None:
    import faiss
    import numpy as np

    from functions.search.vectors import VectorIndex

    rng = np.random.default_rng(3)
    v = rng.standard_normal((200, 64)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    vec = VectorIndex()
    vec.reset("test", 64)
    for doc in range(200):
        vec.add(doc, v[doc : doc + 1])
    # ~2 bytes a dimension (float32 would be 4)
    assert len(vec.dump()) < 200 * 64 * 3
    mask = np.ones(200, bool)
    assert [vec.search(v[d], mask, 1)[0] for d in (0, 57, 199)] == [0, 57, 199]
    mask[57] = False
    assert vec.search(v[57], mask, 1)[0] != 57
    again = VectorIndex()
    again.load("test", 64, vec.chunk_doc, vec.dump())
    assert again.search(v[57], np.ones(200, bool), 1) == [57]
    flat = faiss.IndexIDMap2(faiss.IndexFlatIP(64))  # a snapshot from before: still loads
    flat.add_with_ids(v, np.arange(200, dtype=np.int64))
    old = VectorIndex()
    old.load("test", 64, list(range(200)), bytes(faiss.serialize_index(flat).tobytes()))
    assert old.search(v[9], np.ones(200, bool), 1) == [9]
