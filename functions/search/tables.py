"""Per-document data of the index as flat buffers, not one Python object per document.

A `Meta` object costs ~440 bytes and an entity tuple in a dict ~125 (measured at 100k
documents, issue 25); the same data packed one document after another costs what its bytes
are plus an 8-byte offset. Slots are append-only (a removed document keeps its slot, as
everywhere in the index), so an offset array is the whole layout, and a snapshot stores the
buffers as they are: loading one decodes nothing per document.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator

import msgspec

from functions.search.documents import Meta

_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder(Meta).decode


class MetaTable:
    """`Meta` of every slot (None once removed), msgpack one after another; indexed like
    the list it replaces: `table[n]`, `table[n] = None`, `len`, iteration."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._end = array("q")
        """End offset of each slot's bytes in `_buf`."""
        self._live = bytearray()

    def append(self, m: Meta) -> None:
        self._buf += _encode(m)
        self._end.append(len(self._buf))
        self._live.append(1)

    def __len__(self) -> int:
        return len(self._end)

    def __getitem__(self, n: int) -> Meta | None:
        if not self._live[n]:
            return None
        start = self._end[n - 1] if n else 0
        return _decode(memoryview(self._buf)[start : self._end[n]])

    def __setitem__(self, n: int, value: None) -> None:
        """Only removal: a slot's display fields never change."""
        assert value is None
        self._live[n] = 0

    def __iter__(self) -> Iterator[Meta | None]:
        return (self[n] for n in range(len(self)))

    def ids(self) -> Iterator[tuple[int, str]]:
        """(slot, id) of every live slot."""
        return ((n, m.id) for n, m in enumerate(self) if m is not None)

    def dump(self) -> tuple[bytes, bytes, bytes]:
        return bytes(self._buf), self._end.tobytes(), bytes(self._live)

    @classmethod
    def load(cls, buf: bytes, end: bytes, live: bytes) -> MetaTable:
        t = cls()
        t._buf = bytearray(buf)
        t._end.frombytes(end)
        t._live = bytearray(live)
        if len(t._end) != len(t._live) or (t._end and t._end[-1] != len(t._buf)):
            raise ValueError("snapshot meta table is inconsistent")
        return t

    @classmethod
    def of(cls, metas: list[Meta | None]) -> MetaTable:
        """From the per-object list of an older snapshot (a removed slot kept as one)."""
        t = cls()
        for m in metas:
            if m is None:
                t._end.append(len(t._buf))
                t._live.append(0)
            else:
                t.append(m)
        return t


class DocEntities:
    """Entity-graph nodes of each document (sorted node ids), one flat array with an end
    offset per slot; `get(doc, default)` as the dict it replaces."""

    def __init__(self) -> None:
        self._flat = array("i")
        self._end = array("q")

    def put(self, doc: int, nodes: list[int]) -> None:
        """Slots come in order: `doc` is past every slot put before."""
        if doc < len(self._end):
            raise ValueError(f"slot {doc} already has its entities")
        while len(self._end) < doc:
            self._end.append(len(self._flat))
        self._flat.extend(nodes)
        self._end.append(len(self._flat))

    def get(self, doc: int, default: tuple[int, ...] = ()) -> tuple[int, ...]:
        if doc >= len(self._end):
            return default
        start = self._end[doc - 1] if doc else 0
        end = self._end[doc]
        return tuple(self._flat[start:end]) if end > start else default

    def __len__(self) -> int:
        """Documents with at least one entity."""
        return sum(1 for d in range(len(self._end)) if self.get(d))

    def dump(self) -> tuple[bytes, bytes]:
        return self._flat.tobytes(), self._end.tobytes()

    @classmethod
    def load(cls, flat: bytes, end: bytes) -> DocEntities:
        t = cls()
        t._flat.frombytes(flat)
        t._end.frombytes(end)
        return t

    @classmethod
    def of(cls, by_doc: dict[int, list[int]]) -> DocEntities:
        t = cls()
        for doc in sorted(by_doc):
            t.put(doc, by_doc[doc])
        return t
