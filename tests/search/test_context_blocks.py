"""`mem::context` gives the blocks it gave when it built a record for every observation of
the project and sorted them: the same blocks in the same order, the same tokens, and the
same project profiles, on a fixed corpus (tests/search/context_corpus.py) for every
project, agent, session left out, budget and query of its request set, part way through
the corpus and at its end, and after a snapshot round trip.

The fixture was written by that context (`python -m tests.search.context_corpus OUT` on
main at 8127f4a, before the context read through its own indexes)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec

from functions.kernel.records import MemEvent
from functions.search import context_index, index_snapshot
from functions.search.context_index import ContextIndex
from functions.search.feeder import IndexHolder
from functions.search.index import SearchIndex
from functions.search.search_service import SearchService
from tests.search.context_corpus import CHECKPOINTS, events, pinned, profiles, requests

FIXTURE: dict[str, Any] = json.loads(
    (Path(__file__).parent / "fixtures" / "context_blocks.json").read_text()
)
LETTERS = {"x": "slots", "p": "pinned", "m": "memory", "f": "profile", "s": "summary",
           "o": "observation"}  # fmt: skip


def _expected(at: int) -> tuple[list[tuple[int, list[tuple[str, str]]]], list[Any]]:
    texts = FIXTURE["texts"]
    pin = FIXTURE["at"][str(at)]
    contexts = [
        (tokens, [(LETTERS[b[0]], texts[int(b[1:])]) for b in blocks.split()])
        for tokens, blocks in pin["contexts"]
    ]
    return contexts, pin["profiles"]


def _check(at: int, got: dict[str, Any]) -> None:
    contexts, profs = _expected(at)
    reqs = requests()
    assert len(got["contexts"]) == len(contexts) == len(reqs)
    for req, reply, (tokens, blocks) in zip(reqs, got["contexts"], contexts, strict=True):
        assert [(b["type"], b["content"]) for b in reply["blocks"]] == blocks, (at, req)
        assert reply["tokens"] == tokens, (at, req)
        if blocks:
            body = reply["context"]
            assert all(text in body for _, text in blocks), (at, req)
        else:
            assert reply["context"] == "", (at, req)
    for req, reply, want in zip(profiles(), got["profiles"], profs, strict=True):
        assert reply == want, (at, req)


def _service(index: SearchIndex | None = None) -> SearchService:
    service = SearchService(IndexHolder(load_embedder=False))
    if index is not None:
        service.holder.index = index
    return service


async def _replay() -> None:
    service = _service()
    evs = events()
    for i, ev in enumerate(evs, 1):
        service.holder.index.apply(msgspec.convert(ev, MemEvent), seq=i)
        if i in CHECKPOINTS or i == len(evs):
            _check(i, await pinned(service))


async def test_context_gives_the_blocks_it_gave_by_sorting_every_record() -> None:
    await _replay()
    # the corpus reaches what it is for: every kind of block, and empty contexts too
    kinds = {b[0] for pin in FIXTURE["at"].values() for _, blocks in pin["contexts"]
             for b in blocks.split()}  # fmt: skip
    assert kinds == {"p", "m", "f", "s", "o"}


async def test_lists_too_short_for_their_readers_are_made_again(monkeypatch: Any) -> None:
    """With lists of a few entries, readers run past them all the time (best records
    forgotten, the session left out filling the list, more asked than a list holds): the
    lists are made again, grown, and past their largest the records sorted; the blocks
    stay the same."""
    monkeypatch.setitem(context_index.CAPS, context_index.OBS, 8)
    monkeypatch.setitem(context_index.CAPS, context_index.MEM, 4)
    monkeypatch.setitem(context_index.CAPS, context_index.SUM, 2)
    monkeypatch.setattr(context_index, "LATEST", 1)
    monkeypatch.setattr(context_index, "MAX_CAP", 64)
    made: list[int] = []
    sorted_: list[int] = []
    refill, by_sorting = ContextIndex.refill, ContextIndex._sorted

    def counted_refill(self: ContextIndex, *args: Any) -> None:
        made.append(args[-1])
        refill(self, *args)

    def counted_sort(self: ContextIndex, *args: Any) -> Any:
        sorted_.append(1)
        return by_sorting(self, *args)

    monkeypatch.setattr(ContextIndex, "refill", counted_refill)
    monkeypatch.setattr(ContextIndex, "_sorted", counted_sort)
    await _replay()
    assert made and sorted_ and max(made) == 64 and min(made) < 64


async def test_a_snapshot_round_trip_keeps_the_blocks() -> None:
    evs = events()
    half = CHECKPOINTS[-1]
    index = SearchIndex()
    for i, ev in enumerate(evs[:half], 1):
        index.apply(msgspec.convert(ev, MemEvent), seq=i)
    restored = index_snapshot.load(index_snapshot.dump(index), SearchIndex())
    service = _service(restored)
    _check(half, await pinned(service))
    for i, ev in enumerate(evs[half:], half + 1):
        restored.apply(msgspec.convert(ev, MemEvent), seq=i)
    _check(len(evs), await pinned(service))
