"""The full record of each observation the index holds, in a local append-only file: what a
hit shows is read from here (a `pread` of a few hundred bytes, page cache) for the top-k.

Why not from the observations bucket: nats-server answers a get by key by loading the whole
block that holds it (~4 MB) into its heap, so a search returning 12 hits at random places
of a large bucket loaded ~50 MB into nats-server and its garbage collector paid for it
(a saturated soak to 1M: most of the server's CPU went to collecting; docs/design/
hit-records-file.md). The index sees
every observation anyway, in its ObservationAdded event; keeping the record beside the
index costs ~0.34 KB of disk per observation (zlib with a dictionary of the record's field
names) and 8 bytes of memory per slot.

Layout: a 24-byte header (magic and a random file id), then each slot's record, zlib'd,
one after another; `_end[i]` is the end offset of slot `first + i` (a slot without a record,
a memory or a summary, has length 0). Slots below `first` are not here (they were indexed
before this file: read from KV). The snapshot stores (id, first, ends); a restore keeps the
file only when its id matches and it holds at least what the snapshot says (it is cut back
to that: the records after it come again with the events replayed), else starts a new one.
One process owns a file (an exclusive `flock`): a second one on the same data dir reads from
KV instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import uuid
import zlib
from array import array
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger("functions.search")
MAGIC = b"amshown1"
HEADER = len(MAGIC) + 16
ZDICT = (
    b'{"id":"obs_","session_id":"","project":"","agent_id":"","hook_type":"post_tool_use",'
    b'"timestamp":"2026-01-01T00:00:00.000Z","type":"command","title":"Ran: ","narrative":'
    b'"Bash on  Output: ","facts":["files: "],"concepts":["python","bash","pytest"],"files":'
    b'[""],"tool_name":"Bash","importance":5,"cwd":"/","event_id":"toolu_","raw":"{\\"command'
    b'\\": \\"\\"}\\n","origin":"import","truncated":[],"team":"","instance":"","revision":1,'
    b'"hook_type":"user_prompt_submit","type":"file_edit","tool_name":"Edit","file_path":'
    b'"type":"file_read","tool_name":"Read","type":"error","hook_type":"session_start",'
)
"""zlib's preset dictionary: the field names and common values of an observation, so each
record, compressed alone, does not pay for them (~480 -> ~340 bytes on the load bench's)."""
COMPACT_MIN = 64 << 20
"""Dead bytes (records of removed or revised slots) before the file is rewritten without
them, and only once they are a third of it (a compression model revising every record
once leaves half the file dead)."""
_COPY = 1 << 20


class ShownRecords:
    """Slot -> the record's JSON bytes, for the slots indexed since the file was made."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.file_id = ""
        self.first = 0
        self._end = array("q")
        self._fd = -1
        self.dead = 0
        """Bytes of records whose slot was removed since the file was opened (not counted
        across restarts: an estimate of what a rewrite would give back)."""
        self.disabled = False
        self.compact_min = COMPACT_MIN

    @property
    def _at(self) -> int:
        """Where the next record goes: the end of the last one, or the header's."""
        return self._end[-1] if self._end else HEADER

    # ---- open / restore ------------------------------------------------------------
    def open(self, slots: int, file_id: str = "", first: int = 0, ends: bytes = b"") -> None:
        """Open the file for an index of `slots` slots. With the (file_id, first, ends) of a
        snapshot, keep what the file holds of it; otherwise start a new file whose first
        slot is `slots` (those before are read elsewhere)."""
        self.close()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            log.warning("shown records at %s unavailable (%s): hits read from KV", self.path, exc)
            self.disabled = True
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            log.warning("shown records at %s held by another process: hits read from KV",
                        self.path)  # fmt: skip
            self.disabled = True
            return
        self._fd, self.disabled, self.dead = fd, False, 0
        end = array("q")
        end.frombytes(ends)
        size = os.fstat(fd).st_size
        head = os.pread(fd, HEADER, 0)
        held = end[-1] if end else HEADER
        if (file_id and head == MAGIC + _id_bytes(file_id) and size >= held
                and first + len(end) <= slots):  # fmt: skip
            os.ftruncate(fd, held)
            self.file_id, self.first, self._end = file_id, first, end
            return
        if file_id:
            log.info("shown records at %s do not match the snapshot: a new file from slot %d "
                     "(earlier hits read from KV)", self.path, slots)  # fmt: skip
        fresh = uuid.uuid4()
        os.ftruncate(fd, 0)
        os.pwrite(fd, MAGIC + fresh.bytes, 0)
        self.file_id, self.first, self._end = str(fresh), slots, array("q")

    def close(self) -> None:
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
        self._fd = -1

    @property
    def usable(self) -> bool:
        return self._fd >= 0

    # ---- writes ----------------------------------------------------------------------
    def put(self, n: int, data: bytes) -> None:
        """Slot `n`'s record (slots are appended in order; those skipped hold nothing)."""
        if self._fd < 0 or n < self.first + len(self._end):
            return
        self._pad(n)
        co = zlib.compressobj(6, zdict=ZDICT)
        blob = co.compress(data) + co.flush()
        at = self._at
        try:
            os.pwrite(self._fd, blob, at)
        except OSError as exc:  # a full disk: this slot's hit reads from KV
            log.warning("shown records: write failed (%s)", exc)
            self._end.append(at)
            return
        self._end.append(at + len(blob))

    def _pad(self, n: int) -> None:
        at = self._at
        while self.first + len(self._end) < n:
            self._end.append(at)

    def drop(self, n: int) -> None:
        """Slot `n` was removed: its bytes are dead (kept until the file is rewritten)."""
        span = self._span(n)
        if span is not None:
            self.dead += span[1] - span[0]

    # ---- rewriting ---------------------------------------------------------------------
    def wasteful(self) -> bool:
        return self._fd >= 0 and self.dead >= self.compact_min and self.dead * 3 >= self.held

    async def compact(self, alive: Callable[[int], bool]) -> None:
        """Rewrite the file with the records of live slots only, under a new file id (a
        snapshot taken before refers to the old one: restored, it starts a new file). The
        copy runs in a thread; slots appended meanwhile are copied after it, on the loop."""
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        fresh = uuid.uuid4()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.pwrite(fd, MAGIC + fresh.bytes, 0)
            before = self.held
            mark = len(self._end)
            spans = [self._span(self.first + i) if alive(self.first + i) else None
                     for i in range(mark)]  # fmt: skip
            ends = await asyncio.to_thread(self._copy, fd, spans, HEADER)
            tail = [self._span(self.first + i) if alive(self.first + i) else None
                    for i in range(mark, len(self._end))]  # fmt: skip
            ends += self._copy(fd, tail, ends[-1] if ends else HEADER)  # the new file's end
            os.replace(tmp, self.path)
        except BaseException:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            raise
        old, self._fd = self._fd, fd
        os.close(old)
        self._end, self.file_id, self.dead = ends, str(fresh), 0
        log.info("shown records rewritten without removed ones: %.1f -> %.1f MB",
                 before / 1e6, ((ends[-1] if ends else HEADER) - HEADER) / 1e6)  # fmt: skip

    def _copy(self, fd: int, spans: list[tuple[int, int] | None], at: int) -> array[int]:
        ends, buf, start = array("q"), bytearray(), at
        for span in spans:
            if span is not None:
                buf += os.pread(self._fd, span[1] - span[0], span[0])
            ends.append(start + len(buf))
            if len(buf) >= _COPY:
                os.pwrite(fd, buf, start)
                start += len(buf)
                buf.clear()
        os.pwrite(fd, buf, start)
        return ends

    # ---- reads -----------------------------------------------------------------------
    def _span(self, n: int) -> tuple[int, int] | None:
        i = n - self.first
        if self._fd < 0 or i < 0 or i >= len(self._end):
            return None
        start = self._end[i - 1] if i else HEADER
        stop = self._end[i]
        return (start, stop) if stop > start else None

    def get(self, n: int) -> bytes | None:
        """Slot `n`'s record as JSON bytes; None when this file does not hold it."""
        span = self._span(n)
        if span is None:
            return None
        try:
            blob = os.pread(self._fd, span[1] - span[0], span[0])
            return zlib.decompressobj(zdict=ZDICT).decompress(blob)
        except (OSError, zlib.error) as exc:
            log.warning("shown records: slot %d unreadable (%s): read from KV", n, exc)
            return None

    # ---- snapshot --------------------------------------------------------------------
    def dump(self) -> tuple[str, int, bytes]:
        """(file id, first slot, end offsets): what a snapshot needs to find them again."""
        return self.file_id, self.first, self._end.tobytes()

    @property
    def held(self) -> int:
        """Bytes of records in the file (dead ones included)."""
        return self._at - HEADER

    def status(self) -> dict[str, object]:
        held = self.held
        return {
            "shownRecords": len(self._end),
            "shownFirstSlot": self.first,
            "shownBytes": held,
            "shownDeadBytes": self.dead,
            "shownFile": str(self.path) if self.usable else "",
        }


def _id_bytes(file_id: str) -> bytes:
    """A snapshot's file id as the header holds it (an id that is no UUID matches no file)."""
    try:
        return uuid.UUID(file_id).bytes
    except ValueError:
        return b""
