"""Diagnostics and heal: find broken state and fix what can be fixed. This module declares
the operations (`mem::diagnose`, `mem::heal`, `mem::diagnostic::followup-stats`); what
each category checks is checks.py, how each finding is repaired fixes.py.

The coordination layer's categories (actions, leases, sentinels, sketches, signals,
crystals) are checked, and healed, by the service that owns them
(`mem::coordination-diagnose`, over the bus), the mesh by the team's `mem::mesh-list`; a
category whose service does not answer is reported in `skipped`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from engine import FunctionError, Tool, operation
from functions.diagnostics.checks import Checks
from functions.diagnostics.fixes import Fix, Fixes
from functions.diagnostics.wire import (
    CATEGORIES,
    COORDINATION,
    OURS,
    Check,
    CoordReply,
    DiagnoseIn,
    DiagnoseOut,
    FollowupOut,
    HealIn,
    HealOut,
    Summary,
)
from functions.kernel import followup
from functions.kernel.clock import when
from functions.kernel.owned import OwnedService, routes

if TYPE_CHECKING:
    from functions.lifecycle.lifecycle_service import LifecycleService  # the owner, imported by it


rest = routes("diagnostics")


class DiagnosticsService(OwnedService["LifecycleService"]):
    """Served beside the worker's main service, over its store."""

    owner: LifecycleService

    def _checks(self) -> Checks:
        return Checks(self.store, Fixes(self.owner))

    async def _elsewhere(
        self, cats: list[str], *, heal: bool = False, dry_run: bool = False
    ) -> tuple[list[Check], list[str], HealOut]:
        """The coordination service's checks (and fixes) and the mesh's; the categories
        whose service did not answer."""
        checks: list[Check] = []
        skipped: list[str] = []
        healed = HealOut(success=True, dry_run=dry_run, fixed=0, skipped=0, details=[])
        coord = [c for c in cats if c in COORDINATION]
        if coord:
            try:
                got = await self.store.client.call(
                    "mem::coordination-diagnose",
                    {"categories": coord, "heal": heal, "dryRun": dry_run},
                    timeout=300,
                )
                reply = msgspec.convert(got, CoordReply)
                checks += reply.checks
                healed.fixed, healed.skipped = reply.fixed, reply.skipped
                healed.details += reply.details
            except FunctionError:
                skipped += coord
        if "mesh" in cats:
            try:
                checks += [f.check for f in await self._checks().mesh()]
            except FunctionError:
                skipped.append("mesh")
        return checks, skipped, healed

    @operation(
        "mem::diagnose",
        description="Health checks of sessions, memories, summaries, facets, relations, "
        "slots, the search index and project profiles: stuck, orphaned and inconsistent state.",
        timeout=300,
        http=rest("POST", "diagnostics"),
        tool=Tool("memory_diagnose", tier="core"),
    )
    async def diagnose(self, req: DiagnoseIn) -> DiagnoseOut:
        now = when(req)
        cats = list(req.categories) or list(CATEGORIES)
        found = await self._checks().findings([c for c in cats if c in OURS and c != "mesh"], now)
        checks = [f.check for f in found]
        more, skipped, _ = await self._elsewhere(cats)
        checks += more
        for cat in cats:
            if cat not in skipped and not any(
                c.category == cat and (c.status != "pass" or c.name == f"{cat}-ok") for c in checks
            ):
                checks.append(
                    Check(
                        name=f"{cat}-ok",
                        category=cat,
                        status="pass",
                        message=f"no problem found in {cat}",
                    )
                )
        summary = Summary(
            pass_=sum(c.status == "pass" for c in checks),
            warn=sum(c.status == "warn" for c in checks),
            fail=sum(c.status == "fail" for c in checks),
            fixable=sum(c.fixable for c in checks),
        )
        return DiagnoseOut(success=True, checks=checks, summary=summary, skipped=skipped)

    @operation(
        "mem::heal",
        description="Fix what diagnostics found fixable: orphan index entries, unindexed "
        "records, dangling version links, orphan facets and relations, stale sessions and "
        "profiles (dryRun lists the fixes).",
        timeout=600,
        http=rest("POST", "diagnostics/heal"),
        tool=Tool("memory_heal"),
    )
    async def heal(self, req: HealIn) -> HealOut:
        dry = req.dry_run is True or str(req.dry_run).lower() == "true"
        now = when(req)
        cats = list(req.categories) or list(CATEGORIES)
        found = await self._checks().findings([c for c in cats if c in OURS and c != "mesh"], now)
        details: list[str] = []
        fixed = skipped = 0
        done: set[Fix] = set()
        for f in found:
            if f.fix is None:
                continue
            if dry:
                details.append(f"[dry-run] would fix {f.check.name}: {f.check.message}")
                fixed += 1
                continue
            if f.fix in done:  # one sweep or refold fixes every finding of its kind
                fixed += 1
                continue
            try:
                details.append(await f.fix())
                done.add(f.fix)
                fixed += 1
            except FunctionError as err:
                details.append(f"could not fix {f.check.name}: {err.message}")
                skipped += 1
        _, _, elsewhere = await self._elsewhere(cats, heal=True, dry_run=dry)
        fixed += elsewhere.fixed
        skipped += elsewhere.skipped
        details += elsewhere.details
        return HealOut(
            success=skipped == 0, dry_run=dry, fixed=fixed, skipped=skipped, details=details
        )

    @operation(
        "mem::diagnostic::followup-stats",
        description="How often an agent's search is followed by another within the window "
        "(a sign the first missed)",
        http=rest("GET", "diagnostics/followup", source="none"),
    )
    async def followup(self) -> FollowupOut:
        counts = await followup.read(self.store.client)
        total = counts.agent_initiated
        return FollowupOut(
            success=True,
            window_seconds=followup.window_seconds(),
            agent_initiated_searches=total,
            followup_within_window=counts.followups,
            rate=counts.followups / total if total else 0.0,
            caveat="Directional signal: a search followed within the window by another "
            "search of the same session with a different query and no result in common "
            "suggests the first missed. Counts smart-searches that carry a sessionId and "
            "returned results, viewer searches excluded; kept in KV across restarts.",
        )
