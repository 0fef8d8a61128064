"""Facets: `dimension:value` tags on any record (memory, observation, lesson, session,
action...), queried with AND (`matchAll`) and OR (`matchAny`) logic.

Key `<target key>.<facet key>`: a record's facets are one subject filter away, and tagging
the same `dimension:value` twice is one KV create, so it is stored once across replicas.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter, defaultdict
from typing import TYPE_CHECKING, Annotated, Any, Literal

import msgspec

from engine import FunctionError, Tool, operation
from functions.kernel.clock import now_iso
from functions.kernel.ids import kv_key, new_id
from functions.kernel.names import NONBLANK, at_least_one_of, names
from functions.kernel.owned import OwnedService, routes
from functions.kernel.records import (
    FACETS_BUCKET,
    LESSONS_BUCKET,
    Facet,
    Memory,
    Session,
)
from functions.kernel.scrub import scrub
from functions.kernel.store import StoreOwner
from functions.kernel.views import as_view, view, wire_of

# To the type checker a view is its record (the same attributes).
if TYPE_CHECKING:
    FacetView = Facet
else:
    FacetView = view(Facet)
TargetType = Literal["memory", "observation", "lesson", "session", "action", "insight", "summary"]
Word = Annotated[str, msgspec.Meta(min_length=1, max_length=200, pattern=NONBLANK)]
_PAIR = r"[^:,\s][^:,]*:[^,]*[^,\s]"
Pair = Annotated[str, msgspec.Meta(pattern=rf"^\s*{_PAIR}\s*$")]
Pairs = (
    list[Pair] | Annotated[str, msgspec.Meta(pattern=rf"^\s*(?:{_PAIR}\s*(?:,\s*{_PAIR}\s*)*)?$")]
)
"""dimension:value pairs: a list, or upstream's comma-separated string."""
SOME_PAIRS: dict[str, Any] = {
    "anyOf": [{"type": "array", "minItems": 1}, {"type": "string", "pattern": "[^,\\s]"}]
}
_SAFE = re.compile(r"^[-_=a-zA-Z0-9]{1,200}$")


def target_key(target_id: str) -> str:
    """A key token for any id (no dots, so a record's facets share one prefix)."""
    if _SAFE.match(target_id):
        return target_id
    return "_h_" + hashlib.sha256(target_id.encode()).hexdigest()[:40]


def facet_key(target_id: str, dimension: str, value: str) -> str:
    h = hashlib.sha256(f"{dimension}\x1f{value}".encode()).hexdigest()[:24]
    return f"{target_key(target_id)}.{h}"


def _pair(text: str, field: str) -> str:
    dim, sep, val = text.partition(":")
    if not sep or not dim.strip() or not val.strip():
        raise FunctionError(
            "BAD_REQUEST", f"expected dimension:value, got {text[:80]!r}", field=field
        )
    return f"{dim.strip()}:{val.strip()}"


class FacetTagIn(msgspec.Struct, rename="camel", kw_only=True):
    target_id: Word
    dimension: Word
    value: Word
    target_type: TargetType = "memory"


class FacetUntagIn(msgspec.Struct, rename="camel", kw_only=True):
    target_id: Word
    dimension: Word
    value: str | None = None
    """Only this value; every value of the dimension when absent."""


class FacetQueryIn(msgspec.Struct, rename="camel", kw_only=True):
    match_all: Pairs = msgspec.field(default_factory=list)
    """dimension:value pairs that must all be present (AND)."""
    match_any: Pairs = msgspec.field(default_factory=list)
    """dimension:value pairs of which one must be present (OR)."""
    target_type: TargetType | Literal[""] = ""
    limit: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 50

    def __post_init__(self) -> None:
        self.match_all = [_pair(p, "matchAll") for p in names(self.match_all)]
        self.match_any = [_pair(p, "matchAny") for p in names(self.match_any)]


FacetQueryRequest = Annotated[
    FacetQueryIn,
    msgspec.Meta(extra_json_schema=at_least_one_of(matchAll=SOME_PAIRS, matchAny=SOME_PAIRS)),
]
"""matchAll or matchAny, at least one."""


class FacetGetIn(msgspec.Struct, rename="camel", kw_only=True):
    target_id: Word


class FacetStatsIn(msgspec.Struct, rename="camel", kw_only=True):
    target_type: TargetType | Literal[""] = ""


class FacetTagOut(msgspec.Struct, kw_only=True):
    success: bool
    facet: FacetView
    skipped: bool = False
    """True when the record already had this tag."""


class Removed(msgspec.Struct, kw_only=True):
    success: bool
    removed: int


class Match(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    target_id: str
    target_type: str
    matched_facets: list[str]
    record: dict[str, Any] | None = None
    """The tagged memory, observation, lesson or session, when it is ours and still stored."""


class FacetQueryOut(msgspec.Struct, kw_only=True):
    success: bool
    results: list[Match]
    total: int


class Dimension(msgspec.Struct, kw_only=True):
    dimension: str
    values: list[str]


class FacetGetOut(msgspec.Struct, rename="camel", kw_only=True):
    success: bool
    target_id: str
    dimensions: list[Dimension]


class ValueCount(msgspec.Struct, kw_only=True):
    value: str
    count: int


class DimensionStats(msgspec.Struct, kw_only=True):
    dimension: str
    values: list[ValueCount]


class FacetStatsOut(msgspec.Struct, rename="camel", kw_only=True):
    success: bool
    dimensions: list[DimensionStats]
    total_facets: int


rest = routes("facets")


class FacetService(OwnedService[StoreOwner]):
    BUCKET = FACETS_BUCKET

    async def record(self, target_type: str, target_id: str) -> dict[str, Any] | None:
        """The tagged record as stored (camelCase view), for the types this service keeps."""
        st = self.store
        found: Any = None
        if target_type == "memory":
            found = await st.get(st.memories, target_id, Memory)
        elif target_type == "observation":
            found = await st.get_observation(target_id)
        elif target_type == "session":
            found = await st.get(st.sessions, target_id, Session)
        elif target_type == "lesson":
            found = await (await st.client.bucket(LESSONS_BUCKET)).get(kv_key(target_id))
            return found if isinstance(found, dict) else None
        else:
            return None
        if found is None:
            return None
        return wire_of(found)

    async def all(self) -> list[Facet]:
        return [f async for _, f in (await self.bucket()).scan(">", Facet)]

    # ---- operations ------------------------------------------------------------------
    @operation(
        "mem::facet-tag",
        description="Attach a structured tag (dimension:value) to a memory, observation, "
        "lesson, session or action for multi-dimensional categorization.",
        http=rest("POST", "facets"),
        tool=Tool("memory_facet_tag"),
    )
    async def facet_tag(self, req: FacetTagIn) -> FacetTagOut:
        dimension, value = scrub(req.dimension.strip()), scrub(req.value.strip())
        if req.target_type in ("memory", "observation", "session", "lesson") and (
            await self.record(req.target_type, req.target_id) is None
        ):
            raise FunctionError(
                "NOT_FOUND", f"no {req.target_type} {req.target_id}", field="targetId"
            )
        facet = Facet(
            id=new_id("fct"),
            target_id=req.target_id,
            target_type=req.target_type,
            dimension=dimension,
            value=value,
            created_at=now_iso(),
        )
        st = await self.bucket()
        key = facet_key(req.target_id, dimension, value)
        if await st.create(key, facet) is None:
            existing: Facet | None = await st.get(key, Facet)
            return FacetTagOut(
                success=True, facet=as_view(existing or facet, FacetView), skipped=True
            )
        return FacetTagOut(success=True, facet=as_view(facet, FacetView))

    @operation(
        "mem::facet-untag",
        description="Remove a record's tags of one dimension (or one dimension:value)",
        http=rest("POST", "facets/remove"),
    )
    async def facet_untag(self, req: FacetUntagIn) -> Removed:
        st = await self.bucket()
        removed = 0
        async for key, f in st.scan(f"{target_key(req.target_id)}.>", Facet):
            if f.dimension == req.dimension and (req.value is None or f.value == req.value):
                await st.delete(key)
                removed += 1
        return Removed(success=True, removed=removed)

    @operation(
        "mem::facet-query",
        description="Query records by facet tags with AND/OR logic, e.g. every memory tagged "
        "priority:urgent AND team:backend.",
        http=rest("POST", "facets/query"),
        tool=Tool("memory_facet_query"),
    )
    async def facet_query(self, req: FacetQueryRequest) -> FacetQueryOut:
        if not req.match_all and not req.match_any:
            raise FunctionError(
                "BAD_REQUEST",
                "give matchAll or matchAny (dimension:value pairs)",
                field="matchAll",
            )
        tags: dict[str, set[str]] = defaultdict(set)
        types: dict[str, str] = {}
        for f in await self.all():
            if req.target_type and f.target_type != req.target_type:
                continue
            tags[f.target_id].add(f"{f.dimension}:{f.value}")
            types[f.target_id] = f.target_type
        out: list[Match] = []
        for tid in sorted(tags):
            have = tags[tid]
            if req.match_all and not all(p in have for p in req.match_all):
                continue
            anyhit = [p for p in req.match_any if p in have]
            if req.match_any and not anyhit:
                continue
            matched = list(dict.fromkeys([*req.match_all, *anyhit]))
            out.append(Match(target_id=tid, target_type=types[tid], matched_facets=matched))
        picked = out[: req.limit]
        for m in picked:
            m.record = await self.record(m.target_type, m.target_id)
        return FacetQueryOut(success=True, results=picked, total=len(out))

    @operation(
        "mem::facet-get",
        description="A record's facets, by dimension (?targetId=)",
        http=rest("GET", "facets"),
    )
    async def facet_get(self, req: FacetGetIn) -> FacetGetOut:
        dims: dict[str, list[str]] = defaultdict(list)
        async for _, f in (await self.bucket()).scan(f"{target_key(req.target_id)}.>", Facet):
            dims[f.dimension].append(f.value)
        return FacetGetOut(
            success=True,
            target_id=req.target_id,
            dimensions=[Dimension(dimension=d, values=sorted(v)) for d, v in sorted(dims.items())],
        )

    @operation(
        "mem::facet-stats",
        description="Facet counts by dimension and value (?targetType=)",
        http=rest("GET", "facets/stats"),
    )
    async def facet_stats(self, req: FacetStatsIn) -> FacetStatsOut:
        counts: dict[str, Counter[str]] = defaultdict(Counter)
        total = 0
        for f in await self.all():
            if req.target_type and f.target_type != req.target_type:
                continue
            counts[f.dimension][f.value] += 1
            total += 1
        return FacetStatsOut(
            success=True,
            dimensions=[
                DimensionStats(
                    dimension=d,
                    values=[ValueCount(value=v, count=n) for v, n in c.most_common()],
                )
                for d, c in sorted(counts.items())
            ],
            total_facets=total,
        )
