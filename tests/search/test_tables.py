"""The index's packed per-document tables: rows by slot, entities by slot, ids by hash."""

from __future__ import annotations

import pytest

from functions.search import tables
from functions.search.documents import Meta
from functions.search.tables import DocEntities, IdSlots, MetaTable

pytestmark = pytest.mark.unit


def _meta(i: int) -> Meta:
    return Meta(f"id{i}", "observation", "p", "", "s", "2026-01-01T00:00:00Z", f"t{i}", "x", i % 9)


def test_meta_rows_read_back_by_slot_and_removal_leaves_none() -> None:
    t = MetaTable()
    for i in range(50):
        t.append(_meta(i))
    t[7] = None
    assert t[6] == _meta(6) and t[7] is None and t[49] == _meta(49) and len(t) == 50
    again = MetaTable.load(*t.dump())
    assert list(again) == list(t) and again.id_of(7) is None and again.id_of(8) == "id8"
    assert list(MetaTable.of(list(t))) == list(t)


def test_entities_by_slot_with_gaps() -> None:
    e = DocEntities()
    e.put(0, [3, 5])
    e.put(4, [1])  # slots 1-3 have none
    assert e.get(0) == (3, 5) and e.get(2) == () and e.get(4) == (1,) and e.get(9) == ()
    with pytest.raises(ValueError):
        e.put(4, [2])
    assert DocEntities.load(*e.dump()).get(4) == (1,)


def test_ids_map_to_slots_through_growth_removal_and_reuse() -> None:
    t = MetaTable()
    ids = IdSlots(t.id_of, capacity=8)
    for i in range(5000):
        t.append(_meta(i))
        ids[f"id{i}"] = i
    assert len(ids) == 5000 and ids.get("id4321") == 4321 and "id77" in ids
    assert ids.get("nope") is None and "nope" not in ids
    for i in range(0, 5000, 2):  # as the index removes: the id first, then its row
        assert ids.pop(f"id{i}") == i
        t[i] = None
    assert len(ids) == 2500 and ids.get("id42") is None and ids.get("id43") == 43
    assert sorted(ids) == sorted(f"id{i}" for i in range(1, 5000, 2))
    again = IdSlots.load(t.id_of, *ids.dump())
    assert len(again) == 2500 and again.get("id4999") == 4999 and again.get("id4998") is None


def test_two_ids_with_one_hash_stay_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tables, "_hash", lambda _id: 12345)
    t = MetaTable()
    ids = IdSlots(t.id_of, capacity=8)
    for i in range(20):
        t.append(_meta(i))
        ids[f"id{i}"] = i
    assert [ids.get(f"id{i}") for i in range(20)] == list(range(20))
    ids.pop("id3")
    t[3] = None
    assert ids.get("id3") is None and ids.get("id4") == 4
