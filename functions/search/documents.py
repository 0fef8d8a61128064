"""How a stored record becomes an indexable document: weighted fields and display metadata."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import msgspec

from functions.kernel.records import Memory, Observation, SessionSummary
from functions.kernel.text import clip
from functions.search.analysis import entities, tokenize

Record = Observation | Memory | SessionSummary

KIND_OBSERVATION = "observation"
KIND_MEMORY = "memory"
KIND_SUMMARY = "summary"
KINDS = (KIND_OBSERVATION, KIND_MEMORY, KIND_SUMMARY)


@dataclass(frozen=True)
class FieldWeights:
    title: float = 1.0
    facts: float = 1.0
    concepts: float = 1.0
    files: float = 1.0
    narrative: float = 1.0
    raw: float = 1.0
    """Source text (scrubbed); the narrative only adds the words it lacks."""
    tool: float = 0.5


class Meta(msgspec.Struct, array_like=True):
    """What a hit shows without a KV read; stored as is in snapshots (compact arrays)."""

    id: str
    kind: str
    project: str
    agent_id: str
    session_id: str
    timestamp: str
    title: str
    type: str
    importance: int


@dataclass
class Document:
    """A record as the index takes it: what a hit shows (`meta`) and what is indexed."""

    meta: Meta
    tfs: dict[str, float]
    length: float
    text: str
    """What an embedding model reads."""
    entities: list[str]


def summary_id(session_id: str) -> str:
    return f"summary:{session_id}"


def _weigh(tf: dict[str, float], tokens: list[str], w: float) -> float:
    if w <= 0 or not tokens:
        return 0.0
    # Counter counts in C; the Python loop then runs once per distinct term.
    for t, n in Counter(tokens).items():
        tf[t] = tf.get(t, 0.0) + w * n
    return w * len(tokens)


def _fields(
    weights: FieldWeights,
    title: str,
    narrative: str,
    raw: str,
    facts: list[str],
    concepts: list[str],
    files: list[str],
    tool: str,
) -> tuple[dict[str, float], float]:
    tf: dict[str, float] = {}
    length = 0.0
    length += _weigh(tf, tokenize(title), weights.title)
    # The narrative is usually derived from the source text (often a truncated copy of
    # it): the source is indexed whole, and the narrative adds only the words it lacks,
    # so a turn is neither cut at the narrative's cap nor counted twice.
    body = tokenize(raw)
    seen = set(body)
    length += _weigh(tf, body, weights.raw)
    length += _weigh(tf, [t for t in tokenize(narrative) if t not in seen], weights.narrative)
    length += _weigh(tf, tokenize(" \n".join(facts)), weights.facts)
    length += _weigh(tf, tokenize(" \n".join(concepts)), weights.concepts)
    length += _weigh(tf, tokenize(" \n".join(files)), weights.files)
    length += _weigh(tf, tokenize(tool), weights.tool)
    return dict(tf), length


def document(record: Record, weights: FieldWeights) -> Document:
    if isinstance(record, Observation):
        tfs, length = _fields(
            weights,
            record.title,
            record.narrative,
            record.raw,
            record.facts,
            record.concepts,
            record.files,
            record.tool_name,
        )
        text = "\n".join(
            x for x in (record.title, record.narrative or record.raw, *record.facts) if x
        )
        ents = [*(f.lower() for f in record.files), *(c.lower() for c in record.concepts)]
        ents += entities(f"{record.title}\n{record.narrative}")
        return Document(
            Meta(
                record.id,
                KIND_OBSERVATION,
                record.project,
                record.agent_id,
                record.session_id,
                record.timestamp,
                record.title,
                record.type,
                record.importance,
            ),
            tfs,
            length,
            text,
            ents,
        )
    if isinstance(record, Memory):
        tfs, length = _fields(
            weights, record.title, record.content, "", [], record.concepts, record.files, ""
        )
        text = "\n".join(x for x in (record.title, record.content) if x)
        ents = [*(f.lower() for f in record.files), *(c.lower() for c in record.concepts)]
        ents += entities(record.content)
        return Document(
            Meta(
                record.id,
                KIND_MEMORY,
                record.project,
                record.agent_id,
                "",
                record.updated_at or record.created_at,
                record.title or clip(record.content, 80),
                record.type,
                8 if record.pinned else 6,
            ),
            tfs,
            length,
            text,
            ents,
        )
    tfs, length = _fields(
        weights,
        record.title,
        record.narrative,
        "",
        record.decisions,
        record.concepts,
        record.files,
        "",
    )
    text = "\n".join(x for x in (record.title, record.narrative, *record.decisions) if x)
    ents = [*(f.lower() for f in record.files), *(c.lower() for c in record.concepts)]
    return Document(
        Meta(
            summary_id(record.session_id),
            KIND_SUMMARY,
            record.project,
            record.agent_id,
            record.session_id,
            record.created_at,
            record.title,
            "summary",
            7,
        ),
        tfs,
        length,
        text,
        ents,
    )
