"""What blocks an action, and completion unblocking its dependents.

An action's status "blocked" is kept for readers, but what blocks it is always computed
from its edges (a dependency not done, a gate not passed, a conflicting action active), so
a lease is refused or granted on the facts even while a status catches up."""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from engine import CasConflict
from functions.coordination.records import Action, Checkpoint, Sentinel
from functions.coordination.store import CoordStore
from functions.kernel.clock import now_iso
from functions.kernel.ids import kv_key


class Gates:
    """The records an action's edges point at: actions, checkpoints, sentinels."""

    def __init__(
        self,
        actions: dict[str, Action],
        checkpoints: dict[str, Checkpoint] | None = None,
        sentinels: dict[str, Sentinel] | None = None,
    ) -> None:
        self.actions = actions
        self.checkpoints = checkpoints or {}
        self.sentinels = sentinels or {}

    @classmethod
    async def around(cls, cs: CoordStore, a: Action) -> Gates:
        """What `a`'s own edges need, read by key (no scan)."""
        actions: dict[str, Action] = {}
        cps: dict[str, Checkpoint] = {}
        snls: dict[str, Sentinel] = {}
        for e in a.edges:
            t = e.target_action_id if e.source_action_id == a.id else e.source_action_id
            if e.type in ("requires", "conflicts_with"):
                got = await cs.get(cs.actions, kv_key(t), Action)
                if got is not None:
                    actions[t] = got
            elif e.type == "gated_by":
                await find_gate(cs, t, cps, snls)
        return cls(actions, cps, snls)

    def blockers(self, a: Action) -> list[str]:
        out: list[str] = []
        for e in a.edges:
            if e.type == "requires" and e.source_action_id == a.id:
                dep = self.actions.get(e.target_action_id)
                if dep is not None and dep.status != "done":
                    out.append(f"requires:{dep.id}:{dep.title}")
            elif e.type == "gated_by":
                cp = self.checkpoints.get(e.target_action_id)
                if cp is not None and cp.status != "passed":
                    out.append(f"checkpoint:{cp.id}:{cp.name}")
                snl = self.sentinels.get(e.target_action_id)
                if snl is not None and snl.status != "triggered":
                    out.append(f"sentinel:{snl.id}:{snl.name}")
            elif e.type == "conflicts_with":
                other_id = e.target_action_id if e.source_action_id == a.id else e.source_action_id
                other = self.actions.get(other_id)
                if other is not None and other.status == "active":
                    out.append(f"conflict:{other.id}:{other.title}")
        return out


async def find_gate(
    cs: CoordStore, id_: str, cps: dict[str, Checkpoint], snls: dict[str, Sentinel]
) -> None:
    """The checkpoint or sentinel `id_`, into `cps` or `snls` (whichever it is; neither if
    it is gone)."""
    cp = await cs.get(cs.checkpoints, kv_key(id_), Checkpoint)
    if cp is not None:
        cps[id_] = cp
        return
    snl = await cs.get(cs.sentinels, kv_key(id_), Sentinel)
    if snl is not None:
        snls[id_] = snl


async def refresh_status(cs: CoordStore, action_id: str, actor: str = "") -> Action | None:
    """Set a pending or blocked action's status to what its edges say now."""
    cur = await cs.entry(cs.actions, kv_key(action_id), Action)
    for _ in range(16):
        if cur is None or cur.value.status not in ("pending", "blocked"):
            return None
        a = cur.value
        want = "blocked" if (await Gates.around(cs, a)).blockers(a) else "pending"
        if want == a.status:
            return None
        new = msgspec.structs.replace(a, status=want, updated_at=now_iso())
        try:
            await cs.actions.compare_and_set(kv_key(a.id), new, cur.revision)
        except CasConflict:
            cur = await cs.entry(cs.actions, kv_key(action_id), Action)
            continue
        await cs.audit(
            "action-unblock" if want == "pending" else "action-block",
            [a.id],
            actor=actor,
            project=a.project,
            before=a.status,
            after=want,
        )
        return new
    return None


async def unblock_dependents(cs: CoordStore, done: Action, actor: str = "") -> int:
    """After `done` completed: its dependents whose every gate now passes become pending."""
    n = 0
    for dep in done.dependents:
        if await refresh_status(cs, dep, actor) is not None:
            n += 1
    return n


async def unblock_gated(cs: CoordStore, action_ids: Iterable[str], actor: str = "") -> int:
    n = 0
    for aid in action_ids:
        if await refresh_status(cs, aid, actor) is not None:
            n += 1
    return n
