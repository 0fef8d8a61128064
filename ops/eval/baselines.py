"""BM25 anchors run on the same text in the same run: tantivy (en_stem) and bm25s (PyStemmer).

One document per turn for turn level, one per session (its turns joined) for session level.
"""

from __future__ import annotations

from collections.abc import Callable

import bm25s
import Stemmer
import tantivy

from ops.eval.locomo_data import Conversation, Scores

Ranker = Callable[[str, int], list[int]]


def tantivy_ranker(texts: list[str]) -> Ranker:
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("body", stored=False, tokenizer_name="en_stem")
    sb.add_integer_field("n", stored=True, indexed=False)
    schema = sb.build()
    index = tantivy.Index(schema)
    writer = index.writer(heap_size=50_000_000, num_threads=1)
    for i, t in enumerate(texts):
        writer.add_document(tantivy.Document(body=t, n=i))
    writer.commit()
    index.reload()
    searcher = index.searcher()

    def rank(query: str, k: int) -> list[int]:
        q = index.parse_query_lenient(query, ["body"])[0]
        hits = searcher.search(q, k).hits
        return [int(searcher.doc(addr)["n"][0]) for _score, addr in hits]

    return rank


def bm25s_ranker(texts: list[str]) -> Ranker:
    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False),
        show_progress=False,
    )

    def rank(query: str, k: int) -> list[int]:
        toks = bm25s.tokenize([query], stopwords="en", stemmer=stemmer, show_progress=False)
        if not toks.vocab:
            return []
        docs, _ = retriever.retrieve(toks, k=min(k, len(texts)), show_progress=False)
        return [int(d) for d in docs[0]]

    return rank


def run_baseline(name: str, convs: list[Conversation]) -> Scores:
    make = tantivy_ranker if name == "tantivy" else bm25s_ranker
    scores = Scores()
    for conv in convs:
        sessions = conv.sessions()
        order = sorted(sessions)
        session_rank = make([" ".join(t.text for t in sessions[s]) for s in order])
        turn_rank = make([t.text for t in conv.turns])
        for q in conv.questions:
            turns = [conv.turns[i].dia_id for i in turn_rank(q.question, 50)]
            sess = [order[i] for i in session_rank(q.question, 50)]
            scores.add(q, turns, sess)
    return scores
