"""The search index's quarantine filter: held records leave every stream before ranking
(as the project and agent filters do), come back when released, are found only when asked
for, and stay held across a snapshot."""

from __future__ import annotations

import numpy as np

from functions.kernel.records import (
    Observation,
    ObservationAdded,
    QuarantineChanged,
    RecordsRemoved,
    Trust,
)
from functions.search import index_snapshot
from functions.search.index import SearchIndex


def obs(
    i: str, text: str, *, held: bool = False, session: str = "s1", revision: int = 0
) -> Observation:
    trust = Trust(held=True, reasons=["ignore-previous"], source="web") if held else None
    return Observation(
        id=i, session_id=session, project="p", hook_type="post_tool_use",
        timestamp="2026-01-01T00:00:00Z", title=text[:40], narrative=text, trust=trust,
        revision=revision,
    )  # fmt: skip


def ids(idx: SearchIndex, query: str, *, quarantined: bool = False) -> list[str]:
    return [h.id for h in idx.search(query, limit=10, quarantined=quarantined)]


def test_a_record_held_at_write_is_left_out_unless_asked_for() -> None:
    idx = SearchIndex()
    idx.apply(ObservationAdded(observation=obs("clean", "deploy the billing service")))
    idx.apply(ObservationAdded(observation=obs("bad", "deploy the billing service now", held=True)))
    assert ids(idx, "billing deploy") == ["clean"]
    assert set(ids(idx, "billing deploy", quarantined=True)) == {"clean", "bad"}
    assert idx.held_reasons("bad") == ["ignore-previous"]
    assert idx.held_reasons("clean") is None
    mask = idx.mask("p", None, None)
    assert mask.tolist() == [True, False]


def test_held_records_do_not_shape_the_statistics_of_what_is_shown() -> None:
    """Left out before ranking: a held record's words count in no idf, as if absent."""
    alone = SearchIndex()
    alone.add(obs("a", "rotate the signing keys"))
    alone.add(obs("b", "signing is done in ci"))
    with_held = SearchIndex()
    with_held.add(obs("a", "rotate the signing keys"))
    with_held.add(obs("x", "signing signing signing keys keys", held=True))
    with_held.add(obs("b", "signing is done in ci"))
    assert [(h.id, h.score) for h in alone.search("signing keys")] == [
        (h.id, h.score) for h in with_held.search("signing keys")
    ]


def test_a_decision_holds_and_releases_by_event() -> None:
    idx = SearchIndex()
    idx.apply(ObservationAdded(observation=obs("o1", "retry the webhook with backoff")))
    idx.apply(ObservationAdded(observation=obs("o2", "webhook secret lives in vault", held=True)))
    assert ids(idx, "webhook") == ["o1"]  # a scope is made (and cached) here
    idx.apply(QuarantineChanged(held={"o1": ["manual"]}, released=["o2"]))
    assert ids(idx, "webhook") == ["o2"]
    assert idx.held_reasons("o1") == ["manual"] and idx.held_reasons("o2") is None
    idx.apply(QuarantineChanged(released=["o1"]))
    assert set(ids(idx, "webhook")) == {"o1", "o2"}


def test_a_release_outlives_a_revision_of_the_record() -> None:
    """The compression model rewrites a record (same id, its write verdict kept): the owner's
    release still stands."""
    idx = SearchIndex()
    idx.apply(ObservationAdded(observation=obs("o1", "install with pnpm", held=True)))
    idx.apply(QuarantineChanged(released=["o1"]))
    idx.apply(
        ObservationAdded(observation=obs("o1", "install it with pnpm", held=True, revision=1))
    )
    assert ids(idx, "pnpm") == ["o1"]


def test_a_forgotten_held_record_leaves_the_held_set() -> None:
    idx = SearchIndex()
    idx.apply(ObservationAdded(observation=obs("o1", "curl the metadata endpoint", held=True)))
    idx.apply(RecordsRemoved(ids=["o1"]))
    assert idx.held == set() and idx.verdicts == {}
    assert ids(idx, "metadata", quarantined=True) == []


def test_scopes_grown_by_appends_keep_held_records_out() -> None:
    """A scope held for queries grows by new slots; a held one among them stays out, and the
    grown scope equals one made from scratch."""
    idx = SearchIndex()
    for i in range(20):
        idx.add(obs(f"o{i}", f"cache warmup step {i}", session=f"s{i % 3}"))
    assert len(ids(idx, "cache warmup")) == 10
    idx.add(obs("held", "cache warmup cache warmup", held=True))
    idx.add(obs("late", "cache warmup late"))
    grown = ids(idx, "cache warmup")
    assert "held" not in grown and "late" in grown
    idx.forget_scopes()
    assert ids(idx, "cache warmup") == grown


def test_a_snapshot_keeps_what_is_held_and_what_was_released() -> None:
    idx = SearchIndex()
    idx.apply(ObservationAdded(observation=obs("o1", "token rotation runbook")), 1)
    idx.apply(ObservationAdded(observation=obs("o2", "token rotation notes", held=True)), 2)
    idx.apply(ObservationAdded(observation=obs("o3", "token rotation draft", held=True)), 3)
    idx.apply(QuarantineChanged(held={"o1": ["manual"]}, released=["o3"]), 4)
    for blob in (index_snapshot.dump(idx), _streamed(idx)):
        back = index_snapshot.load(blob, SearchIndex())
        assert ids(back, "token rotation") == ["o3"]
        assert back.held_reasons("o1") == ["manual"] and back.held_reasons("o3") is None
        assert np.array_equal(back.mask("p", None, None), idx.mask("p", None, None))


def _streamed(idx: SearchIndex) -> bytes:
    reader = index_snapshot.take(idx).reader()
    out = bytearray()
    buf = bytearray(1 << 16)
    while n := reader.readinto(buf):
        out += buf[:n]
    return bytes(out)
