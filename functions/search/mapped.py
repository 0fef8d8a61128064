"""The index's large frozen arrays in files mapped into memory, not on the heap.

What a seal freezes (the postings, the display rows of hits) is read by a query only where
the query looks: a few terms' lists, the top-k rows. On the heap all of it stays resident
for ever (~350 bytes a document); mapped from a file, only the pages a query touched are,
the kernel can drop them when memory is short (they are clean once written back), and
`Spill.trim()` hands them back after a snapshot has read every page through the mapping.

Each allocation is a new file in the replica's index dir, unlinked at once: the mapping
keeps it alive until the last array over it is gone, so a crash leaves nothing behind and
no file is ever written twice (a reader holding an old array keeps the old bytes).
`Spill(None)` (tests, an index with no local dir) allocates on the heap as before.
"""

from __future__ import annotations

import bisect
import mmap
import os
import tempfile
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt


class Spill:
    def __init__(self, where: Path | None = None) -> None:
        self.where = where
        self._maps: weakref.WeakSet[mmap.mmap] = weakref.WeakSet()

    @property
    def mapped(self) -> bool:
        return self.where is not None

    def alloc(self, dtype: npt.DTypeLike, n: int) -> npt.NDArray[Any]:
        """A writable array of `n` items, to be filled once and then only read."""
        dt = np.dtype(dtype)
        size = n * dt.itemsize
        if self.where is None or size < mmap.PAGESIZE:
            return np.empty(n, dt)
        self.where.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=".spill.", dir=self.where)
        try:
            os.unlink(name)
            os.ftruncate(fd, size)
            m = mmap.mmap(fd, size, flags=mmap.MAP_SHARED)
        finally:
            os.close(fd)
        self._maps.add(m)
        return np.frombuffer(m, dt, n)

    def copy(self, data: Any, dtype: npt.DTypeLike) -> npt.NDArray[Any]:
        """`data` (any buffer) as a mapped array of `dtype`."""
        src = np.frombuffer(data, dtype)
        out = self.alloc(dtype, len(src))
        out[:] = src
        return out

    def concat(self, pieces: list[npt.NDArray[Any]], dtype: npt.DTypeLike) -> npt.NDArray[Any]:
        """np.concatenate into a mapped array: no heap copy of the whole on the way."""
        out = self.alloc(dtype, sum(len(p) for p in pieces))
        if len(out):
            np.concatenate(pieces, out=out, casting="same_kind")
        return out

    def trim(self) -> int:
        """Drop every mapped page from this process (the file keeps the bytes; a later
        read maps them again from the page cache or the disk); the bytes mapped."""
        total = 0
        for m in list(self._maps):
            if not m.closed:
                m.madvise(mmap.MADV_DONTNEED)
                total += len(m)
        return total


class ByteLog:
    """Append-only bytes (rows one after another): the rows before the last `seal()` in
    mapped segments, the newer ones in a small heap tail. A row never straddles two
    segments (a seal takes the whole tail). Segments are merged as they seal so that each
    is at least twice the size of the one after it: a handful of them, each byte copied
    O(log n) times in all."""

    def __init__(self, spill: Spill | None = None) -> None:
        self.spill = spill or Spill()
        self._segs: list[npt.NDArray[np.uint8]] = []
        self._starts: list[int] = []
        self._sealed = 0
        self._tail = bytearray()

    def __len__(self) -> int:
        return self._sealed + len(self._tail)

    def append(self, row: bytes) -> int:
        """Add a row; the log's new length (the row's end offset)."""
        self._tail += row
        return len(self)

    def view(self, start: int, end: int) -> memoryview:
        """Bytes [start, end) of one row (release the view before the next append)."""
        if start >= self._sealed:
            return memoryview(self._tail)[start - self._sealed : end - self._sealed]
        i = bisect.bisect_right(self._starts, start) - 1
        s0 = self._starts[i]
        return self._segs[i].data[start - s0 : end - s0]

    def seal(self) -> None:
        if not self._tail:
            return
        pieces = [np.frombuffer(self._tail, np.uint8)]
        size = len(self._tail)
        while self._segs and len(self._segs[-1]) <= 2 * size:
            seg = self._segs.pop()
            self._starts.pop()
            pieces.insert(0, seg)
            size += len(seg)
        start = self._starts[-1] + len(self._segs[-1]) if self._segs else 0
        self._segs.append(self.spill.concat(pieces, np.uint8))
        self._starts.append(start)
        self._sealed = start + size
        self._tail = bytearray()

    def pieces(self) -> list[bytes | memoryview]:
        """The whole log as buffers, in order: the segments as they are (never written
        again) and a copy of the tail."""
        return [*(s.data for s in self._segs), bytes(self._tail)]

    @classmethod
    def of(cls, data: Any, spill: Spill | None = None) -> ByteLog:
        """A log holding `data` (a buffer, or a list of them as `pieces()` gives), sealed."""
        log = cls(spill)
        parts = [np.frombuffer(p, np.uint8) for p in (data if isinstance(data, list) else [data])]
        seg = log.spill.concat(parts, np.uint8)
        if len(seg):
            log._segs, log._starts, log._sealed = [seg], [0], len(seg)
        return log
