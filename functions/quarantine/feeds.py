"""What the feeds that follow MEM_EVENTS (the knowledge graph, the project profiles) fold:
every new record but those its write path held, and, when an owner releases one of those,
that record then (`QuarantineChanged` carries it). A record held later (by hand, by chain)
was folded already: the graph's queries leave out what only held records support."""

from __future__ import annotations

from functions.kernel.records import (
    MemEvent,
    MemoryAdded,
    ObservationAdded,
    QuarantineChanged,
    Trust,
)


def _held(trust: Trust | None) -> bool:
    return trust is not None and trust.held


def feedable(batch: list[tuple[int, MemEvent]]) -> list[tuple[int, MemEvent]]:
    """`batch` as a feed folds it: held records' events out, released records' in (at the
    sequence of their release)."""
    out: list[tuple[int, MemEvent]] = []
    for seq, ev in batch:
        if isinstance(ev, ObservationAdded) and _held(ev.observation.trust):
            continue
        if isinstance(ev, MemoryAdded) and _held(ev.memory.trust):
            continue
        if isinstance(ev, QuarantineChanged):
            out += [(seq, ObservationAdded(observation=o)) for o in ev.observations]
            out += [(seq, MemoryAdded(memory=m)) for m in ev.memories]
            continue
        out.append((seq, ev))
    return out


def supported_only_by(sources: list[str], held: set[str]) -> bool:
    """A graph record (node or edge) every recorded source of which is held: nothing but
    held records supports it, so queries leave it out until one is released."""
    return bool(sources) and bool(held) and all(s in held for s in sources)
