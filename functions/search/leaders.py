"""`Leaders`: the best few entries of a set that records join and leave, in order, kept
exact under adds and removes without holding the set.

An entry is its rank, a tuple whose last element is the record's slot (so no two are
equal); smaller is better. The list holds the set's best `len` entries, all of them while
`complete`. A removal takes an entry out and the rest are still the best of what is left;
an add below the last entry held, once entries have been dropped, cannot be placed (the
dropped ones may be better) and is not kept. So the list only knows its own length: when a
reader needs more than it knows, the owner makes it again from the records
(`ContextIndex.refill`)."""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterator
from typing import Any

Rank = tuple[Any, ...]

_INVERT = bytes(255 - b for b in range(256))


def descending(text: str) -> bytes:
    """A key that sorts `text` last-first: its UTF-8 bytes inverted, then 0xff (a string
    before its own extension sorts after it). Timestamps hold no NUL character, the one
    case this does not order."""
    return text.encode().translate(_INVERT) + b"\xff"


class Leaders:
    __slots__ = ("cap", "complete", "ranks")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.ranks: list[Rank] = []
        """Sorted, best first."""
        self.complete = True
        """Every entry of the set is held (nothing was dropped since the last fill)."""

    def add(self, rank: Rank) -> None:
        if not self.complete and (not self.ranks or rank > self.ranks[-1]):
            return  # below what is known: the entries dropped may be better
        insort(self.ranks, rank)
        if len(self.ranks) > self.cap:
            self.ranks.pop()
            self.complete = False

    def remove(self, rank: Rank) -> None:
        i = bisect_left(self.ranks, rank)
        if i < len(self.ranks) and self.ranks[i] == rank:
            del self.ranks[i]

    def fill(self, ranks: list[Rank], cap: int) -> None:
        """Made again from every entry of the set (`ranks`, any order), holding `cap`."""
        ranks.sort()
        self.cap = cap
        self.complete = len(ranks) <= cap
        self.ranks = ranks[:cap]

    def bound(self) -> Rank | None:
        """The worst rank known to be in order: entries past it may be missing (None: all
        are held)."""
        if self.complete:
            return None
        return self.ranks[-1] if self.ranks else ()

    def __iter__(self) -> Iterator[Rank]:
        return iter(self.ranks)

    def __len__(self) -> int:
        return len(self.ranks)

    def dump(self) -> list[Any]:
        return [self.cap, self.complete, self.ranks]

    @classmethod
    def load(cls, raw: list[Any]) -> Leaders:
        out = cls(int(raw[0]))
        out.complete = bool(raw[1])
        out.ranks = [tuple(r) for r in raw[2]]
        return out
