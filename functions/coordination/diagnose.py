"""`mem::coordination-diagnose`: the coordination layer's share of diagnostics and heal,
checked by the service that owns its buckets (the diagnostics service calls it over the
bus and merges the checks). As upstream's diagnostics.ts, per category:

- actions: active without a live lease (warn); blocked with nothing blocking it any more,
  or pending with something blocking it (fail, fixable: the status is set to what the
  edges say);
- leases: active past expiry (fail, fixable: removed, the action handed back to pending);
  held for an action that is gone (fail, fixable: removed);
- sentinels: watching past `expiresAt` (fail, fixable: expired); linking an action that is
  gone (warn);
- sketches: active past expiry (fail, fixable: discarded with their actions);
- signals: past `expiresAt` (fail, fixable: deleted);
- crystals: an empty narrative (warn).
Every fix goes through the concept's own code and is audited there (or here, `heal`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

import msgspec

from engine import FunctionError, operation
from functions.coordination.actions.gates import Gates, refresh_status
from functions.coordination.leases.core import hand_back
from functions.coordination.records import Action, Crystal, Lease, Sentinel, Signal, Sketch
from functions.coordination.sentinels.core import expire
from functions.coordination.sketches.core import discard
from functions.coordination.store import ConceptService, CoordOwner, CoordStore
from functions.kernel.clock import ms_of, now_ms
from functions.kernel.ids import kv_key

CoordCategory = Literal["actions", "leases", "sentinels", "sketches", "signals", "crystals"]
COORD_CATEGORIES: tuple[CoordCategory, ...] = (
    "actions", "leases", "sentinels", "sketches", "signals", "crystals",
)  # fmt: skip


class CoordDiagnoseIn(msgspec.Struct, rename="camel", kw_only=True):
    categories: list[CoordCategory] = msgspec.field(default_factory=list)
    """Default all six."""
    heal: bool = False
    """Apply the fixes of what is fixable (else only report)."""
    dry_run: bool = False
    """With `heal`: list the fixes, apply none."""


class CoordCheck(msgspec.Struct, kw_only=True):
    name: str
    category: str
    status: Literal["pass", "warn", "fail"]
    message: str
    fixable: bool = False


class CoordDiagnoseOut(msgspec.Struct, rename="camel", kw_only=True):
    checks: list[CoordCheck]
    fixed: int = 0
    skipped: int = 0
    details: list[str] = msgspec.field(default_factory=list)


Fix = Callable[[], Awaitable[str]]


@dataclass
class _Finding:
    check: CoordCheck
    fix: Fix | None = None


def _finding(name: str, category: str, status: Literal["warn", "fail"], message: str,
             fix: Fix | None = None) -> _Finding:  # fmt: skip
    return _Finding(CoordCheck(name=name, category=category, status=status, message=message,
                               fixable=fix is not None), fix)  # fmt: skip


def _past(at: str, now: int) -> bool:
    return bool(at) and ms_of(at) <= now


class Findings:
    """What is wrong in the coordination buckets now, each with its repair when it has one."""

    def __init__(self, cs: CoordStore) -> None:
        self.cs = cs
        self.now = now_ms()

    async def collect(self, cats: set[str]) -> list[_Finding]:
        cs = self.cs
        actions = {a.id: a for a in await cs.all(cs.actions, Action)}
        out: list[_Finding] = []
        if "actions" in cats:
            out += await self._actions(actions)
        if "leases" in cats:
            out += await self._leases(actions)
        if "sentinels" in cats:
            for s in await cs.all(cs.sentinels, Sentinel):
                if s.status == "watching" and _past(s.expires_at, self.now):
                    out.append(_finding(f"sentinel-expired:{s.id}", "sentinels", "fail",
                                        f"sentinel {s.name!r} is watching past its expiry "
                                        f"{s.expires_at}", self._expire_sentinel(s.id)))  # fmt: skip
                missing = [a for a in s.linked_action_ids if a not in actions]
                missing = missing if s.status == "watching" else []
                if missing:
                    out.append(_finding(f"sentinel-missing-action:{s.id}", "sentinels", "warn",
                                        f"sentinel {s.name!r} links actions that are gone: "
                                        f"{missing[:5]}"))  # fmt: skip
        if "sketches" in cats:
            for sk in await cs.all(cs.sketches, Sketch):
                if sk.status == "active" and _past(sk.expires_at, self.now):
                    out.append(_finding(f"sketch-expired:{sk.id}", "sketches", "fail",
                                        f"sketch {sk.id} is active past its expiry "
                                        f"{sk.expires_at}", self._discard_sketch(sk.id)))  # fmt: skip
        if "signals" in cats:
            async for key, sig in cs.signals.scan(">", Signal):
                if _past(sig.expires_at, self.now):
                    out.append(_finding(f"signal-expired:{sig.id}", "signals", "fail",
                                        f"signal {sig.id} is kept past its expiry "
                                        f"{sig.expires_at}", self._delete_signal(key)))  # fmt: skip
        if "crystals" in cats:
            for c in await cs.all(cs.crystals, Crystal):
                if not c.narrative.strip():
                    out.append(_finding(f"crystal-empty:{c.id}", "crystals", "warn",
                                        f"crystal {c.id} has an empty narrative"))  # fmt: skip
        return out

    async def _actions(self, actions: dict[str, Action]) -> list[_Finding]:
        cs = self.cs
        out: list[_Finding] = []
        for a in actions.values():
            if a.status == "active":
                lease = await cs.get(cs.leases, kv_key(a.id), Lease)
                if lease is None or lease.status != "active" or _past(lease.expires_at, self.now):
                    out.append(_finding(f"active-without-lease:{a.id}", "actions", "warn",
                                        f"action {a.title!r} is active but no live lease "
                                        "holds it"))  # fmt: skip
            elif a.status in ("pending", "blocked"):
                blocked = bool((await Gates.around(cs, a)).blockers(a))
                if a.status == "blocked" and not blocked:
                    out.append(_finding(f"blocked-unblockable:{a.id}", "actions", "fail",
                                        f"action {a.title!r} is blocked but nothing blocks "
                                        "it any more", self._refresh(a.id)))  # fmt: skip
                elif a.status == "pending" and blocked:
                    out.append(_finding(f"pending-blocked:{a.id}", "actions", "fail",
                                        f"action {a.title!r} is pending but something blocks "
                                        "it", self._refresh(a.id)))  # fmt: skip
        return out

    async def _leases(self, actions: dict[str, Action]) -> list[_Finding]:
        out: list[_Finding] = []
        async for key, lease in self.cs.leases.scan(">", Lease):
            if lease.action_id not in actions:
                out.append(_finding(f"lease-orphaned:{lease.id}", "leases", "fail",
                                    f"lease {lease.id} holds action {lease.action_id}, which "
                                    "is gone", self._drop_lease(key, lease, hand=False)))  # fmt: skip
            elif lease.status == "active" and _past(lease.expires_at, self.now):
                out.append(_finding(f"lease-expired:{lease.id}", "leases", "fail",
                                    f"lease {lease.id} on {lease.action_id} is active past "
                                    f"its expiry {lease.expires_at}",
                                    self._drop_lease(key, lease, hand=True)))  # fmt: skip
        return out

    # ---- fixes -------------------------------------------------------------------------
    def _refresh(self, action_id: str) -> Fix:
        async def fix() -> str:
            got = await refresh_status(self.cs, action_id, "heal")
            return f"action {action_id} is {got.status if got else 'unchanged'}"

        return fix

    def _drop_lease(self, key: str, lease: Lease, *, hand: bool) -> Fix:
        async def fix() -> str:
            await self.cs.leases.delete(key)
            if hand and await hand_back(self.cs, lease.action_id, lease.id, by="heal"):
                return f"lease {lease.id} expired, action {lease.action_id} back to pending"
            await self.cs.audit("heal", [lease.id, lease.action_id], reason="lease removed")
            return f"lease {lease.id} removed"

        return fix

    def _expire_sentinel(self, sentinel_id: str) -> Fix:
        async def fix() -> str:
            done = await expire(self.cs, sentinel_id, "heal")
            return f"sentinel {sentinel_id} {'expired' if done else 'was no longer watching'}"

        return fix

    def _discard_sketch(self, sketch_id: str) -> Fix:
        async def fix() -> str:
            n = await discard(self.cs, sketch_id, "heal", due=True)
            return f"sketch {sketch_id} discarded with {n} actions"

        return fix

    def _delete_signal(self, key: str) -> Fix:
        async def fix() -> str:
            await self.cs.signals.delete(key)
            await self.cs.audit("heal", [key], reason="expired signal deleted")
            return f"signal {key} deleted"

        return fix


class CoordinationDiagnostics(ConceptService[CoordOwner]):
    @operation(
        "mem::coordination-diagnose",
        description="Diagnostics (and heal) of the coordination layer: actions, leases, "
        "sentinels, sketches, signals, crystals (called by mem::diagnose and mem::heal)",
        timeout=300,
    )
    async def diagnose(self, req: CoordDiagnoseIn) -> CoordDiagnoseOut:
        found = await Findings(self.cs).collect(set(req.categories or COORD_CATEGORIES))
        out = CoordDiagnoseOut(checks=[f.check for f in found])
        if not req.heal:
            return out
        for f in found:
            if f.fix is None:
                continue
            if req.dry_run:
                out.details.append(f"[dry-run] would fix {f.check.name}: {f.check.message}")
                out.fixed += 1
                continue
            try:
                out.details.append(await f.fix())
                out.fixed += 1
            except FunctionError as err:  # changed meanwhile (released, promoted ...)
                out.details.append(f"could not fix {f.check.name}: {err.message}")
                out.skipped += 1
        return out
