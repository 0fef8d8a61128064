"""What nats-server repaired in its store as it started, told to the operator.

After a crash a block file can end in a torn write (cut short, zero-filled, garbage). The
server recovers by itself: it keeps every message before the first bad record and cuts the
file there (or drops a block with nothing valid), and says nothing of it in its log. The
only trace is the store's files: so, when the last stop was not clean, the engine takes the
size of each stream's last block file before it starts the server and again once the server
is ready; a last block that shrank or vanished is a repair (head blocks may go for age or
TTL limits: not repairs). This reads file names and sizes under the store, never their
format: the one place the engine looks inside nats-server's store.

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

    def describe(self) -> str:
        where = f"stream {self.stream}"
        if self.account != "$G":
            where += f" (account {self.account})"
        return (
            f"{where}: nats-server dropped {self.cut_bytes} bytes of a torn write at the end of "
            f"its store ({', '.join(self.blocks)}); it now holds {self.messages} messages up to "
            f"sequence {self.last_seq}: anything written after that was lost"
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
