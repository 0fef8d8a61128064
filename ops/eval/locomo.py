"""LoCoMo retrieval evaluation (`make eval`): our search next to tantivy and bm25s.

Each conversation is a project, each LoCoMo session a session, each turn an observation
(`"<speaker>: <text>"` + ` [image: <caption>]`). Questions are searched within their
project, limit 50. Prints a markdown table and, last, one JSON line.

Modes: `--inproc` feeds `SearchIndex` directly with records shaped like the write path's
(fast, for tuning); `--through-engine` (default when the memory worker exists) ingests with
`mem::observe` on a real nats-server and queries `mem::smart-search`. `--cv` (what `make
eval` runs) then cross-validates every tuning constant of retrieval, leave one conversation
out, and prints the fold figures beside the usual ones (ops/eval/cv.py).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from functions.kernel.records import Observation
from functions.memory.compress import compress
from functions.search.index import SearchIndex
from functions.search.vectors import LocalEmbedder, VectorIndex
from ops.eval.baselines import run_baseline
from ops.eval.locomo_data import DEFAULT_DATA, Conversation, Scores, load, session_of

KEYS = (
    "session_r5",
    "session_r10",
    "session_all5",
    "session_mrr",
    "turn_r5",
    "turn_r10",
    "turn_all5",
    "turn_mrr",
)


def observation(conv: Conversation, i: int) -> Observation:
    """The record the write path makes of a turn sent as a `prompt_submit` observation."""
    t = conv.turns[i]
    c = compress("prompt_submit", {"prompt": t.text})
    return Observation(
        id=f"obs_{conv.sample_id}_{i}",
        session_id=f"{conv.sample_id}-s{t.session}",
        project=conv.sample_id,
        hook_type="prompt_submit",
        timestamp=t.timestamp,
        type=c.type,
        title=c.title,
        narrative=c.narrative,
        facts=c.facts,
        concepts=c.concepts,
        files=c.files,
        importance=c.importance,
        raw=c.raw,
        event_id=t.dia_id,
    )


def run_inproc(convs: list[Conversation], embedder: LocalEmbedder | None) -> Scores:
    index = SearchIndex(vectors=VectorIndex() if embedder else None)
    if embedder is not None and index.vectors is not None:
        index.vectors.reset(embedder.name, embedder.dim)
    dia: dict[str, str] = {}
    for conv in convs:
        for i in range(len(conv.turns)):
            o = observation(conv, i)
            dia[o.id] = o.event_id
            index.add(o)
    if embedder is not None and index.vectors is not None:
        from functions.search.embedding import embed_pending

        embed_pending(index, embedder)
    scores = Scores()
    for conv in convs:
        for q in conv.questions:
            qv = embedder.embed([q.question])[0] if embedder is not None else None
            hits = index.search(q.question, project=conv.sample_id, limit=50, query_vector=qv)
            turns = [dia[h.id] for h in hits if h.id in dia]
            scores.add(q, turns, [session_of(d) for d in turns])
    return scores


def table(results: dict[str, Scores]) -> str:
    lines = ["| system | " + " | ".join(KEYS) + " |", "|---" * (len(KEYS) + 1) + "|"]
    for name, sc in results.items():
        m = sc.mean()
        lines.append(f"| {name} | " + " | ".join(f"{m.get(k, 0):.3f}" for k in KEYS) + " |")
    cats = sorted(
        k for k in next(iter(results.values())).rows if k.startswith("cat") or k == "no_cat5"
    )
    lines += [
        "",
        "| system | group | n | session_r5 | turn_r5 | turn_mrr |",
        "|---|---|---|---|---|---|",
    ]
    for name, sc in results.items():
        for c in cats:
            m = sc.mean(c)
            n = len(sc.rows[c])
            lines.append(
                f"| {name} | {c} | {n} | {m['session_r5']:.3f} | {m.get('turn_r5', 0):.3f} | {m.get('turn_mrr', 0):.3f} |"
            )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument(
        "--inproc", action="store_true", help="feed SearchIndex directly (fast, for tuning)"
    )
    ap.add_argument("--no-local", action="store_true", help="skip the local-embedding run")
    ap.add_argument("--no-baselines", action="store_true")
    ap.add_argument(
        "--cv",
        action="store_true",
        help="also cross-validate every tuning constant, leave one conversation out",
    )
    args = ap.parse_args()
    convs = load(args.data)
    results: dict[str, Scores] = {}
    t0 = time.perf_counter()
    mode = "inproc" if args.inproc else "through-engine"
    if args.inproc:
        results["ours (keyless)"] = run_inproc(convs, None)
        if not args.no_local:
            results["ours (local)"] = run_inproc(convs, LocalEmbedder())
    else:
        from ops.eval.through_engine import run_through_engine

        results["ours (keyless)"] = run_through_engine(convs, "none")
        if not args.no_local:
            results["ours (local)"] = run_through_engine(convs, "local")
    if not args.no_baselines:
        results["tantivy"] = run_baseline("tantivy", convs)
        results["bm25s"] = run_baseline("bm25s", convs)
    print(table(results))
    cv = None
    if args.cv:
        from ops.eval.cv import Embeddings, cross_validate, embedded_texts, report

        observations = [observation(c, i) for c in convs for i in range(len(c.turns))]
        embeddings = None
        if not args.no_local:
            embeddings = Embeddings(embedded_texts(convs, observations))
        cv = cross_validate(convs, observations, embeddings)
        print(report(cv))
    ours = results["ours (keyless)"].mean()
    out: dict[str, object] = {
        "mode": mode,
        "questions": len(results["ours (keyless)"].rows["all"]),
        "session_r5": ours["session_r5"],
        "turn_r5": ours["turn_r5"],
        "session_mrr": ours["session_mrr"],
        "turn_mrr": ours["turn_mrr"],
    }
    if "ours (local)" in results:
        h = results["ours (local)"].mean()
        out |= {
            "hybrid_session_r5": h["session_r5"],
            "hybrid_turn_r5": h["turn_r5"],
            "hybrid_turn_mrr": h["turn_mrr"],
        }
    for name in ("tantivy", "bm25s"):
        if name in results:
            m = results[name].mean()
            out[f"{name}_session_r5"] = m["session_r5"]
            out[f"{name}_turn_r5"] = m["turn_r5"]
    if cv is not None:
        from ops.eval.cv import summary

        out |= summary(cv)
    out["seconds"] = round(time.perf_counter() - t0, 1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
