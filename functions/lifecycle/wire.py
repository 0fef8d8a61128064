"""Requests of the lifecycle functions (camelCase on the wire, like the memory API). Every
field has a default where a cron firing (payload `{}`) must be accepted."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from functions.kernel.clock import Clocked
from functions.kernel.views import SummaryView

Id = Annotated[str, msgspec.Meta(min_length=1, max_length=512)]


class SummarizeIn(Clocked, kw_only=True):
    session_id: Id
    force: bool = False
    """Summarize from the session's first record again (upstream's `force`), not from where
    its last summary stopped."""


class SweepIn(Clocked, kw_only=True):
    stale_hours: Annotated[float, msgspec.Meta(gt=0, le=876_000)] | None = None


class ConsolidateIn(Clocked, kw_only=True):
    tier: Literal["", "episodic", "semantic", "procedural"] = ""
    """Upstream's target tier. The pipeline is one pass (episodic summaries feed the
    semantic and procedural tiers), so every tier is brought up to date whichever is named."""


class DecayIn(Clocked, kw_only=True):
    pass


class ReinforceIn(Clocked, kw_only=True):
    ids: Annotated[list[Id], msgspec.Meta(min_length=1, max_length=1000)]


class AutoForgetIn(Clocked, kw_only=True):
    dry_run: bool = False


class ProjectProfileIn(msgspec.Struct, rename="camel", kw_only=True):
    project: Annotated[str, msgspec.Meta(min_length=1, max_length=512)]
    refresh: bool = False
    """Fold MEM_EVENTS that arrived since the last run first (read-your-writes)."""


class DigestIn(Clocked, kw_only=True):
    pass


# ---- responses ------------------------------------------------------------------------
class SummarizeOut(msgspec.Struct, kw_only=True):
    success: bool
    written: bool
    summary: SummaryView
    read: int = 0
    """Records this pass read: only those stored since the session's last summary."""


class SweepOut(msgspec.Struct, kw_only=True):
    abandoned: list[str]
    summarized: list[str]


class Reinforced(msgspec.Struct, kw_only=True):
    id: str
    strength: float
    tier: str


class ReinforceOut(msgspec.Struct, kw_only=True):
    memories: list[Reinforced]


class RetentionOut(msgspec.Struct, rename="camel", kw_only=True):
    purged: int
    keep_months: int


class DigestOut(msgspec.Struct, kw_only=True):
    folded: dict[str, int]


class ProfileOut(msgspec.Struct, kw_only=True, omit_defaults=True):
    project: str
    profile: dict[str, Any] | None
    """Top concepts, files, commands, errors and conventions (see mem::profile)."""
    reason: str | None = None
    """Why there is no profile (`no_observations`)."""


class GraphQueryOut(msgspec.Struct, rename="camel", kw_only=True):
    nodes: list[dict[str, Any]]
    edges: list[dict[str, Any]]
    depth: int
    total_nodes: int
    total_edges: int
    truncated: bool
    limit: int
    offset: int


class GraphStatsOut(msgspec.Struct, rename="camel", kw_only=True):
    total_nodes: int
    total_edges: int
    nodes_by_type: dict[str, int]
    edges_by_type: dict[str, int]
    expired_edges: int
    compacted_at: str = ""
