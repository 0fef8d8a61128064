"""`SearchIndex`: the read model the search functions query, fed by MEM_EVENTS.

Streams: BM25 over records, BM25 over sessions (a record inherits the rank of its session,
so a turn whose neighbours match the question is found too), vectors (when an embedding
provider is on) and the entity graph. Every stream sees only the documents the filter
(project, agent, kinds, and the quarantine: held records are left out unless asked for)
allows; fusion is weighted RRF, then at most `per_session` results of one session lead the
list.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import cast

import msgspec
import numpy as np

from functions.kernel.records import (
    MemEvent,
    Memory,
    MemoryAdded,
    Observation,
    ObservationAdded,
    QuarantineChanged,
    RecordsRemoved,
    SummaryAdded,
)
from functions.search import pruning
from functions.search.analysis import synonyms, tokenize
from functions.search.bm25 import BM25Index, Clause, Mask, Scope
from functions.search.context_index import ContextIndex
from functions.search.documents import (
    KIND_MEMORY,
    KINDS,
    Document,
    FieldWeights,
    Meta,
    Record,
    document,
)
from functions.search.entity_expansion import EntityGraph
from functions.search.fusion import RRF_K, FusionWeights, diversify, rrf
from functions.search.mapped import Spill
from functions.search.ranking import Own, session_stream, time_stream, top
from functions.search.shown import ShownRecords
from functions.search.spans import found, stream_span
from functions.search.tables import DocEntities, IdSlots, MetaTable
from functions.search.temporal import day_number
from functions.search.vectors import VectorIndex

_encode = msgspec.json.Encoder().encode


@dataclass(frozen=True)
class SearchConfig:
    """Defaults are what cross-validation over the LoCoMo development conversations chose
    (`make eval`, ops/eval/cv.py); change one only with the fold figures that support it."""

    fields: FieldWeights = field(default_factory=FieldWeights)
    fusion: FusionWeights = field(default_factory=FusionWeights)
    per_session: int = 0
    """Results of one session allowed ahead of the rest (0: no diversification)."""
    depth: int = 100
    """Candidates each stream contributes to fusion."""
    session_depth: int = 12
    """Best sessions whose records form the session stream."""
    k1: float = 0.3
    b: float = 0.5
    prefix: bool = True
    synonyms: bool = True
    rrf_k: int = RRF_K
    """Reciprocal-rank fusion's k: larger flattens the weight of the first ranks."""


class Hit(msgspec.Struct, kw_only=True):
    id: str
    kind: str
    session_id: str
    project: str
    agent_id: str
    title: str
    type: str
    timestamp: str
    importance: int
    score: float
    """Relevance in [0, 1]: the fused score over the best a record could get from the
    retrievers that answered (1.0 = ranked first by every one), never above the hit before
    it (per-session diversification may move a hit behind lower ones)."""
    matched: list[str] = msgspec.field(default_factory=list)
    """The retrievers that ranked it: bm25, vector, graph, session, time."""


class _Codes:
    """Strings interned to small ints so filters are numpy comparisons."""

    def __init__(self) -> None:
        self.of: dict[str, int] = {}
        self.names: list[str] = []

    def code(self, s: str) -> int:
        c = self.of.get(s)
        if c is None:
            c = self.of[s] = len(self.names)
            self.names.append(s)
        return c


@dataclass
class SearchIndex:
    config: SearchConfig = field(default_factory=SearchConfig)
    vectors: VectorIndex | None = None
    seq: int = 0
    """Last MEM_EVENTS sequence applied (0 when fed by hand)."""
    spill: Spill = field(default_factory=Spill)
    """Where what a seal freezes lives (postings, display rows): mapped files or the heap."""

    def __post_init__(self) -> None:
        self.bm25 = BM25Index(k1=self.config.k1, b=self.config.b, spill=self.spill)
        self.graph = EntityGraph(ents_of=DocEntities(self.spill), spill=self.spill)
        self.meta = MetaTable(self.spill)
        """What each slot's hit shows, packed (functions/search/tables.py)."""
        self.doc_of = IdSlots(self.id_of)
        """Record id -> slot of live documents (hashes, not strings: tables.py)."""
        self.alive = array("b")
        self.project = array("i")
        self.agent = array("i")
        self.kind = array("b")
        self.session = array("i")
        self.day = array("i")
        self.members: dict[int, array[int]] = {}
        """Session code -> its documents (removed ones included; the mask drops them)."""
        self.projects = _Codes()
        self.agents = _Codes()
        self.sessions = _Codes()
        self.pending_text: dict[int, str] = {}
        self.texts: dict[int, str] = {}
        """Texts of live documents, kept only while vectors are on (to re-embed)."""
        """Documents waiting for an embedding (doc -> text)."""
        self._version = 0
        self._cuts = 0
        """Removals so far: a scope made before one cannot grow by appends alone."""
        self._scopes: dict[tuple[object, ...], _Held] = {}
        self.verdicts: dict[str, list[str]] = {}
        """Record id -> reasons, for live records their write path held (`Record.trust`)."""
        self.decided: dict[str, list[str] | None] = {}
        """Record id -> reasons while a later decision holds it, None once one released it
        (functions/quarantine): a decision outlives a revision of the record."""
        self.held: set[int] = set()
        """Slots of live records held now: left out of every query unless asked for."""
        self._held_slots: np.ndarray = np.zeros(0, np.int64)
        self._sess_len: np.ndarray = np.zeros(0)
        self.shown: ShownRecords | None = None
        """The full record of observation slots, in a local file (the search worker's; None:
        hits read their records from KV)."""
        self.context = ContextIndex()
        """Per project: the best and newest records, counts and entities, what the session
        start reads (functions/search/context_index.py)."""

    def id_of(self, n: int) -> str | None:
        """The record id in slot `n`, by the table in place now (a snapshot load replaces it)."""
        return self.meta.id_of(n)

    def forget_scopes(self) -> None:
        """Drop the scopes held for queries: the index was replaced wholesale (a snapshot
        loaded) or its ranking settings changed, so each is made again when next asked."""
        self._version += 1
        self._scopes.clear()

    # ---- writes ------------------------------------------------------------------
    def add(self, record: Record) -> None:
        if isinstance(record, Memory) and record.supersedes:
            self.remove([record.supersedes])
        doc = document(record, self.config.fields)
        self.remove([doc.meta.id])
        self._insert(doc)
        n = len(self.meta) - 1
        if self.shown is not None and isinstance(record, Observation):
            self.shown.put(n, _encode(record))
        if record.trust is not None and record.trust.held:
            self.verdicts[doc.meta.id] = list(record.trust.reasons)
        else:
            self.verdicts.pop(doc.meta.id, None)
        held = self.held_reasons(doc.meta.id) is not None
        self.context.add(self, n, doc.meta, held)
        if held:
            self._hold({n}, set())

    def _insert(self, d: Document) -> None:
        n = len(self.meta)
        m = d.meta
        self.meta.append(m)
        self.doc_of[m.id] = n
        self.alive.append(1)
        self.project.append(self.projects.code(m.project))
        self.agent.append(self.agents.code(m.agent_id))
        self.kind.append(KINDS.index(m.kind))
        sc = self.sessions.code(f"{m.project}\x00{m.session_id}")
        self.session.append(sc)
        members = self.members.get(sc)
        if members is None:
            members = self.members[sc] = array("i")
        members.append(n)
        self.day.append(day_number(m.timestamp))
        self.bm25.add(n, d.tfs, d.length, self.project[n])
        self.graph.add(n, d.entities, self.project[n])
        if self.vectors is not None and self.vectors.enabled and d.text:
            self.pending_text[n] = d.text
            self.texts[n] = d.text
        self._version += 1

    def remove(self, ids: Iterable[str]) -> int:
        removed = 0
        for i in ids:
            n = self.doc_of.pop(i, None)
            if n is None:
                continue
            m = self.meta[n]
            if m is not None:
                self.context.remove(self, n, m)
            self.verdicts.pop(i, None)
            if n in self.held:
                self._hold(set(), {n})
            self.alive[n] = 0
            self.meta[n] = None
            if self.shown is not None:
                self.shown.drop(n)
            self.pending_text.pop(n, None)
            self.texts.pop(n, None)
            if self.vectors is not None:
                self.vectors.remove([n])
            removed += 1
        if removed:
            self._version += 1
            self._cuts += 1
        return removed

    def apply(self, event: MemEvent, seq: int = 0) -> None:
        """Apply one MEM_EVENTS message; `seq` is its stream sequence (kept for snapshots)."""
        if isinstance(event, ObservationAdded):
            # a second delivery (local apply, then the stream) must not take a new slot; a
            # revision (the compression model's rewrite) replaces the record
            if event.observation.revision or event.observation.id not in self.doc_of:
                self.add(event.observation)
        elif isinstance(event, MemoryAdded):
            self.add(event.memory)
        elif isinstance(event, SummaryAdded):
            self.add(event.summary)
        elif isinstance(event, RecordsRemoved):
            self.remove(event.ids)
            for i in event.ids:
                self.decided.pop(i, None)
        elif isinstance(event, QuarantineChanged):
            self.decide(event)
        if seq:
            self.seq = max(self.seq, seq)

    # ---- the quarantine ---------------------------------------------------------------
    def held_reasons(self, record_id: str) -> list[str] | None:
        """Why a record is held now (its write verdict, or a later decision); None: it is not."""
        if record_id in self.decided:
            return self.decided[record_id]
        return self.verdicts.get(record_id)

    def decide(self, event: QuarantineChanged) -> None:
        """A decision after the write: the records it holds leave every query, the ones it
        releases come back."""
        for i, why in event.held.items():
            self.decided[i] = list(why)
        for i in event.released:
            self.decided[i] = None
        on = {n for i in event.held if (n := self.doc_of.get(i)) is not None}
        off = {n for i in event.released if (n := self.doc_of.get(i)) is not None}
        self._hold(on, off - on)

    def _hold(self, on: set[int], off: set[int]) -> None:
        before = len(self.held)
        changed = bool(on - self.held) or bool(off & self.held)
        for n in on - self.held:
            if (m := self.meta[n]) is not None:
                self.context.hold(self, n, m)
        for n in off & self.held:
            if (m := self.meta[n]) is not None:
                self.context.release(self, n, m)
        self.held |= on
        self.held -= off
        if changed or len(self.held) != before:
            self._held_slots = np.fromiter(sorted(self.held), np.int64, len(self.held))
            # Scopes made before leave out other slots: each is made again.
            self._version += 1
            self._cuts += 1

    def reload_held(self) -> None:
        """The held slots from `verdicts` and `decided` (after a snapshot load)."""
        self.held = set()
        for i in {*self.verdicts, *self.decided}:
            n = self.doc_of.get(i)
            if n is not None and self.held_reasons(i) is not None:
                self.held.add(n)
        self._held_slots = np.fromiter(sorted(self.held), np.int64, len(self.held))
        self.forget_scopes()

    # ---- reads -------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.doc_of)

    def get(self, record_id: str) -> Meta | None:
        n = self.doc_of.get(record_id)
        return self.meta[n] if n is not None else None

    def shown_record(self, record_id: str) -> bytes | None:
        """The full record (JSON) of a live observation from the local file; None when the
        file does not hold it (no file, or indexed before it)."""
        if self.shown is None:
            return None
        n = self.doc_of.get(record_id)
        return self.shown.get(n) if n is not None else None

    def mask(
        self,
        project: str | None,
        agent_id: str | None,
        kinds: Iterable[str] | None,
        quarantined: bool = False,
    ) -> Mask:
        """The filter over every slot; `quarantined`: held records pass it too."""
        return self._mask(project, agent_id, kinds, 0, len(self.alive), quarantined)

    def _mask(
        self,
        project: str | None,
        agent_id: str | None,
        kinds: Iterable[str] | None,
        lo: int,
        hi: int,
        quarantined: bool = False,
    ) -> Mask:
        """The filter over slots lo..hi-1 (element by element what it is over them all)."""
        m = np.frombuffer(self.alive, dtype=np.int8)[lo:hi].astype(bool)
        if not quarantined and len(self._held_slots):
            hs = self._held_slots
            m[hs[(hs >= lo) & (hs < hi)] - lo] = False
        if project is not None:
            proj = np.frombuffer(self.project, dtype=np.int32)[lo:hi]
            p = self.projects.of.get(project, -1)
            pm = proj == p
            g = self.projects.of.get("")
            if g is not None and project:  # memories without a project are global
                kc = np.frombuffer(self.kind, dtype=np.int8)[lo:hi] == KINDS.index(KIND_MEMORY)
                pm |= (proj == g) & kc
            m &= pm
        if agent_id is not None:
            a = self.agents.of.get(agent_id, -1)
            m &= np.frombuffer(self.agent, dtype=np.int32)[lo:hi] == a
        if kinds is not None:
            codes = [KINDS.index(k) for k in kinds if k in KINDS]
            m &= np.isin(np.frombuffer(self.kind, dtype=np.int8)[lo:hi], codes)
        return m

    def _parts(self, project: str | None) -> tuple[int, ...] | None:
        if project is None:
            return None
        codes = [self.projects.of[p] for p in {project, ""} if p in self.projects.of]
        return tuple(sorted(codes))

    def _in_parts(self, parts: tuple[int, ...] | None, lo: int, hi: int) -> int:
        if parts is None:
            return hi - lo
        return int(np.isin(np.frombuffer(self.project, dtype=np.int32)[lo:hi], parts).sum())

    def _scope(
        self,
        project: str | None,
        agent_id: str | None,
        kinds: tuple[str, ...] | None,
        quarantined: bool = False,
    ) -> tuple[Scope, Scope]:
        key = (project, agent_id, kinds, quarantined)
        held = self._scopes.get(key)
        if held is not None and held.version == self._version:
            self._sess_len = held.lens
            return held.docs, held.sessions
        parts = self._parts(project)
        if held is not None and held.cuts == self._cuts and held.docs.parts == parts:
            # Only appends since: the held scope grows by the new slots instead of being
            # made again over every slot (a query right after each write, under ingest).
            made = self._grown(held, key, parts)
        else:
            made = self._made(key, parts)
        if len(self._scopes) > 64:
            self._scopes.clear()
        self._scopes[key] = made
        self._sess_len = made.lens
        return made.docs, made.sessions

    def scope(
        self, project: str | None, agent_id: str | None = None, kinds: tuple[str, ...] | None = None
    ) -> Scope:
        """The documents a query with these filters ranks (held for the next query as
        `search` holds it): what a benchmark hands `pruning.Pruned` to rank BM25 alone."""
        return self._scope(project, agent_id, kinds)[0]

    def _made(self, key: tuple[object, ...], parts: tuple[int, ...] | None) -> _Held:
        project, agent_id, kinds, quarantined = cast(_Key, key)
        m = self.mask(project, agent_id, kinds, quarantined)
        in_parts = self._in_parts(parts, 0, len(m))
        docs = self.bm25.scope(m, parts, in_parts)
        sess = np.frombuffer(self.session, dtype=np.int32)
        n_sess = len(self.sessions.names)
        lens: np.ndarray = np.bincount(
            sess[m], weights=self.bm25.lengths()[: len(m)][m], minlength=n_sess
        )
        present = np.bincount(sess[m], minlength=n_sess) > 0
        return _Held(
            self._version, self._cuts, len(m), in_parts, docs, _sessions(present, lens), lens
        )

    def _grown(self, held: _Held, key: tuple[object, ...], parts: tuple[int, ...] | None) -> _Held:
        """`held` plus the slots appended since, equal to `_made` bit for bit: the new slots
        come after the old ones in every array, so masks and numberings extend, and the
        session lengths go on summing in slot order (`np.add.at` adds one by one, as
        `bincount` does). Statistics (n, avgdl) are taken again over the whole scope."""
        project, agent_id, kinds, quarantined = cast(_Key, key)
        lo, hi = held.slots, len(self.alive)
        tail = self._mask(project, agent_id, kinds, lo, hi, quarantined)
        m = np.concatenate([held.docs.mask, tail])
        in_parts = held.in_parts + self._in_parts(parts, lo, hi)
        docs = self.bm25.scope(m, parts, in_parts)
        self.bm25.carry(held.docs, docs)
        new_ids = docs.numbering()[0][held.docs.n :]
        old_at = held.docs.by_position.get("session")
        sess = np.frombuffer(self.session, dtype=np.int32)
        if old_at is not None:
            docs.by_position["session"] = np.concatenate([old_at, sess[new_ids]])
        n_sess = len(self.sessions.names)
        lens = np.zeros(n_sess, np.float64)
        lens[: len(held.lens)] = held.lens
        present = np.zeros(n_sess, np.bool_)
        present[: len(held.sessions.mask)] = held.sessions.mask
        at = sess[new_ids]
        np.add.at(lens, at, self.bm25.lengths()[new_ids])
        present[at] = True
        return _Held(self._version, self._cuts, hi, in_parts, docs, _sessions(present, lens), lens)

    def _sessions_at(self, scope: Scope) -> np.ndarray:
        """The session of each position of the scope (see `Scope.numbering`)."""
        at = scope.by_position.get("session")
        if at is None:
            sess = np.frombuffer(self.session, dtype=np.int32)
            at = scope.by_position["session"] = sess[scope.numbering()[0]]
        return at

    def clauses(self, query: str) -> list[Clause]:
        toks = tokenize(query)
        counts = Counter(toks)
        last = toks[-1] if toks else ""
        known = self.bm25.has
        # Prefix completion for the word being typed (the last one) and for words the
        # index does not hold; a known word is matched exactly, which keeps queries cheap.
        return [
            Clause(
                t,
                float(c),
                synonyms(t) if self.config.synonyms else (),
                self.config.prefix and (t == last or not known(t)),
            )
            for t, c in counts.items()
        ]

    def streams(
        self,
        query: str,
        *,
        project: str | None = None,
        agent_id: str | None = None,
        kinds: Iterable[str] | None = None,
        limit: int = 10,
        query_vector: np.ndarray | None = None,
        quarantined: bool = False,
    ) -> dict[str, list[int]]:
        """The ranked documents of each stream, before fusion (a stream whose fusion weight
        is 0 is not computed); `quarantined`: held records are ranked too."""
        kt = tuple(sorted(kinds)) if kinds is not None else None
        scope, sscope = self._scope(project, agent_id, kt, quarantined)
        clauses = self.clauses(query)
        depth = max(min(self.config.depth, 3 * limit), 30, limit)
        streams: dict[str, list[int]] = {}
        with stream_span("bm25", **{"search.clauses": len(clauses)}) as sp:
            own, count, best = self._bm25(clauses, scope, depth)
            streams["bm25"] = found(sp, best)
        if clauses and self.config.fusion.session > 0:
            with stream_span("session") as sp:
                streams["session"] = found(sp, session_stream(
                    clauses, lambda t: self.bm25.matches(t, scope), count,
                    self._sessions_at(scope), scope, sscope, self._sess_len, self.members, own,
                    depth, self.config.session_depth, self.config.k1, self.config.b,
                ))  # fmt: skip
        if self.vectors is not None and query_vector is not None and self.vectors.enabled:
            with stream_span("vectors") as sp:
                streams["vector"] = found(sp, self.vectors.search(query_vector, scope.mask, depth))
        else:
            # Shown in the trace all the same: a reader sees the stream is off, not missing.
            with stream_span("vectors", **{"search.skipped": "no query vector (embeddings off)"}):
                pass
        if self.config.fusion.time > 0:
            with stream_span("time") as sp:
                day = np.frombuffer(self.day, dtype=np.int32)
                streams["time"] = found(sp, time_stream(query, day, scope, own, depth))
        if self.config.fusion.graph > 0:
            with stream_span("graph") as sp:
                streams["graph"] = found(sp, self.graph.search(
                    query, scope.mask, depth, scope.parts, scope.n, scope.entities,
                    scope.numbering(), scope.entity_links, scope.whole,
                ))  # fmt: skip
        else:
            with stream_span("graph", **{"search.skipped": "fusion weight 0"}):
                pass
        return streams

    def _bm25(
        self, clauses: list[Clause], scope: Scope, depth: int
    ) -> tuple[Own, Callable[[str], int], list[int]]:
        """The BM25 stream's `depth` best slots, with what the other streams read of it:
        each record's own score and each term's count of matches. A large scope is ranked
        by blocks (functions/search/pruning.py), a small one scored whole; both give the
        same scores and the same top, ties included."""
        if clauses and scope.n >= pruning.PRUNE_MIN:
            pruned = pruning.Pruned(self.bm25, clauses, scope)
            return pruned.at, pruned.df, pruned.top(depth).tolist()
        ids, pos = scope.numbering()  # dense scores are over the scope's positions
        scores = self.bm25.score(clauses, scope) if clauses else np.zeros(0)

        def own(slots: np.ndarray) -> np.ndarray:
            return scores[pos[slots]] if len(scores) else np.zeros(len(slots))

        def count(term: str) -> int:
            return len(self.bm25.matches(term, scope)[0])

        return own, count, ids[top(scores, depth)].tolist()

    def fuse(
        self, streams: dict[str, list[int]], limit: int, config: SearchConfig | None = None
    ) -> list[tuple[int, float]]:
        """Weighted RRF of the streams, then at most `per_session` of one session ahead;
        `config` (default: the index's) gives the weights, k and `per_session`."""
        c = config or self.config
        with stream_span("fusion", **{"search.streams": ",".join(streams)}) as sp:
            fused = rrf(streams, c.fusion, c.rrf_k)
            out = diversify(fused, _SessionView(self.session), c.per_session, limit)
            if sp is not None:
                sp.set_attribute("search.results", len(out))
            return out

    def search(
        self,
        query: str,
        *,
        project: str | None = None,
        agent_id: str | None = None,
        kinds: Iterable[str] | None = None,
        limit: int = 10,
        query_vector: np.ndarray | None = None,
        quarantined: bool = False,
    ) -> list[Hit]:
        streams = self.streams(
            query, project=project, agent_id=agent_id, kinds=kinds, limit=limit,
            query_vector=query_vector, quarantined=quarantined,
        )  # fmt: skip
        fusion = self.config.fusion
        best = sum(fusion.of(k) for k, v in streams.items() if v) / (self.config.rrf_k + 1)
        picked = [(n, s) for n, s in self.fuse(streams, limit)[:limit] if self.meta[n] is not None]
        wanted = {n for n, _ in picked}
        matched: dict[int, list[str]] = {n: [] for n in wanted}
        for name, ranked in streams.items():
            if fusion.of(name) > 0:
                for doc in set(ranked) & wanted:
                    matched[doc].append(name)
        out: list[Hit] = []
        ceiling = 1.0
        for n, s in picked:
            m = self.meta[n]
            assert m is not None
            ceiling = min(ceiling, s / (best or 1.0))
            out.append(
                Hit(id=m.id, kind=m.kind, session_id=m.session_id, project=m.project,
                    agent_id=m.agent_id, title=m.title, type=m.type, timestamp=m.timestamp,
                    importance=m.importance, score=round(ceiling, 4), matched=sorted(matched[n]))
            )  # fmt: skip
        return out

    def status(self) -> dict[str, object]:
        return {
            "documents": len(self.doc_of),
            "slots": len(self.meta),
            "terms": self.bm25.term_count(),
            "entities": len(self.graph.names),
            "vectors": self.vectors.count() if self.vectors is not None else 0,
            "pendingEmbeddings": len(self.pending_text),
            "held": len(self.held),
            "seq": self.seq,
            **(self.shown.status() if self.shown is not None else {}),
        }


_Key = tuple[str | None, str | None, tuple[str, ...] | None, bool]


@dataclass
class _Held:
    """A filter's scope as of `version`: its documents over the first `slots` slots, and
    its sessions with their lengths."""

    version: int
    cuts: int
    slots: int
    in_parts: int
    docs: Scope
    sessions: Scope
    lens: np.ndarray


def _sessions(present: Mask, lens: np.ndarray) -> Scope:
    return Scope(present, int(present.sum()), float(lens[present].mean()) if present.any() else 1.0)


class _SessionView:
    def __init__(self, sess: array[int]) -> None:
        self.sess = sess

    def __getitem__(self, doc: int) -> str:
        return str(self.sess[doc])
