"""The frontier of unblocked work, ranked, and the best next action for an agent."""

from __future__ import annotations

import hashlib

import msgspec

from functions.coordination.actions.core import view
from functions.coordination.actions.gates import Gates, find_gate
from functions.coordination.actions.wire import (
    FrontierIn,
    FrontierItem,
    FrontierOut,
    NextIn,
    NextOut,
    Suggestion,
)
from functions.coordination.records import Action, Checkpoint, Lease, Sentinel
from functions.coordination.store import CoordStore
from functions.kernel.clock import ms_of, now_ms

OPEN = ("pending", "active", "blocked")
NEAR_TIE = 1.0
"""`next`: candidates within this score of the best count as equally good; each agent
takes its own pick among them, so agents asking at once do not all race for one action."""


def score(a: Action, now: int) -> float:
    """upstream's ranking: priority first, then age (capped), what it unlocks, being active."""
    s = a.priority * 10.0
    age_hours = (now - ms_of(a.created_at)) / 3_600_000
    s += min(max(age_hours, 0.0) * 0.5, 20.0)
    s += 5 * sum(1 for e in a.edges if e.type == "unlocks" and e.source_action_id == a.id)
    if any(e.type == "spawned_by" and e.source_action_id == a.id for e in a.edges):
        s += 3
    if a.status == "active":
        s += 15
    return round(s, 2)


class Ranked(msgspec.Struct):
    action: Action
    score: float
    lease: Lease | None

    def item(self) -> FrontierItem:
        return FrontierItem(
            action=view(self.action),
            score=self.score,
            blockers=[],
            leased=self.lease is not None,
            leased_by=self.lease.agent_id if self.lease else "",
        )


async def ranked(cs: CoordStore, req: FrontierIn) -> tuple[list[Ranked], int]:
    """The unblocked open actions, best first, and how many actions there are."""
    actions = {a.id: a for a in await cs.all(cs.actions, Action)}
    leases = {lease.action_id: lease for lease in await cs.all(cs.leases, Lease)}
    cps: dict[str, Checkpoint] = {}
    snls: dict[str, Sentinel] = {}
    for a in actions.values():
        if a.status in OPEN:
            for e in a.edges:
                if e.type == "gated_by" and e.target_action_id not in cps:
                    await find_gate(cs, e.target_action_id, cps, snls)
    gates = Gates(actions, cps, snls)
    now = now_ms()
    out: list[Ranked] = []
    for a in actions.values():
        if a.status not in OPEN or a.sketch_id:
            continue
        if req.project and a.project != req.project:
            continue
        if gates.blockers(a):
            continue
        lease = leases.get(a.id)
        if (
            lease is not None
            and req.agent_id
            and lease.agent_id != req.agent_id
            and not req.include_leased_by_others
        ):
            continue
        out.append(Ranked(a, score(a, now), lease))
    out.sort(key=lambda r: (-r.score, r.action.created_at))
    return out, len(actions)


async def frontier(cs: CoordStore, req: FrontierIn) -> FrontierOut:
    found, total = await ranked(cs, req)
    return FrontierOut(
        success=True,
        frontier=[r.item() for r in found[: req.limit]],
        total_actions=total,
        total_unblocked=len(found),
    )


def _pick(found: list[Ranked], agent_id: str) -> Ranked:
    best = found[0].score
    near = [r for r in found if r.score >= best - NEAR_TIE]
    if not agent_id or len(near) == 1:
        return near[0]
    return min(near, key=lambda r: hashlib.sha1(f"{agent_id}\0{r.action.id}".encode()).digest())


async def next_for(cs: CoordStore, req: NextIn) -> NextOut:
    found, total = await ranked(cs, FrontierIn(project=req.project, agent_id=req.agent_id))
    if not found:
        return NextOut(
            success=True,
            suggestion=None,
            message="No actionable work found",
            total_actions=total,
        )
    top = _pick(found, req.agent_id)
    a = top.action
    return NextOut(
        success=True,
        suggestion=Suggestion(
            action_id=a.id,
            title=a.title,
            description=a.description,
            priority=a.priority,
            score=top.score,
            tags=a.tags,
        ),
        message=f"Suggested: {a.title} (priority {a.priority}, score {top.score:.2f})",
        total_actions=total,
        total_unblocked=len(found),
    )
