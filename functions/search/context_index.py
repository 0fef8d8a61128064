"""`ContextIndex`: what a session start reads, kept per project by the search read model on
every add and remove, so `mem::context` and `mem::profile` read a few entries instead of
every record of the project.

Records are grouped in cells, one per (project, agent, kind). A cell keeps:
- its best records in `Leaders` (observations: most important, then newest; memories: most
  important, then oldest; summaries: newest), and its newest records;
- its live records, by type, and by session;
- how many of its records name each entity-graph node (`EntityTally`).
A reader merges the cells its filter covers (a project's agents; memories without a
project with every project's, as the index's filter does) and gets exactly what sorting
every record of the filter gave: `tests/search/test_context_blocks.py` pins it.

Held records (what the index's quarantine holds: a write verdict, or a decision about the
id after it) are in no cell, so no reader of it can show them; `SearchIndex` says which on
every add, hold and release.
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np
import numpy.typing as npt

from functions.search.documents import (
    KIND_MEMORY,
    KIND_OBSERVATION,
    KIND_SUMMARY,
    KINDS,
    Meta,
)
from functions.search.entity_expansion import EntityGraph
from functions.search.entity_tally import I32, EntityTally, most_named
from functions.search.leaders import Leaders, Rank, descending
from functions.search.tables import MetaTable


class Codes(Protocol):
    @property
    def of(self) -> dict[str, int]: ...
    @property
    def names(self) -> list[str]: ...


class SearchIndex(Protocol):
    """What this module reads of the search index (functions/search/index.py, which holds
    a `ContextIndex` and calls it on every add and remove)."""

    @property
    def alive(self) -> array[int]: ...
    @property
    def project(self) -> array[int]: ...
    @property
    def agent(self) -> array[int]: ...
    @property
    def kind(self) -> array[int]: ...
    @property
    def session(self) -> array[int]: ...
    @property
    def meta(self) -> MetaTable: ...
    @property
    def graph(self) -> EntityGraph: ...
    @property
    def projects(self) -> Codes: ...
    @property
    def agents(self) -> Codes: ...
    @property
    def sessions(self) -> Codes: ...


OBS, MEM, SUM = (KINDS.index(k) for k in (KIND_OBSERVATION, KIND_MEMORY, KIND_SUMMARY))
CAPS = {OBS: 256, MEM: 64, SUM: 32}
"""Best records a cell keeps of each kind (the context shows 30, 20 and 5)."""
LATEST = 8
MAX_CAP = 8192
"""A cell's list grows to at most this when a reader needs more (one session of the
project taking most of the best places, left out by the context of that session); past it,
the reader sorts the cell's records itself."""
TOP_NODES = 200
"""Most named nodes a profile looks at (`Counter.most_common(200)`)."""

Key = tuple[int, int, int]
"""(project code, agent code, kind code)."""
Which = Literal["best", "latest"]


def best_rank(kind: int, m: Meta, slot: int, newest: bytes | None = None) -> Rank:
    """Smaller is better; what the context sorted by, ties in slot order. `newest`: the
    timestamp's `descending` key, when the caller has it."""
    if kind == MEM:
        return (-m.importance, m.timestamp, slot)
    desc = descending(m.timestamp) if newest is None else newest
    if kind == OBS:
        return (-m.importance, desc, slot)
    return (desc, slot)


def latest_rank(m: Meta, slot: int, newest: bytes | None = None) -> Rank:
    return (descending(m.timestamp) if newest is None else newest, slot)


class Cell:
    __slots__ = ("best", "count", "entities", "latest", "sessions", "types")

    def __init__(self, kind: int) -> None:
        self.best = Leaders(CAPS[kind])
        self.latest = Leaders(LATEST)
        self.count = 0
        self.sessions: dict[int, int] = {}
        """Session code -> live records of the cell in it (records with a session)."""
        self.types: dict[str, int] = {}
        self.entities = EntityTally()

    def leaders(self, which: Which) -> Leaders:
        return self.best if which == "best" else self.latest

    def dump(self) -> list[Any]:
        return [self.best.dump(), self.latest.dump(), self.count, self.sessions, self.types,
                self.entities.dump()]  # fmt: skip

    @classmethod
    def load(cls, kind: int, raw: list[Any]) -> Cell:
        c = cls(kind)
        c.best, c.latest = Leaders.load(raw[0]), Leaders.load(raw[1])
        c.count = int(raw[2])
        c.sessions = {int(k): int(v) for k, v in raw[3].items()}
        c.types = {str(k): int(v) for k, v in raw[4].items()}
        c.entities = EntityTally.load(raw[5])
        return c


@dataclass
class ProjectTally:
    """A filter's records counted (what `_index_profile` counted by reading them)."""

    observations: int = 0
    """Records that are not memories (observations and summaries)."""
    memories: int = 0
    sessions: int = 0
    types: dict[str, int] = field(default_factory=dict)
    last_activity: str = ""
    nodes: list[int] = field(default_factory=list)
    """The most named nodes, most first (with_entities only)."""


class ContextIndex:
    def __init__(self) -> None:
        self.cells: dict[Key, Cell] = {}
        self.held: set[int] = set()
        """Slots of held records: in no cell."""

    # ---- writes (SearchIndex.add / remove) -------------------------------------------
    def add(self, index: SearchIndex, slot: int, m: Meta, held: bool) -> None:
        """A record the index just took; `held`: the index holds it (its write verdict, or
        a decision about its id), and then it feeds no list."""
        if held:
            self.held.add(slot)
            return
        self._admit(index, slot, m)

    def hold(self, index: SearchIndex, slot: int, m: Meta) -> None:
        """A decision after the write holds a listed record: it leaves its cell."""
        if slot not in self.held:
            self._drop(index, slot, m)
            self.held.add(slot)

    def release(self, index: SearchIndex, slot: int, m: Meta) -> None:
        """A release: the record feeds its cell again."""
        if slot in self.held:
            self.held.discard(slot)
            self._admit(index, slot, m)

    def remove(self, index: SearchIndex, slot: int, m: Meta) -> None:
        if slot in self.held:
            self.held.discard(slot)
            return
        self._drop(index, slot, m)

    def _drop(self, index: SearchIndex, slot: int, m: Meta) -> None:
        key = _key(index, slot)
        cell = self.cells.get(key)
        if cell is None:
            return
        cell.count -= 1
        cell.best.remove(best_rank(key[2], m, slot))
        cell.latest.remove(latest_rank(m, slot))
        if m.session_id:
            sc = index.session[slot]
            left = cell.sessions.get(sc, 0) - 1
            if left > 0:
                cell.sessions[sc] = left
            else:
                cell.sessions.pop(sc, None)
        if key[2] != MEM:
            left = cell.types.get(m.type, 0) - 1
            if left > 0:
                cell.types[m.type] = left
            else:
                cell.types.pop(m.type, None)
        cell.entities.remove(slot, index.graph.ents_of.get(slot))

    # ---- reads -----------------------------------------------------------------------
    def best(
        self,
        index: SearchIndex,
        project: str | None,
        agent_id: str | None,
        kind: str,
        n: int,
        *,
        skip_session: str = "",
    ) -> list[Meta]:
        """The first `n` records of `kind` in the filter, in the context's order (records of
        session `skip_session` left out)."""
        cells = self._cells(index, project, agent_id, (KINDS.index(kind),))
        return self._leading(index, cells, "best", n, skip_session)

    def profile(
        self, index: SearchIndex, project: str | None, agent_id: str | None, *, entities: bool
    ) -> ProjectTally:
        cells = self._cells(index, project, agent_id, range(len(KINDS)))
        out = ProjectTally()
        sessions: set[int] = set()
        for key, c in cells:
            if key[2] == MEM:
                out.memories += c.count
            else:
                out.observations += c.count
                for t, k in c.types.items():
                    out.types[t] = out.types.get(t, 0) + k
            sessions.update(c.sessions)
        if project is None:  # one session id may be in several projects: counted once
            out.sessions = len({index.sessions.names[sc].split("\x00", 1)[1] for sc in sessions})
        else:
            out.sessions = len(sessions)
        latest = self._leading(index, cells, "latest", 1, "")
        out.last_activity = latest[0].timestamp if latest else ""
        if entities:
            owner = {id(c.entities): key for key, c in cells}

            def resolve(tally: EntityTally, nodes: npt.NDArray[np.int64]) -> list[int]:
                return self._first_slots(index, owner[id(tally)], nodes)

            out.nodes = most_named([c.entities for _, c in cells], TOP_NODES, resolve)
        return out

    def _cells(
        self, index: SearchIndex, project: str | None, agent_id: str | None, kinds: Iterable[int]
    ) -> list[tuple[Key, Cell]]:
        """The cells the index's filter (project, agent, kinds) covers: with a project,
        memories without one too (they are global), as `SearchIndex.mask` has it."""
        wanted = set(kinds)
        codes = index.projects.of
        mine = codes.get(project, -2) if project is not None else None
        glob = codes.get("", -2) if project else -2
        agent = index.agents.of.get(agent_id, -2) if agent_id is not None else None
        return [
            (key, c)
            for key, c in self.cells.items()
            if key[2] in wanted
            and (mine is None or key[0] == mine or (key[2] == MEM and key[0] == glob))
            and (agent is None or key[1] == agent)
        ]

    def _leading(
        self, index: SearchIndex, cells: list[tuple[Key, Cell]], which: Which, n: int,
        skip_session: str,
    ) -> list[Meta]:  # fmt: skip
        for _ in range(16):  # each turn a list is made again, larger when a session fills it
            lists = [c.leaders(which) for _, c in cells]
            bounds = [b for lst in lists if (b := lst.bound()) is not None]
            bound = min(bounds) if bounds else None
            out: list[Meta] = []
            skipped = 0
            for rank in heapq.merge(*lists):
                if bound is not None and rank > bound:
                    break
                m = index.meta[rank[-1]]
                if m is None or (skip_session and m.session_id == skip_session):
                    skipped += 1
                    continue
                out.append(m)
                if len(out) == n:
                    return out
            if bound is None:
                return out  # every record of the cells seen
            short = [(k, c) for k, c in cells if c.leaders(which).bound() is not None]
            if all(c.leaders(which).cap >= MAX_CAP for _, c in short):
                return self._sorted(index, cells, which, n, skip_session)
            for key, c in short:
                # A list that lost its best records is made again as large; a full one that
                # still fell short (a session left out filled it) grows.
                lst = c.leaders(which)
                grown = 2 * (lst.cap + skipped + n) if len(lst) >= lst.cap else lst.cap
                self.refill(index, key, which, min(MAX_CAP, grown))
        return self._sorted(index, cells, which, n, skip_session)

    def refill(self, index: SearchIndex, key: Key, which: Which, cap: int) -> None:
        """Make a cell's list again from its records (after its best ones left, or when a
        reader needs more than it holds)."""
        self.cells[key].leaders(which).fill(list(self._ranks(index, key, which)), cap)

    def _ranks(self, index: SearchIndex, key: Key, which: Which) -> Iterable[Rank]:
        for slot in self._slots(index, key).tolist():
            m = index.meta[slot]
            if m is not None:
                yield best_rank(key[2], m, slot) if which == "best" else latest_rank(m, slot)

    def _sorted(
        self, index: SearchIndex, cells: list[tuple[Key, Cell]], which: Which, n: int,
        skip_session: str,
    ) -> list[Meta]:  # fmt: skip
        """The slow way, for a reader that needs more than a list may hold: every record of
        the cells ranked."""
        ranked: list[tuple[Rank, Meta]] = []
        for key, _ in cells:
            for slot in self._slots(index, key).tolist():
                m = index.meta[slot]
                if m is None or (skip_session and m.session_id == skip_session):
                    continue
                rank = best_rank(key[2], m, slot) if which == "best" else latest_rank(m, slot)
                ranked.append((rank, m))
        return [m for _, m in heapq.nsmallest(n, ranked, key=_first)]

    def _slots(self, index: SearchIndex, key: Key) -> I32:
        """The live, admitted slots of a cell."""
        mask = self._mask(index, key)
        return np.flatnonzero(mask).astype(np.int32)

    def _mask(self, index: SearchIndex, key: Key) -> npt.NDArray[np.bool_]:
        p, a, k = key
        mask: npt.NDArray[np.bool_] = np.frombuffer(index.alive, dtype=np.int8).astype(bool)
        mask &= np.frombuffer(index.project, dtype=np.int32) == p
        mask &= np.frombuffer(index.agent, dtype=np.int32) == a
        mask &= np.frombuffer(index.kind, dtype=np.int8) == k
        if self.held:
            held = np.fromiter(self.held, dtype=np.int64, count=len(self.held))
            mask[held[held < len(mask)]] = False
        return mask

    def _first_slots(self, index: SearchIndex, key: Key, nodes: npt.NDArray[np.int64]) -> list[int]:
        """The first live slot of the cell naming each node, from the entity graph."""
        mask = self._mask(index, key)
        out = []
        for v in nodes.tolist():
            docs = index.graph.visible(v, mask, (key[0],), None)
            out.append(int(docs.min()) if len(docs) else -1)
        return out

    # ---- snapshots -------------------------------------------------------------------
    def dump(self) -> list[Any]:
        return [sorted(self.held), [[*key, c.dump()] for key, c in self.cells.items()]]

    @classmethod
    def load(cls, raw: list[Any]) -> ContextIndex:
        out = cls()
        out.held = {int(s) for s in raw[0]}
        for p, a, k, cell in raw[1]:
            out.cells[(int(p), int(a), int(k))] = Cell.load(int(k), cell)
        return out

    @classmethod
    def of(cls, index: SearchIndex, held: Callable[[int], bool] | None = None) -> ContextIndex:
        """Made from an index's live records (a snapshot written before this index was).
        `held(slot)`: whether a record is held (None: none is)."""
        out = cls()
        for slot in np.flatnonzero(np.frombuffer(index.alive, dtype=np.int8)).tolist():
            m = index.meta[slot]
            if m is None:
                continue
            if held is not None and held(slot):
                out.held.add(slot)
                continue
            out._admit(index, slot, m)
        return out

    def _admit(self, index: SearchIndex, slot: int, m: Meta) -> None:
        key = _key(index, slot)
        cell = self.cells.get(key)
        if cell is None:
            cell = self.cells[key] = Cell(key[2])
        cell.count += 1
        newest = descending(m.timestamp)
        cell.best.add(best_rank(key[2], m, slot, newest))
        cell.latest.add(latest_rank(m, slot, newest))
        if m.session_id:
            sc = index.session[slot]
            cell.sessions[sc] = cell.sessions.get(sc, 0) + 1
        if key[2] != MEM:
            cell.types[m.type] = cell.types.get(m.type, 0) + 1
        cell.entities.add(slot, index.graph.ents_of.get(slot))


def _key(index: SearchIndex, slot: int) -> Key:
    return (index.project[slot], index.agent[slot], index.kind[slot])


def _first(item: tuple[Rank, Meta]) -> Rank:
    return item[0]
