"""Per-document data of the index as flat buffers, not one Python object per document.

A `Meta` object costs ~440 bytes and an entity tuple in a dict ~125 (measured at 100k
documents of ops/bench/search.py's corpus, docs/design/search-index-layout.md); the same data packed one document after another costs what its bytes
are plus an 8-byte offset. Slots are append-only (a removed document keeps its slot, as
everywhere in the index), so an offset array is the whole layout, and a snapshot stores the
buffers as they are: loading one decodes nothing per document.
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Callable, Iterator
from typing import Any

import msgspec

from functions.search.documents import Meta
from functions.search.mapped import ByteLog, Spill

_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder(Meta).decode


class MetaTable:
    """`Meta` of every slot (None once removed), msgpack one after another; indexed like
    the list it replaces: `table[n]`, `table[n] = None`, `len`, iteration. The rows lie in
    a `ByteLog`: those before the last seal (a snapshot) in mapped files when the index
    has a spill dir, so only the rows of hits shown are resident."""

    def __init__(self, spill: Spill | None = None) -> None:
        self._buf = ByteLog(spill)
        self._end = array("q")
        """End offset of each slot's bytes in `_buf`."""
        self._live = bytearray()

    def append(self, m: Meta) -> None:
        self._end.append(self._buf.append(_encode(m)))
        self._live.append(1)

    def __len__(self) -> int:
        return len(self._end)

    def __getitem__(self, n: int) -> Meta | None:
        if not self._live[n]:
            return None
        start = self._end[n - 1] if n else 0
        return _decode(self._buf.view(start, self._end[n]))

    def seal(self) -> None:
        self._buf.seal()

    def __setitem__(self, n: int, value: None) -> None:
        """Only removal: a slot's display fields never change."""
        assert value is None
        self._live[n] = 0

    def __iter__(self) -> Iterator[Meta | None]:
        return (self[n] for n in range(len(self)))

    def id_of(self, n: int) -> str | None:
        m = self[n] if 0 <= n < len(self) else None
        return m.id if m is not None else None

    def ids(self) -> Iterator[tuple[int, str]]:
        """(slot, id) of every live slot."""
        return ((n, m.id) for n, m in enumerate(self) if m is not None)

    def dump(self) -> tuple[list[bytes | memoryview], bytes, bytes]:
        """The rows (as the log's pieces: no copy of the sealed ones), ends and live flags."""
        return self._buf.pieces(), self._end.tobytes(), bytes(self._live)

    @classmethod
    def load(cls, buf: Any, end: bytes, live: bytes, spill: Spill | None = None) -> MetaTable:
        t = cls(spill)
        t._buf = ByteLog.of(buf, spill)
        t._end.frombytes(end)
        t._live = bytearray(live)
        if len(t._end) != len(t._live) or (t._end and t._end[-1] != len(t._buf)):
            raise ValueError("snapshot meta table is inconsistent")
        return t

    @classmethod
    def of(cls, metas: list[Meta | None], spill: Spill | None = None) -> MetaTable:
        """From the per-object list of an older snapshot (a removed slot kept as one)."""
        t = cls(spill)
        for m in metas:
            if m is None:
                t._end.append(len(t._buf))
                t._live.append(0)
            else:
                t.append(m)
        return t


class DocEntities:
    """Entity-graph nodes of each document (sorted node ids, int32), one after another in a
    `ByteLog` (mapped once sealed, like the display rows) with an end offset per slot;
    `get(doc, default)` as the dict it replaces."""

    def __init__(self, spill: Spill | None = None) -> None:
        self._flat = ByteLog(spill)
        self._end = array("q")
        """End of each slot's nodes, in nodes (4 bytes each) from the log's start."""

    def put(self, doc: int, nodes: list[int]) -> None:
        """Slots come in order: `doc` is past every slot put before."""
        if doc < len(self._end):
            raise ValueError(f"slot {doc} already has its entities")
        at = self._end[-1] if self._end else 0
        while len(self._end) < doc:
            self._end.append(at)
        if nodes:
            self._flat.append(array("i", nodes).tobytes())
        self._end.append(len(self._flat) // 4)

    def get(self, doc: int, default: tuple[int, ...] = ()) -> tuple[int, ...]:
        if doc >= len(self._end):
            return default
        start = self._end[doc - 1] if doc else 0
        end = self._end[doc]
        if end <= start:
            return default
        return tuple(self._flat.view(4 * start, 4 * end).cast("i"))

    def __len__(self) -> int:
        """Documents with at least one entity."""
        ends = self._end
        return sum(1 for d in range(len(ends)) if ends[d] > (ends[d - 1] if d else 0))

    def seal(self) -> None:
        self._flat.seal()

    def dump(self) -> tuple[list[bytes | memoryview], bytes]:
        return self._flat.pieces(), self._end.tobytes()

    @classmethod
    def load(cls, flat: Any, end: bytes, spill: Spill | None = None) -> DocEntities:
        t = cls(spill)
        t._flat = ByteLog.of(flat, spill)
        t._end.frombytes(end)
        if t._end and 4 * t._end[-1] != len(t._flat):
            raise ValueError("snapshot entity table is inconsistent")
        return t

    @classmethod
    def of(cls, by_doc: dict[int, list[int]], spill: Spill | None = None) -> DocEntities:
        t = cls(spill)
        for doc in sorted(by_doc):
            t.put(doc, by_doc[doc])
        return t


_EMPTY, _GONE = -1, -2


def _hash(record_id: str) -> int:
    # A stable 63-bit hash (a snapshot keeps the table), never 0 (0 marks an empty cell).
    h = int.from_bytes(hashlib.blake2b(record_id.encode(), digest_size=8).digest(), "little")
    return (h >> 1) or 1


class IdSlots:
    """Record id -> slot of the live documents, in an open-addressing table of 64-bit hashes
    and slots (~24 bytes a document at its fullest) rather than a dict of id strings (~124:
    the string is the larger part). A hash match is confirmed by the id the slot holds
    (`id_of`, the MetaTable), so two ids with one hash stay apart."""

    def __init__(self, id_of: Callable[[int], str | None], capacity: int = 1024) -> None:
        self._id_of = id_of
        self._keys = array("q", bytes(8 * capacity))
        self._slots = array("i", [_EMPTY]) * capacity
        self._live = 0
        self._used = 0
        """Cells not empty (live or removed): what decides growth."""

    def _find(self, record_id: str, h: int) -> tuple[int, int]:
        """(cell holding the id or -1, first reusable cell on the probe path or -1)."""
        mask = len(self._keys) - 1
        i = h & mask
        free = -1
        keys, slots = self._keys, self._slots
        while True:
            k = keys[i]
            if k == 0:
                return -1, i if free < 0 else free
            s = slots[i]
            if s == _GONE:
                if free < 0:
                    free = i
            elif k == h and self._id_of(s) == record_id:
                return i, free
            i = (i + 1) & mask

    def get(self, record_id: str, default: int | None = None) -> int | None:
        cell, _ = self._find(record_id, _hash(record_id))
        return self._slots[cell] if cell >= 0 else default

    def __contains__(self, record_id: object) -> bool:
        return isinstance(record_id, str) and self.get(record_id) is not None

    def __setitem__(self, record_id: str, slot: int) -> None:
        h = _hash(record_id)
        cell, free = self._find(record_id, h)
        if cell >= 0:
            self._slots[cell] = slot
            return
        if self._keys[free] == 0:
            self._used += 1
        self._keys[free], self._slots[free] = h, slot
        self._live += 1
        if 10 * self._used > 6 * len(self._keys):
            self._grow()

    def pop(self, record_id: str, default: int | None = None) -> int | None:
        """Forget an id; while its slot's row still names it (remove the row after)."""
        cell, _ = self._find(record_id, _hash(record_id))
        if cell < 0:
            return default
        slot = self._slots[cell]
        self._slots[cell] = _GONE
        self._live -= 1
        return slot

    def __len__(self) -> int:
        return self._live

    def slots(self) -> list[int]:
        return [s for s in self._slots if s >= 0]

    def __iter__(self) -> Iterator[str]:
        """The ids held (each decoded from its slot's row: for audits, not hot paths)."""
        for s in self.slots():
            i = self._id_of(s)
            if i is not None:
                yield i

    def _grow(self) -> None:
        cells = [(k, s) for k, s in zip(self._keys, self._slots, strict=True) if s >= 0]
        size = len(self._keys)
        while 10 * len(cells) > 3 * size:
            size *= 2
        self._keys = array("q", bytes(8 * size))
        self._slots = array("i", [_EMPTY]) * size
        mask = size - 1
        for k, s in cells:
            i = k & mask
            while self._keys[i]:
                i = (i + 1) & mask
            self._keys[i], self._slots[i] = k, s
        self._used = self._live = len(cells)

    def dump(self) -> tuple[bytes, bytes]:
        return self._keys.tobytes(), self._slots.tobytes()

    @classmethod
    def load(cls, id_of: Callable[[int], str | None], keys: bytes, slots: bytes) -> IdSlots:
        t = cls(id_of, 1)
        t._keys = array("q")
        t._keys.frombytes(keys)
        t._slots = array("i")
        t._slots.frombytes(slots)
        if len(t._keys) != len(t._slots) or len(t._keys) & (len(t._keys) - 1):
            raise ValueError("snapshot id table is inconsistent")
        t._live = sum(1 for s in t._slots if s >= 0)
        t._used = sum(1 for k in t._keys if k)
        return t
