"""What diagnostics takes and answers (`mem::diagnose`, `mem::heal`,
`mem::diagnostic::followup-stats`), and what it reads of the services it asks over the
bus."""

from __future__ import annotations

from typing import Annotated, Literal, get_args

import msgspec

from functions.kernel.clock import Clocked
from functions.kernel.names import choices_pattern, chosen

Category = Literal[
    "sessions", "memories", "summaries", "facets", "relations", "slots", "index", "profile",
    "lessons", "actions", "leases", "sentinels", "sketches", "signals", "crystals", "mesh",
    "semantic", "procedural", "insights",
]  # fmt: skip
CATEGORIES: tuple[Category, ...] = get_args(Category)
COORDINATION = ("actions", "leases", "sentinels", "sketches", "signals", "crystals")
"""Checked by the coordination service (`mem::coordination-diagnose`)."""
OURS = tuple(c for c in CATEGORIES if c not in COORDINATION)
Categories = list[Category] | Annotated[str, msgspec.Meta(pattern=choices_pattern(CATEGORIES))]
Status = Literal["pass", "warn", "fail"]


class DiagnoseIn(Clocked, kw_only=True):
    categories: Categories = msgspec.field(default_factory=list)
    """Default all."""

    def __post_init__(self) -> None:
        self.categories = chosen(self.categories, CATEGORIES)


class HealIn(DiagnoseIn, kw_only=True):
    dry_run: bool | Literal["true", "false"] = False


class Check(msgspec.Struct, kw_only=True):
    name: str
    category: str
    status: Status
    message: str
    fixable: bool = False


class Summary(msgspec.Struct, kw_only=True):
    pass_: int = msgspec.field(name="pass", default=0)
    warn: int = 0
    fail: int = 0
    fixable: int = 0


class DiagnoseOut(msgspec.Struct, kw_only=True):
    success: bool
    checks: list[Check]
    summary: Summary
    skipped: list[str]
    """Categories whose service did not answer (the coordination layer's, the mesh)."""


class CoordReply(msgspec.Struct, rename="camel", kw_only=True):
    """What `mem::coordination-diagnose` answers (read over the bus, not imported)."""

    checks: list[Check]
    fixed: int = 0
    skipped: int = 0
    details: list[str] = msgspec.field(default_factory=list)


class HealOut(msgspec.Struct, rename="camel", kw_only=True):
    success: bool
    dry_run: bool
    fixed: int
    skipped: int
    details: list[str]


class FollowupOut(msgspec.Struct, rename="camel", kw_only=True):
    success: bool
    window_seconds: int
    agent_initiated_searches: int
    followup_within_window: int
    rate: float
    caveat: str


class Inferred(msgspec.Struct, kw_only=True):
    """What governance's `mem::migrate` step infer-memory-projects answers (the part read)."""

    updated: int = 0
    ambiguous: int = 0
