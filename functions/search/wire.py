"""Requests and responses of the search functions (camelCase on the wire, as upstream)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from functions.kernel.names import SOME_NAMES, TEXT, Names, at_least_one_of, names
from functions.search.settings import search_settings


def default_budget() -> int:
    """The context block's default size in tokens (TOKEN_BUDGET, 50..100000)."""
    return search_settings().token_budget


Kind = Literal["observation", "memory", "summary"]

Limit = Annotated[int, msgspec.Meta(ge=1, le=500)]
Query = Annotated[str, msgspec.Meta(max_length=10_000)]


class SearchIn(msgspec.Struct, rename="camel", kw_only=True):
    query: Query
    limit: Limit = 10
    project: str | None = None
    agent_id: str | None = None
    kinds: list[Kind] | None = None
    format: Literal["json", "full", "compact", "narrative"] = "json"
    """full / json: hits with their records; compact: hits only; narrative: also `text`."""
    token_budget: Annotated[int, msgspec.Meta(ge=1, le=1_000_000)] | None = msgspec.field(
        default=None, name="token_budget"
    )
    """Upstream's name, as its clients send it: results are kept while they fit."""
    include_quarantined: bool = False
    """Held records too (docs/SECURITY.md), each flagged `quarantined: true` with its reasons."""


class SmartSearchIn(msgspec.Struct, rename="camel", kw_only=True):
    query: Query = ""
    limit: Limit = 10
    project: str | None = None
    agent_id: str | None = None
    kinds: list[Kind] | None = None
    expand_ids: Names = msgspec.field(default_factory=list)
    format: str = "compact"
    token_budget: Annotated[int, msgspec.Meta(ge=1, le=1_000_000)] | None = msgspec.field(
        default=None, name="token_budget"
    )
    session_id: Annotated[str, msgspec.Meta(max_length=512)] = ""
    """The agent's session: its searches count for diagnostics/followup."""
    source: Annotated[str, msgspec.Meta(max_length=64)] = ""
    """`viewer` (or header X-Agentmemory-Source): not an agent's search, not counted."""
    include_quarantined: bool = False
    """Held records too (docs/SECURITY.md), each flagged `quarantined: true` with its reasons."""

    def __post_init__(self) -> None:
        self.expand_ids = names(self.expand_ids)


SmartSearchRequest = Annotated[
    SmartSearchIn,
    msgspec.Meta(extra_json_schema=at_least_one_of(query=TEXT, expandIds=SOME_NAMES)),
]
"""A query, or ids to expand."""


class CompactHit(msgspec.Struct, rename="camel", kw_only=True):
    obs_id: str
    session_id: str
    title: str
    type: str
    score: float
    """Relevance in [0, 1] (see functions.search.index.Hit)."""
    timestamp: str
    kind: str = "observation"
    matched: list[str] = msgspec.field(default_factory=list)
    """The retrievers that ranked it."""


class Staleness(msgspec.Struct, kw_only=True, omit_defaults=True):
    """On an answer the index gave without catching up with the stream (out of reach: a
    partition, a leader election; or behind past the fence's wait): `stale` true, and how
    far the answer reaches."""

    stale: bool = False
    indexed_seq: int | None = msgspec.field(default=None, name="indexedSeq")
    """The last MEM_EVENTS sequence the answer includes."""
    indexed_at: str | None = msgspec.field(default=None, name="indexedAt")
    """When that event was stored: writes acknowledged after it may be missing."""


class SmartSearchOut(Staleness, kw_only=True, omit_defaults=True):
    mode: str
    results: list[Any]


class SearchOut(Staleness, kw_only=True, omit_defaults=True):
    results: list[dict[str, Any]]
    total: int
    tokens_used: int | None = None
    """With `token_budget`: the estimated tokens of the results kept (upstream's fields)."""
    tokens_budget: int | None = None
    truncated: bool | None = None
    """With `token_budget`: whether results were left out to fit it."""
    text: str = ""
    """format=narrative: the hits as lines a model reads directly."""
    message: str = ""
    """Why nothing was found, when nothing was."""


class ContextIn(msgspec.Struct, rename="camel", kw_only=True):
    session_id: str = ""
    project: str = ""
    agent_id: str | None = None
    budget: Annotated[int, msgspec.Meta(ge=50, le=100_000)] = msgspec.field(
        default_factory=default_budget
    )
    """Default TOKEN_BUDGET (upstream's name; 2000), read when a request leaves it out."""
    query: str = ""


class ContextOut(msgspec.Struct, kw_only=True, omit_defaults=True):
    context: str
    blocks: list[dict[str, Any]]
    tokens: int
    left_out: list[str] = msgspec.field(default_factory=list, name="leftOut")
    """What was not ready before the caller's deadline (the context's last line says it
    too); absent when nothing was left out."""


class EnrichIn(msgspec.Struct, rename="camel", kw_only=True):
    session_id: str = ""
    files: Names = msgspec.field(default_factory=list)
    terms: Names = msgspec.field(default_factory=list)
    tool_name: str = ""
    project: str | None = None
    agent_id: str | None = None
    budget: Annotated[int, msgspec.Meta(ge=50, le=100_000)] = 800

    def __post_init__(self) -> None:
        self.files, self.terms = names(self.files), names(self.terms)


EnrichRequest = Annotated[
    EnrichIn, msgspec.Meta(extra_json_schema=at_least_one_of(files=SOME_NAMES, terms=SOME_NAMES))
]
"""Files or terms, at least one."""


class EnrichOut(msgspec.Struct, kw_only=True):
    context: str
    truncated: bool


Count = Annotated[int, msgspec.Meta(ge=0, le=500)]


class TimelineIn(msgspec.Struct, rename="camel", kw_only=True):
    """Two shapes. Upstream's: `anchor` (an ISO date or a keyword: the latest record that
    matches it) with `before` / `after` as counts of records around it. Ours: a window,
    `after` / `before` as ISO times, newest first, at most `limit`."""

    project: str | None = None
    session_id: str = ""
    agent_id: str | None = None
    limit: Limit = 50
    anchor: Annotated[str, msgspec.Meta(max_length=2000)] = ""
    before: Count | str = ""
    after: Count | str = ""

    @property
    def anchored(self) -> bool:
        return bool(self.anchor) or isinstance(self.before, int) or isinstance(self.after, int)


class TimelineOut(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    entries: list[dict[str, Any]]
    anchor: str = ""
    anchor_index: int | None = None
    """Position of the anchor record in `entries` (upstream's shape)."""
    reason: str = ""
    """Why there are no entries (no_match: nothing matches the anchor keyword)."""


class SearchStatusOut(msgspec.Struct, rename="camel", kw_only=True):
    """The read model of one search replica."""

    documents: int
    slots: int
    terms: int
    entities: int
    vectors: int
    pending_embeddings: int
    seq: int
    """The last MEM_EVENTS sequence applied."""
    lag: int
    """Events in the stream not applied yet."""
    snapshot_seq: int
    snapshot_age_seconds: float | None
    embedder: str
    shown_records: int = 0
    """Slots in the replica's file of hit records (functions/search/shown.py)."""
    shown_first_slot: int = 0
    shown_bytes: int = 0
    shown_dead_bytes: int = 0
    shown_file: str = ""
    """Empty when hits read their records from KV (no data dir, or the file is not ours)."""
    held: int = 0
    """Records the quarantine keeps out of every query (docs/SECURITY.md)."""


class ProfileIn(msgspec.Struct, rename="camel", kw_only=True):
    project: str = ""
    agent_id: str | None = None
    refresh: bool | str = False
    """Upstream sends 'true' to force a rebuild: the profile is always built fresh here."""


class ProfileOut(msgspec.Struct, rename="camel", kw_only=True):
    project: str
    observations: int
    memories: int
    sessions: int
    top_files: list[str]
    top_concepts: list[str]
    types: dict[str, int]
    last_activity: str
    top_commands: list[str] = msgspec.field(default_factory=list)
    recurring_errors: list[str] = msgspec.field(default_factory=list)
    conventions: list[str] = msgspec.field(default_factory=list)
