"""What nats-server repaired in its store as it started, told to the operator.

After a crash a block file can end in a torn write (cut short, zero-filled, garbage). The
server recovers by itself: it keeps every message before the first bad record and cuts the
file there (or drops a block with nothing valid), and says nothing of it in its log. The
only trace is the store's files: so, when the last stop was not clean, the engine takes the
size of each stream's last block file before it starts the server and again once the server
is ready; a last block that shrank or vanished is a repair (head blocks may go for age or
TTL limits: not repairs). This reads file names and sizes under the store, never their
format: the one place the engine looks inside nats-server's store.

A tear that falls exactly between two records leaves nothing to cut, and a power cut loses
whole pages the kernel had not written back: the stream is just shorter. For those the
engine keeps, while it runs, each stream's last sequence as it saw it (`SEEN`, rewritten
and synced every few seconds); a stream found at start ending before that mark lost at
least the difference.

Layout read (nats-server 2.x): `<store>/jetstream/<account>/streams/<stream>/msgs/<n>.blk`.
"""

from __future__ import annotations

import re
from pathlib import Path

import msgspec

_BLOCK = re.compile(r"^(\d+)\.blk$")
_WARNINGS = (
    "past last stream sequence",
    "Stream state outdated",
    "Recovering stream state from index errored",
    "Critical write error",
)
"""The server's own log lines that go with a repair (kept with the report)."""


class StoreRepair(msgspec.Struct, kw_only=True):
    account: str
    stream: str
    cut_bytes: int
    """Bytes of the stream's blocks the server dropped while recovering."""
    blocks: list[str]
    """Block files cut short or removed."""
    last_seq: int = 0
    """The stream's last sequence once the server was ready (0 until asked)."""
    messages: int = 0
    seen_last_seq: int = 0
    """The last sequence the engine had seen the stream at before the crash (0: unknown)."""

    @property
    def lost_at_least(self) -> int:
        return max(0, self.seen_last_seq - self.last_seq)

    def describe(self) -> str:
        where = f"stream {self.stream}"
        if self.account != "$G":
            where += f" (account {self.account})"
        how = []
        if self.cut_bytes:
            how.append(
                f"nats-server dropped {self.cut_bytes} bytes of a torn write at the end of "
                f"its store ({', '.join(self.blocks)})"
            )
        if self.lost_at_least:
            how.append(
                f"it was at sequence {self.seen_last_seq} before the crash: at least "
                f"{self.lost_at_least} messages are gone"
            )
        return (
            f"{where}: {'; '.join(how)}; it now holds {self.messages} messages up to sequence "
            f"{self.last_seq}, and new ones continue from there"
        )


Sizes = dict[tuple[str, str], dict[str, int]]


def block_sizes(store_dir: Path) -> Sizes:
    out: Sizes = {}
    root = store_dir / "jetstream"
    if not root.is_dir():
        return out
    for msgs in root.glob("*/streams/*/msgs"):
        stream_dir = msgs.parent
        key = (stream_dir.parent.parent.name, stream_dir.name)
        sizes: dict[str, int] = {}
        for f in msgs.iterdir():
            if _BLOCK.match(f.name):
                try:
                    sizes[f.name] = f.stat().st_size
                except OSError:
                    continue
        out[key] = sizes
    return out


def repairs(before: Sizes, after: Sizes) -> list[StoreRepair]:
    """Streams whose blocks the server cut or removed between the two looks."""
    out = []
    for key, old in sorted(before.items()):
        new = after.get(key)
        if new is None:  # the stream itself is gone: not a repair of ours to report
            continue
        cut = 0
        blocks = []
        if not old:
            continue
        last = max(old, key=lambda name: int(name.split(".")[0]))
        for name, size in [(last, old[last])]:
            now = new.get(name)
            if now is None:
                cut += size
                blocks.append(f"{name} removed ({size} bytes)")
            elif now < size:
                cut += size - now
                blocks.append(f"{name} {size} -> {now} bytes")
        if cut:
            out.append(StoreRepair(account=key[0], stream=key[1], cut_bytes=cut, blocks=blocks))
    return out


def repair_warnings(lines: list[str]) -> list[str]:
    return [ln.strip() for ln in lines if any(w in ln for w in _WARNINGS)]


SEEN = ".last-seen.json"


def read_seen(store_dir: Path) -> dict[str, int]:
    try:
        raw = msgspec.json.decode((store_dir / SEEN).read_bytes(), type=dict[str, int])
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return {}
    return raw


def write_seen(store_dir: Path, seen: dict[str, int]) -> None:
    """Replace the marks, synced: they must be on the disk before the data they vouch for
    could be lost (a power cut loses up to the kernel's writeback delay of data)."""
    import os

    path = store_dir / SEEN
    tmp = path.with_name(SEEN + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, msgspec.json.encode(seen))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def shorter_than_seen(
    found: list[StoreRepair], seen: dict[str, int], now: dict[str, tuple[int, int]]
) -> list[StoreRepair]:
    """`found` (block cuts) with every stream that ends before its mark added or marked;
    `now`: stream -> (last sequence, messages) once the server is ready."""
    by_name = {r.stream: r for r in found}
    for name, (last, messages) in now.items():
        r = by_name.get(name)
        if r is not None:
            r.last_seq, r.messages = last, messages
        mark = seen.get(name, 0)
        if mark > last:
            if r is None:
                r = by_name[name] = StoreRepair(account="$G", stream=name, cut_bytes=0, blocks=[])
                r.last_seq, r.messages = last, messages
            r.seen_last_seq = mark
    return sorted(by_name.values(), key=lambda r: r.stream)
