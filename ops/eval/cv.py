"""Cross-validation of retrieval's tuning constants over the LoCoMo development conversations
(`make eval` runs it with `--cv`).

Leave one conversation out: for each fold the constants are chosen on the other four
conversations and the figures are reported on the one held out, so no reported figure
comes from the data its constants were chosen on. Two procedures over the same cached runs:

* joint: from the shipped values, every knob of ops/eval/knobs.py in turn is set to its
  best value on the training conversations when that beats the current one by more than
  MIN_GAIN (fusion knobs, then stream knobs, then field weights, then fusion again). The
  held-out figures of each fold's choice, pooled over the folds, are the cross-validated
  figures; beside them, the shipped constants' figures on the same questions.
* per knob: each knob alone tuned on the training conversations (the others as shipped),
  its choice scored on the held-out conversation against the shipped value and against
  the knob turned off. The verdict says what the folds would ship: `keep` when they choose
  the shipped value or the difference out of fold is under MIN_GAIN.

The objective is the mean of session R@5, turn R@5 and turn MRR over the questions; with
local embeddings it is the mean of the keyless and the hybrid objective, since one set of
constants serves both. Runs are cached per stream and the knobs that stream depends on, so
a fusion knob only re-fuses and a graph knob reruns the graph stream alone; embeddings are
cached on disk (`$XDG_CACHE_HOME/agentmemory/eval`).
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from functions.kernel.records import Observation
from functions.search.documents import FieldWeights, document
from functions.search.index import SearchIndex
from functions.search.vectors import LocalEmbedder, VectorIndex, chunks
from ops.eval import batch_fusion
from ops.eval.batch_fusion import Flat, flatten
from ops.eval.knobs import (
    KNOBS,
    NOT_EXERCISED,
    Knob,
    Values,
    applied,
    choices,
    config,
    index_key,
    relevant,
    shipped,
    stream_key,
)
from ops.eval.locomo_data import Conversation, session_of
from ops.settings import ops_settings

LIMIT = 50
MIN_GAIN = 0.001
"""Objective a change must win by (~0.1 point): less is noise on a few hundred questions."""
METRICS = ("session_r5", "turn_r5", "turn_mrr")
TEXT_STREAMS = ("bm25", "session", "time", "graph")
_PASSES = ("fusion", "stream", "index", "fusion")
"""The order knobs are tuned in: the cheap fusion knobs first and again last; field
weights (each a new index, so every stream again) after the stream knobs."""


class Embeddings:
    """MiniLM vectors of every text the runs need, kept in a file named for the texts."""

    def __init__(self, texts: Iterable[str], cache_dir: Path | None = None) -> None:
        unique = sorted(set(texts))
        digest = hashlib.sha256("\x00".join([LocalEmbedder.name, *unique]).encode()).hexdigest()
        cache = ops_settings().cache_home or Path.home() / ".cache"
        base = cache_dir or cache / "agentmemory" / "eval"
        path = base / f"minilm-{digest[:24]}.npy"
        if path.exists():
            vectors = np.load(path)
        else:
            vectors = LocalEmbedder().embed(unique)
            base.mkdir(parents=True, exist_ok=True)
            np.save(path, vectors)
        self.of = {t: vectors[i] for i, t in enumerate(unique)}
        self.dim = int(vectors.shape[1])


@dataclass
class Result:
    """One configuration's metric sums, per mode and conversation."""

    sums: dict[str, list[list[float]]]
    """mode -> conversation -> summed (session_r5, turn_r5, turn_mrr)."""
    counts: list[int]

    def figures(self, mode: str, convs: Sequence[int]) -> dict[str, float]:
        n = max(sum(self.counts[c] for c in convs), 1)
        out = {m: sum(self.sums[mode][c][i] for c in convs) / n for i, m in enumerate(METRICS)}
        out["objective"] = sum(out.values()) / len(METRICS)
        return {k: round(v, 4) for k, v in out.items()}

    def objective(self, convs: Sequence[int]) -> float:
        n = max(sum(self.counts[c] for c in convs), 1)
        per_mode = [
            sum(sum(self.sums[mode][c]) for c in convs) / n / len(METRICS) for mode in self.sums
        ]
        return sum(per_mode) / len(per_mode)


@dataclass
class Runs:
    """Every question through in-process indexes (one per set of field weights), with the
    ranked streams and each configuration's figures cached."""

    convs: list[Conversation]
    observations: list[Observation]
    embeddings: Embeddings | None = None
    stream_cache_size: int = 256
    _indexes: dict[tuple[Any, ...], SearchIndex] = field(default_factory=dict)
    _vector_index: SearchIndex | None = None
    _streams: dict[tuple[Any, ...], Flat] = field(default_factory=dict)
    _results: dict[tuple[Any, ...], Result] = field(default_factory=dict)
    evaluations: int = 0
    stream_runs: int = 0

    def __post_init__(self) -> None:
        self.modes = ("keyless", "hybrid") if self.embeddings is not None else ("keyless",)
        # a LoCoMo session is one session of the index: diversification and session
        # recall group by it
        self.session = np.array([session_of(o.event_id) for o in self.observations], np.int64)
        conv_of = {c.sample_id: i for i, c in enumerate(self.convs)}
        doc_of: dict[tuple[int, str], int] = {
            (conv_of[o.project], o.event_id): n for n, o in enumerate(self.observations)
        }
        self.questions = [(ci, q) for ci, c in enumerate(self.convs) for q in c.questions]
        n_docs, n_q = len(self.observations), len(self.questions)
        self.conv_of_q = np.array([ci for ci, _ in self.questions], np.int64)
        self.counts = np.bincount(self.conv_of_q, minlength=len(self.convs)).tolist()
        self.gold_turns = np.zeros(n_q * n_docs, np.bool_)
        self.gold_sessions = np.zeros((n_q, int(self.session.max()) + 1), np.bool_)
        for qi, (ci, q) in enumerate(self.questions):
            for t in q.gold_turns:
                if (ci, t) in doc_of:
                    self.gold_turns[qi * n_docs + doc_of[(ci, t)]] = True
            for s in q.gold_sessions:
                if s < self.gold_sessions.shape[1]:
                    self.gold_sessions[qi, s] = True

    # ---- indexes and streams ---------------------------------------------------------
    def _index(self, values: Values) -> SearchIndex:
        key = index_key(values)
        idx = self._indexes.get(key)
        if idx is None:
            if len(self._indexes) >= 2:
                self._indexes.pop(next(iter(self._indexes)))
            idx = self._indexes[key] = SearchIndex(config=config(values))
            for o in self.observations:
                idx.add(o)
        return idx

    def _vectors(self) -> SearchIndex:
        if self._vector_index is None:
            assert self.embeddings is not None
            idx = SearchIndex(vectors=VectorIndex())
            assert idx.vectors is not None
            idx.vectors.reset(LocalEmbedder.name, self.embeddings.dim)
            for o in self.observations:
                idx.add(o)
            for n, text in sorted(idx.pending_text.items()):
                idx.vectors.add(n, np.stack([self.embeddings.of[c] for c in chunks(text)]))
            idx.pending_text.clear()
            self._vector_index = idx
        return self._vector_index

    def streams(self, values: Values, names: Sequence[str]) -> dict[str, Flat]:
        """Each named stream's ranking for every question under `values`."""
        out: dict[str, Flat] = {}
        missing: list[str] = []
        for n in names:
            got = self._streams.get((n, *stream_key(values, n)))
            if got is None:
                missing.append(n)
            else:
                out[n] = got
        text = tuple(n for n in missing if n != "vector")
        if text:
            out |= self._run(self._index(values), values, text, None)
        if "vector" in missing:
            out |= self._run(self._vectors(), values, ("vector",), self.embeddings)
        for n in missing:
            if len(self._streams) >= self.stream_cache_size:
                self._streams.pop(next(iter(self._streams)))
            self._streams[(n, *stream_key(values, n))] = out[n]
        return out

    def _run(
        self, idx: SearchIndex, values: Values, names: tuple[str, ...], emb: Embeddings | None
    ) -> dict[str, Flat]:
        self.stream_runs += 1
        out: dict[str, list[list[int]]] = {n: [] for n in names}
        with applied(idx, values, names):
            for ci, q in self.questions:
                qv = emb.of[q.question] if emb is not None else None
                got = idx.streams(
                    q.question, project=self.convs[ci].sample_id, limit=LIMIT, query_vector=qv
                )
                for n in names:
                    out[n].append(got.get(n, []))
        return {n: flatten(lists) for n, lists in out.items()}

    # ---- figures ---------------------------------------------------------------------
    def result(self, values: Values) -> Result:
        key = tuple(values[k.name] for k in KNOBS)
        hit = self._results.get(key)
        if hit is not None:
            return hit
        self.evaluations += 1
        names = (*TEXT_STREAMS, "vector") if self.embeddings is not None else TEXT_STREAMS
        runs = self.streams(values, names)
        cfg = config(values)
        n_docs, n_q = len(self.observations), len(self.questions)
        sums: dict[str, list[list[float]]] = {}
        for mode in self.modes:
            used = {n: runs[n] for n in names if mode == "hybrid" or n != "vector"}
            fused = batch_fusion.fuse(
                used, cfg.fusion, cfg.rrf_k, cfg.per_session, LIMIT, n_docs, self.session
            )
            per_q = batch_fusion.metrics(
                fused, n_q, n_docs, self.gold_turns, self.gold_sessions, self.session
            )
            by_conv = [
                np.bincount(self.conv_of_q, weights=m, minlength=len(self.convs)) for m in per_q
            ]
            sums[mode] = [[float(m[c]) for m in by_conv] for c in range(len(self.convs))]
        res = self._results[key] = Result(sums, self.counts)
        return res


def embedded_texts(convs: Sequence[Conversation], observations: Iterable[Observation]) -> list[str]:
    """What the local-embedding runs embed: the questions and every document's chunks."""
    out = [q.question for c in convs for q in c.questions]
    for o in observations:
        out.extend(chunks(document(o, FieldWeights()).text))
    return out


def _best(runs: Runs, knob: Knob, cur: dict[str, Any], train: Sequence[int],
          base: float) -> tuple[Any, float]:  # fmt: skip
    """The knob's value that scores best on `train`: the current one unless another beats
    it by MIN_GAIN."""
    best_v, best_o = cur[knob.name], base + MIN_GAIN
    for v in choices(knob, cur):
        if v == cur[knob.name]:
            continue
        o = runs.result({**cur, knob.name: v}).objective(train)
        if o > best_o:
            best_v, best_o = v, o
    return best_v, (best_o if best_v != cur[knob.name] else base)


def tune(runs: Runs, start: Values, train: Sequence[int]) -> dict[str, Any]:
    cur = dict(start)
    best = runs.result(cur).objective(train)
    for level in _PASSES:
        for k in KNOBS:
            if k.level != level or not relevant(cur, k):
                continue
            if k.mode == "hybrid" and runs.embeddings is None:
                continue
            v, best = _best(runs, k, cur, train, best)
            cur[k.name] = v
    return cur


@dataclass
class Fold:
    held_out: str
    questions: int
    chosen: dict[str, Any]
    shipped: dict[str, dict[str, float]]
    """mode -> figures of the shipped constants on the held-out conversation."""
    tuned: dict[str, dict[str, float]]


@dataclass
class KnobReport:
    name: str
    shipped: Any
    choices: list[Any]
    delta_vs_shipped: float
    """Pooled held-out objective of the folds' choices minus the shipped value's."""
    delta_vs_off: float | None
    verdict: str


@dataclass
class CrossValidation:
    modes: tuple[str, ...]
    folds: list[Fold]
    knobs: list[KnobReport]
    pooled_shipped: dict[str, dict[str, float]]
    pooled_tuned: dict[str, dict[str, float]]
    seconds: float = 0.0
    evaluations: int = 0
    stream_runs: int = 0


def _pooled(runs: Runs, per_fold: Sequence[tuple[Values, int]]) -> dict[str, dict[str, float]]:
    """Held-out figures, each fold's conversation under its own values, pooled."""
    out: dict[str, dict[str, float]] = {}
    n = sum(runs.result(v).counts[c] for v, c in per_fold)
    for mode in runs.modes:
        sums = [0.0, 0.0, 0.0]
        for v, c in per_fold:
            for i, x in enumerate(runs.result(v).sums[mode][c]):
                sums[i] += x
        fig = {m: sums[i] / max(n, 1) for i, m in enumerate(METRICS)}
        fig["objective"] = sum(fig.values()) / len(METRICS)
        out[mode] = {k: round(x, 4) for k, x in fig.items()}
    return out


def _objective(figures: Mapping[str, Mapping[str, float]]) -> float:
    return sum(f["objective"] for f in figures.values()) / len(figures)


def _knob_report(runs: Runs, knob: Knob, base: dict[str, Any]) -> KnobReport:
    n = len(runs.convs)
    picks: list[tuple[Any, int]] = []
    for c in range(n):
        train = [i for i in range(n) if i != c]
        v, _ = _best(runs, knob, base, train, runs.result(base).objective(train))
        picks.append((v, c))
    tuned = _objective(_pooled(runs, [({**base, knob.name: v}, c) for v, c in picks]))
    ship = _objective(_pooled(runs, [(base, c) for c in range(n)]))
    delta_off = None
    if knob.neutral is not None:
        off = _objective(_pooled(runs, [({**base, knob.name: knob.neutral}, c) for c in range(n)]))
        delta_off = round(tuned - off, 4)
    top, votes = Counter(v for v, _ in picks).most_common(1)[0]
    if top != base[knob.name] and votes > n // 2 and tuned - ship >= MIN_GAIN:
        verdict = f"change -> {top}" + (" (off)" if top == knob.neutral else "")
    elif delta_off is not None and delta_off <= -MIN_GAIN and base[knob.name] != knob.neutral:
        verdict = f"off ({knob.neutral})"
    else:
        verdict = "keep"
    return KnobReport(knob.name, base[knob.name], [v for v, _ in picks],
                      round(tuned - ship, 4), delta_off, verdict)  # fmt: skip


def cross_validate(
    convs: list[Conversation], observations: list[Observation], embeddings: Embeddings | None
) -> CrossValidation:
    t0 = time.perf_counter()
    runs = Runs(convs, observations, embeddings)
    base = shipped()
    n = len(convs)
    folds: list[Fold] = []
    tuned: list[dict[str, Any]] = []
    for c in range(n):
        chosen = tune(runs, base, [i for i in range(n) if i != c])
        tuned.append(chosen)
        folds.append(
            Fold(
                held_out=convs[c].sample_id,
                questions=runs.result(base).counts[c],
                chosen={k: v for k, v in chosen.items() if v != base[k]},
                shipped={m: runs.result(base).figures(m, [c]) for m in runs.modes},
                tuned={m: runs.result(chosen).figures(m, [c]) for m in runs.modes},
            )
        )
    knobs = [k for k in KNOBS if k.mode == "keyless" or embeddings is not None]
    out = CrossValidation(
        modes=runs.modes,
        folds=folds,
        knobs=[_knob_report(runs, k, base) for k in knobs],
        pooled_shipped=_pooled(runs, [(base, c) for c in range(n)]),
        pooled_tuned=_pooled(runs, [(v, c) for c, v in enumerate(tuned)]),
    )
    out.seconds = round(time.perf_counter() - t0, 1)
    out.evaluations, out.stream_runs = runs.evaluations, runs.stream_runs
    return out


_COLS = ("session_r5", "turn_r5", "turn_mrr", "objective")


def _cells(f: Mapping[str, float]) -> str:
    return " | ".join(f"{f.get(k, 0):.3f}" for k in _COLS)


def report(cv: CrossValidation) -> str:
    lines: list[str] = []
    for mode in cv.modes:
        label = "keyless" if mode == "keyless" else "local embeddings"
        lines += [
            "",
            f"Cross-validation, leave one conversation out ({label}):",
            "",
            "| held out | n | shipped: session_r5 | turn_r5 | turn_mrr | objective "
            "| tuned on the other four: session_r5 | turn_r5 | turn_mrr | objective |"
            + (" constants chosen |" if mode == cv.modes[0] else ""),
            "|---" * (10 + (mode == cv.modes[0])) + "|",
        ]
        for f in cv.folds:
            row = f"| {f.held_out} | {f.questions} | {_cells(f.shipped[mode])} | "
            row += f"{_cells(f.tuned[mode])} |"
            if mode == cv.modes[0]:
                row += " " + (", ".join(f"{k}={v}" for k, v in f.chosen.items()) or "-") + " |"
            lines.append(row)
        mean = {
            which: {k: sum(getattr(f, which)[mode][k] for f in cv.folds) / len(cv.folds)
                    for k in _COLS}
            for which in ("shipped", "tuned")
        }  # fmt: skip
        tail = " |" if mode == cv.modes[0] else ""
        lines.append(f"| mean of folds | | {_cells(mean['shipped'])} | {_cells(mean['tuned'])} |"
                     + tail)  # fmt: skip
        total = sum(f.questions for f in cv.folds)
        lines.append(
            f"| pooled | {total} | {_cells(cv.pooled_shipped[mode])} | "
            f"{_cells(cv.pooled_tuned[mode])} |" + tail
        )
    lines += [
        "",
        "Per constant, tuned alone on the other four and scored on the one held out (objective:"
        " mean of session R@5, turn R@5, turn MRR" + (", keyless and local" if len(cv.modes) > 1
                                                        else "") + "):",
        "",
        "| constant | shipped | fold choices | Δ vs shipped | Δ vs off | verdict |",
        "|---|---|---|---|---|---|",
    ]  # fmt: skip
    for k in cv.knobs:
        off = "–" if k.delta_vs_off is None else f"{k.delta_vs_off:+.4f}"
        lines.append(
            f"| {k.name} | {k.shipped} | {', '.join(map(str, k.choices))} "
            f"| {k.delta_vs_shipped:+.4f} | {off} | {k.verdict} |"
        )
    lines += ["", "Not cross-validated (LoCoMo does not reach them):"]
    lines += [f"- {name}: {why}" for name, why in NOT_EXERCISED.items()]
    lines.append(
        f"\n(cross-validation: {cv.evaluations} configurations, {cv.stream_runs} stream runs,"
        f" {cv.seconds} s)"
    )
    return "\n".join(lines)


def summary(cv: CrossValidation) -> dict[str, object]:
    """The JSON fields of the cross-validation."""
    out: dict[str, object] = {
        "cv_folds": [
            {"heldOut": f.held_out, "questions": f.questions, "chosen": f.chosen,
             "shipped": f.shipped, "tuned": f.tuned}
            for f in cv.folds
        ],
        "cv_knobs": {
            k.name: {"shipped": k.shipped, "choices": k.choices, "deltaVsShipped":
                     k.delta_vs_shipped, "deltaVsOff": k.delta_vs_off, "verdict": k.verdict}
            for k in cv.knobs
        },
        "cv_seconds": cv.seconds,
    }  # fmt: skip
    for mode in cv.modes:
        p = "cv_" if mode == "keyless" else "cv_hybrid_"
        for m in METRICS:
            out[f"{p}{m}"] = cv.pooled_tuned[mode][m]
            out[f"{p}shipped_{m}"] = cv.pooled_shipped[mode][m]
    return out
