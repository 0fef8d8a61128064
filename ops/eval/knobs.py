"""Every tuning constant of retrieval, with the values cross-validation may choose from.

A knob is applied to an in-process `SearchIndex` the way the product reads it: a field of
`SearchConfig` (or of its `FieldWeights` / `FusionWeights`), an attribute of the index's
BM25 or graph object, or a module constant read at call time. `level` says what a change
costs: `index` rebuilds the index (field weights are applied when a record is added),
`stream` reruns the streams it names in `streams`, `fusion` only re-fuses ranked streams.

Constants LoCoMo cannot tell anything about are listed in NOT_EXERCISED, with the reason:
they are kept as they are, not tuned on data that never reaches them.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from functions.search import bm25 as bm25_module
from functions.search import ranking as streams_module
from functions.search import temporal as temporal_module
from functions.search.bm25 import BM25Index
from functions.search.documents import FieldWeights
from functions.search.entity_expansion import EntityGraph
from functions.search.fusion import FusionWeights
from functions.search.index import SearchConfig, SearchIndex

Values = Mapping[str, Any]

_BM25 = ("bm25", "session", "time")
"""Streams that read BM25 scores (the session stream scores sessions with BM25 too; the
time stream orders a day's records by theirs)."""


@dataclass(frozen=True)
class Knob:
    name: str
    level: str
    candidates: tuple[Any, ...]
    """Values to choose from (the product's own is always among them, see `choices`)."""
    neutral: Any = None
    """The value that turns what it weighs off (None: it has none)."""
    streams: tuple[str, ...] = ()
    """For a `stream` knob: the streams it changes."""
    mode: str = "keyless"
    """`hybrid`: only meaningful with vectors, tuned on the local-embedding runs."""
    note: str = ""


KNOBS: tuple[Knob, ...] = (
    # -- applied when a record is indexed: (title, raw, narrative, facts, concepts, files,
    # tool) weights of FieldWeights; raw (the turn's text) is the unit
    Knob("fields.title", "index", (0.0, 0.5, 1.0, 2.0), 0.0),
    Knob("fields.concepts", "index", (0.0, 0.5, 1.0, 2.0), 0.0),
    Knob("fields.narrative", "index", (0.0, 1.0, 2.0), 0.0),
    # -- BM25 and its query expansion
    Knob("k1", "stream", (0.15, 0.2, 0.3, 0.45, 0.6, 0.9, 1.2), streams=_BM25),
    Knob("b", "stream", (0.1, 0.2, 0.3, 0.5, 0.75, 0.9), streams=_BM25),
    Knob("bm25.synonym_weight", "stream", (0.0, 0.3, 0.6, 0.9), 0.0, _BM25),
    Knob("bm25.prefix_weight", "stream", (0.0, 0.2, 0.4, 0.6), 0.0, _BM25),
    Knob("bm25.ALT_CAP", "stream", (0.25, 0.5, 1.0), streams=_BM25),
    Knob("bm25.PREFIX_MIN_LEN", "stream", (3, 4, 5), streams=_BM25),
    Knob("bm25.PREFIX_MAX_EXPANSIONS", "stream", (4, 12, 32), streams=_BM25),
    # -- the other streams
    Knob("session_depth", "stream", (4, 8, 12, 20), streams=("session",)),
    Knob("streams.SESSION_MAX_SHARE", "stream", (0.25, 0.5, 1.0), streams=("session",)),
    Knob("temporal.AFTER_DAYS", "stream", (0, 3, 10, 20), streams=("time",)),
    Knob("graph.max_hops", "stream", (1, 2, 3), streams=("graph",)),
    Knob("graph.fanout", "stream", (2, 4, 8, 16), streams=("graph",)),
    Knob("graph.hop_decay", "stream", (0.2, 0.35, 0.6), streams=("graph",)),
    Knob("graph.max_share", "stream", (0.05, 0.1, 0.2), streams=("graph",)),
    Knob("graph.sample", "stream", (32, 64, 128), streams=("graph",)),
    Knob("depth", "stream", (50, 100, 150), streams=("bm25", "session", "time", "graph", "vector")),
    # -- fusion (BM25's weight is the unit)
    Knob("fusion.session", "fusion", (0.0, 0.25, 0.5, 0.75, 1.0), 0.0),
    Knob("fusion.graph", "fusion", (0.0, 0.1, 0.2, 0.4), 0.0),
    Knob("fusion.time", "fusion", (0.0, 0.75, 1.5, 3.0), 0.0),
    Knob("fusion.agreement", "fusion", (0.0, 0.25, 0.5, 1.0), 0.0),
    Knob(
        "fusion.agreement_depth", "fusion", (10, 20, 40), note="only read when fusion.agreement > 0"
    ),
    Knob("rrf_k", "fusion", (5, 10, 15, 30, 60, 120)),
    Knob("per_session", "fusion", (0, 2, 3, 5), 0),
    Knob("fusion.vector", "fusion", (0.0, 0.25, 0.5, 0.75, 1.0, 1.5), 0.0, mode="hybrid"),
)
BY_NAME = {k.name: k for k in KNOBS}

NOT_EXERCISED: dict[str, str] = {
    "fields.raw": "the unit the other field weights are relative to",
    "fusion.bm25": "the unit the other stream weights are relative to",
    "fields.facts, fields.files, fields.tool": "LoCoMo turns are prompts: no facts, files or tool",
    "vectors.CHUNK_WORDS, vectors.CHUNK_OVERLAP": "every LoCoMo turn fits in one chunk",
    "FLOOR_SAMPLE, DENSE_*": "speed switches: rankings are equal either way (tests/search/test_caches.py)",
}


def shipped() -> dict[str, Any]:
    """Every knob's value as the product ships it (read from the code's defaults)."""
    sources: dict[str, Any] = {
        "fields": FieldWeights(),
        "fusion": FusionWeights(),
        "graph": EntityGraph(),
        "streams": streams_module,
        "temporal": temporal_module,
    }
    cfg = SearchConfig()
    out: dict[str, Any] = {}
    for k in KNOBS:
        head, _, attr = k.name.partition(".")
        if head == "bm25":
            out[k.name] = getattr(bm25_module if attr.isupper() else BM25Index(), attr)
        elif attr:
            out[k.name] = getattr(sources[head], attr)
        else:
            out[k.name] = getattr(cfg, k.name)
    if not cfg.synonyms:
        out["bm25.synonym_weight"] = 0.0
    if not cfg.prefix:
        out["bm25.prefix_weight"] = 0.0
    return out


def choices(knob: Knob, values: Values) -> tuple[Any, ...]:
    c = knob.candidates
    return c if values[knob.name] in c else (*c, values[knob.name])


def relevant(values: Values, knob: Knob) -> bool:
    """False when the knob's value cannot change anything under the others."""
    if knob.name == "fusion.agreement_depth":
        return bool(values["fusion.agreement"] > 0)
    return True


def config(values: Values, streams: tuple[str, ...] | None = None) -> SearchConfig:
    """The SearchConfig of `values`. With `streams`, the fusion weights only say which
    streams to compute (SearchIndex.streams skips a stream of weight 0)."""
    fields = FieldWeights(
        title=values["fields.title"],
        concepts=values["fields.concepts"],
        narrative=values["fields.narrative"],
    )
    if streams is None:
        fusion = FusionWeights(
            session=values["fusion.session"],
            vector=values["fusion.vector"],
            graph=values["fusion.graph"],
            time=values["fusion.time"],
            agreement=values["fusion.agreement"],
            agreement_depth=values["fusion.agreement_depth"],
        )
    else:
        fusion = FusionWeights(
            session=float("session" in streams),
            graph=float("graph" in streams),
            time=float("time" in streams),
        )
    return SearchConfig(
        fields=fields,
        fusion=fusion,
        per_session=values["per_session"],
        depth=values["depth"],
        session_depth=values["session_depth"],
        k1=values["k1"],
        b=values["b"],
        prefix=values["bm25.prefix_weight"] > 0,
        synonyms=values["bm25.synonym_weight"] > 0,
        rrf_k=values["rrf_k"],
    )


@contextlib.contextmanager
def applied(index: SearchIndex, values: Values, streams: tuple[str, ...]) -> Iterator[None]:
    """`index` set up to compute `streams` under `values`: its config, the attributes of its
    BM25 and graph objects, and the module constants (restored on exit). The index's
    per-scope caches are dropped: they hold results of the old settings."""
    index.config = dataclasses.replace(config(values, streams), fields=index.config.fields)
    index.bm25.k1, index.bm25.b = values["k1"], values["b"]
    index.bm25.synonym_weight = values["bm25.synonym_weight"]
    index.bm25.prefix_weight = values["bm25.prefix_weight"]
    for attr in ("max_hops", "fanout", "hop_decay", "max_share", "sample"):
        setattr(index.graph, attr, values[f"graph.{attr}"])
    index.forget_scopes()
    modules = {"bm25": bm25_module, "streams": streams_module, "temporal": temporal_module}
    saved: list[tuple[Any, str, Any]] = []
    for name, value in values.items():
        mod, _, attr = name.partition(".")
        if mod in modules and attr.isupper():
            saved.append((modules[mod], attr, getattr(modules[mod], attr)))
            setattr(modules[mod], attr, value)
    try:
        yield
    finally:
        for mod_, attr, old in saved:
            setattr(mod_, attr, old)
        index.forget_scopes()


def index_key(values: Values) -> tuple[Any, ...]:
    return tuple(values[k.name] for k in KNOBS if k.level == "index")


def stream_key(values: Values, stream: str) -> tuple[Any, ...]:
    """What one stream's rankings depend on."""
    own = tuple(values[k.name] for k in KNOBS if k.level == "stream" and stream in k.streams)
    if stream in ("graph", "vector"):  # built from entities and texts: no field weight
        return own
    return index_key(values) + own
