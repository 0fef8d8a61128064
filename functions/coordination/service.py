"""One process's coordination service: every operation declared once, on its method (bus
function, REST route, MCP tool; upstream's paths and tool names), plus the functions the
triggers call (lease expiry, timers, checkpoint resolutions, the pattern scan, the sweep)."""

from __future__ import annotations

from typing import Any

import msgspec

from engine import Context, FunctionError, NoArgs, Tool, operation
from functions.coordination.actions import core as actions
from functions.coordination.actions.wire import (
    ActionCreateIn,
    ActionCreateOut,
    ActionGetIn,
    ActionGetOut,
    ActionListIn,
    ActionOut,
    ActionsOut,
    ActionUpdateIn,
    EdgeCreateIn,
    EdgeOut,
    FrontierIn,
    FrontierOut,
    NextIn,
    NextOut,
)
from functions.coordination.checkpoints import core as checkpoints
from functions.coordination.checkpoints.wire import (
    CheckpointCreateIn,
    CheckpointListIn,
    CheckpointOpIn,
    CheckpointOut,
    CheckpointResolveIn,
)
from functions.coordination.crystals import core as crystals
from functions.coordination.crystals.wire import (
    CrystalAutoIn,
    CrystalAutoOut,
    CrystalListIn,
    CrystallizeRequest,
    CrystalOut,
    CrystalsOut,
)
from functions.coordination.inputs import StateChange
from functions.coordination.leases import core as leases
from functions.coordination.leases.wire import LeaseIn, LeaseOpIn, LeaseOut
from functions.coordination.records import Checkpoint, Timer
from functions.coordination.routines import core as routines
from functions.coordination.routines.wire import (
    RoutineCreateIn,
    RoutineListIn,
    RoutineOut,
    RoutineRunIn,
    RoutineRunOut,
    RoutinesOut,
    RoutineStatusIn,
    RoutineStatusOut,
)
from functions.coordination.sentinels import core as sentinels
from functions.coordination.sentinels.wire import (
    SentinelCheckOut,
    SentinelCreateIn,
    SentinelIdIn,
    SentinelListIn,
    SentinelOut,
    SentinelsOut,
    SentinelTriggerIn,
)
from functions.coordination.signals import core as signals
from functions.coordination.signals.wire import SignalOut, SignalReadIn, SignalSendIn, SignalsOut
from functions.coordination.sketches import core as sketches
from functions.coordination.sketches.wire import (
    SketchAddIn,
    SketchAddOut,
    SketchCreateIn,
    SketchDiscardOut,
    SketchesOut,
    SketchGcOut,
    SketchIdIn,
    SketchListIn,
    SketchOut,
    SketchPromoteOut,
)
from functions.coordination.store import CoordStore
from functions.kernel.owned import routes, started

P = "/agentmemory/"
AGENT = {"x-agent-id": "agentId"}
REFUSED = {"False": 409}
"""A lease refused (held by another agent, completed, blocked) is upstream's `{success:
false, error, ...}` reply, with status 409."""


rest = routes("coordination", headers=AGENT)


class SweepOut(msgspec.Struct, rename="camel", kw_only=True):
    leases_handed_back: int
    timers_fired: int
    sketches_collected: int


class CoordinationService:
    def __init__(self) -> None:
        self._cs: CoordStore | None = None
        self.patterns = sentinels.Patterns()

    @property
    def cs(self) -> CoordStore:
        return started(self._cs, "coordination")

    async def start(self, client: Any) -> None:
        self._cs = await CoordStore(client).open()
        self.patterns.start(self._cs)

    async def stop(self, client: Any) -> None:
        await self.patterns.stop()

    # ---- actions ---------------------------------------------------------------------
    @operation(
        "mem::action-create",
        description="Create an actionable work item with typed dependencies. Actions track "
        "what agents need to do and how work items relate to each other.",
        http=rest("POST", "actions", status=201),
        tool=Tool("memory_action_create"),
    )
    async def action_create(self, req: ActionCreateIn) -> ActionCreateOut:
        return await actions.create(self.cs, req)

    @operation(
        "mem::action-update",
        description="Update an action's status, priority, or details. Set status to 'done' "
        "to complete it and unblock dependent actions.",
        http=rest("POST", "actions/update"),
        tool=Tool("memory_action_update"),
    )
    async def action_update(self, req: ActionUpdateIn) -> ActionOut:
        return await actions.update(self.cs, req)

    @operation(
        "mem::action-list",
        description="List actions (?status=&project=&parentId=&limit=)",
        http=rest("GET", "actions"),
    )
    async def action_list(self, req: ActionListIn) -> ActionsOut:
        return await actions.listing(self.cs, req)

    @operation(
        "mem::action-get",
        description="One action with its edges and children (?actionId=)",
        http=rest("GET", "actions/get"),
    )
    async def action_get(self, req: ActionGetIn) -> ActionGetOut:
        return await actions.get(self.cs, req.action_id)

    @operation(
        "mem::action-edge-create",
        description="Add an edge between actions: requires, blocks, unlocks, spawned_by, "
        "gated_by, conflicts_with",
        http=rest("POST", "actions/edges", status=201),
    )
    async def action_edge(self, req: EdgeCreateIn) -> EdgeOut:
        return await actions.add_edge(self.cs, req)

    @operation(
        "mem::frontier",
        description="Get all unblocked actions ranked by priority and urgency. Returns the "
        "frontier of actionable work with no unsatisfied dependencies.",
        http=rest("GET", "frontier"),
        tool=Tool("memory_frontier"),
    )
    async def frontier(self, req: FrontierIn) -> FrontierOut:
        return await actions.frontier(self.cs, req)

    @operation(
        "mem::next",
        description="Get the single most important next action to work on. Combines "
        "dependency resolution, priority, and recency into a score.",
        http=rest("GET", "next"),
        tool=Tool("memory_next"),
    )
    async def next(self, req: NextIn) -> NextOut:
        return await actions.next_for(self.cs, req)

    # ---- leases ----------------------------------------------------------------------
    @operation(
        "mem::lease-acquire",
        description="Acquire an exclusive lease on an action (ttlMs: default 10 min, max 1 h)",
        http=rest("POST", "leases/acquire", status_field="success", status_by=REFUSED),
    )
    async def lease_acquire(self, req: LeaseIn) -> LeaseOut:
        return await leases.acquire(self.cs, req)

    @operation(
        "mem::lease-release",
        description="Release a lease; with a result the action is done",
        http=rest("POST", "leases/release", status_field="success", status_by=REFUSED),
    )
    async def lease_release(self, req: LeaseIn) -> LeaseOut:
        return await leases.release(self.cs, req)

    @operation(
        "mem::lease-renew",
        description="Renew a lease held by this agent",
        http=rest("POST", "leases/renew", status_field="success", status_by=REFUSED),
    )
    async def lease_renew(self, req: LeaseIn) -> LeaseOut:
        return await leases.renew(self.cs, req)

    @operation(
        "mem::lease",
        description="Acquire, release, or renew an exclusive lease on an action. Prevents "
        "multiple agents from working on the same thing.",
        tool=Tool("memory_lease"),
    )
    async def lease(self, req: LeaseOpIn) -> LeaseOut:
        op = {"acquire": leases.acquire, "release": leases.release, "renew": leases.renew}
        return await op[req.operation](self.cs, req)

    # ---- routines --------------------------------------------------------------------
    @operation(
        "mem::routine-create",
        description="Create a workflow routine: ordered steps with dependencies",
        http=rest("POST", "routines", status=201),
    )
    async def routine_create(self, req: RoutineCreateIn) -> RoutineOut:
        return await routines.create(self.cs, req)

    @operation(
        "mem::routine-list",
        description="List routines (?frozen=)",
        http=rest("GET", "routines"),
    )
    async def routine_list(self, req: RoutineListIn) -> RoutinesOut:
        return await routines.listing(self.cs, req)

    @operation(
        "mem::routine-run",
        description="Instantiate a frozen workflow routine, creating actions for each step "
        "with proper dependencies.",
        http=rest("POST", "routines/run", status=201),
        tool=Tool("memory_routine_run"),
    )
    async def routine_run(self, req: RoutineRunIn) -> RoutineRunOut:
        return await routines.run(self.cs, req)

    @operation(
        "mem::routine-status",
        description="A routine run's progress (?runId=)",
        http=rest("GET", "routines/status"),
    )
    async def routine_status(self, req: RoutineStatusIn) -> RoutineStatusOut:
        return await routines.status(self.cs, req.run_id)

    # ---- signals ---------------------------------------------------------------------
    @operation(
        "mem::signal-send",
        description="Send a message to another agent or broadcast. Supports threading, "
        "typed messages, and TTL expiration.",
        http=rest("POST", "signals/send", status=201),
        tool=Tool("memory_signal_send"),
    )
    async def signal_send(self, req: SignalSendIn) -> SignalOut:
        return await signals.send(self.cs, req)

    @operation(
        "mem::signal-read",
        description="Read messages for an agent. Marks delivered messages as read.",
        http=rest("GET", "signals"),
        tool=Tool("memory_signal_read"),
    )
    async def signal_read(self, req: SignalReadIn) -> SignalsOut:
        return await signals.read(self.cs, req)

    # ---- checkpoints -----------------------------------------------------------------
    @operation(
        "mem::checkpoint-create",
        description="Create a checkpoint (CI result, approval, deploy) gating actions",
        http=rest("POST", "checkpoints", status=201),
    )
    async def checkpoint_create(self, req: CheckpointCreateIn) -> CheckpointOut:
        return await checkpoints.create(self.cs, req)

    @operation(
        "mem::checkpoint-resolve",
        description="Resolve a checkpoint: passed unblocks the actions it gates",
        http=rest("POST", "checkpoints/resolve"),
    )
    async def checkpoint_resolve(self, req: CheckpointResolveIn) -> CheckpointOut:
        return await checkpoints.resolve(self.cs, req)

    @operation(
        "mem::checkpoint-list",
        description="List checkpoints (?status=&type=)",
        http=rest("GET", "checkpoints"),
    )
    async def checkpoint_list(self, req: CheckpointListIn) -> CheckpointOut:
        return await checkpoints.listing(self.cs, req)

    @operation(
        "mem::checkpoint",
        description="Create or resolve an external checkpoint (CI result, approval, deploy "
        "status) that gates action progress.",
        tool=Tool("memory_checkpoint"),
    )
    async def checkpoint(self, req: CheckpointOpIn) -> CheckpointOut:
        try:
            if req.operation == "create":
                return await checkpoints.create(
                    self.cs, msgspec.convert(_fields(req), CheckpointCreateIn)
                )
            if req.operation == "resolve":
                return await checkpoints.resolve(
                    self.cs, msgspec.convert(_fields(req), CheckpointResolveIn)
                )
            return await checkpoints.listing(
                self.cs, msgspec.convert(_fields(req), CheckpointListIn)
            )
        except msgspec.ValidationError as exc:
            raise FunctionError(
                "BAD_REQUEST", f"{req.operation}: {exc}", field=_field_of(exc)
            ) from None

    # ---- sentinels -------------------------------------------------------------------
    @operation(
        "mem::sentinel-create",
        description="Create an event-driven sentinel that watches for conditions (timer, "
        "pattern, checkpoint, webhook, threshold, approval) and auto-unblocks gated actions "
        "when triggered.",
        http=rest("POST", "sentinels", status=201),
        tool=Tool("memory_sentinel_create"),
    )
    async def sentinel_create(self, req: SentinelCreateIn) -> SentinelOut:
        return await sentinels.create(self.cs, req)

    @operation(
        "mem::sentinel-trigger",
        description="Externally fire a sentinel, providing an optional result payload. "
        "Unblocks any gated actions.",
        http=rest("POST", "sentinels/trigger"),
        tool=Tool("memory_sentinel_trigger"),
    )
    async def sentinel_trigger(self, req: SentinelTriggerIn) -> SentinelOut:
        return await sentinels.trigger(self.cs, req)

    @operation(
        "mem::sentinel-cancel",
        description="Cancel a watching sentinel",
        http=rest("POST", "sentinels/cancel"),
    )
    async def sentinel_cancel(self, req: SentinelIdIn) -> SentinelOut:
        return await sentinels.cancel(self.cs, req.sentinel_id, req.agent_id)

    @operation(
        "mem::sentinel-check",
        description="Fire the sentinels that are due: timers, expiries, and observation "
        "patterns against what was stored since the last scan",
        http=rest("POST", "sentinels/check", source="none"),
        timeout=120,
    )
    async def sentinel_check(self) -> SentinelCheckOut:
        return await sentinels.check(self.cs)

    @operation(
        "mem::sentinel-list",
        description="List sentinels (?status=&type=)",
        http=rest("GET", "sentinels"),
    )
    async def sentinel_list(self, req: SentinelListIn) -> SentinelsOut:
        return await sentinels.listing(self.cs, req)

    # ---- sketches --------------------------------------------------------------------
    @operation(
        "mem::sketch-create",
        description="Create an ephemeral action graph for exploratory work. Auto-expires "
        "after TTL. Can be promoted to permanent actions or discarded.",
        http=rest("POST", "sketches", status=201),
        tool=Tool("memory_sketch_create"),
    )
    async def sketch_create(self, req: SketchCreateIn) -> SketchOut:
        return await sketches.create(self.cs, req)

    @operation(
        "mem::sketch-add",
        description="Add an action to a sketch (dependsOn: actions of the same sketch)",
        http=rest("POST", "sketches/add", status=201),
    )
    async def sketch_add(self, req: SketchAddIn) -> SketchAddOut:
        return await sketches.add(self.cs, req)

    @operation(
        "mem::sketch-promote",
        description="Promote a sketch's ephemeral actions to permanent actions. Makes the "
        "exploratory work official.",
        http=rest("POST", "sketches/promote"),
        tool=Tool("memory_sketch_promote"),
    )
    async def sketch_promote(self, req: SketchIdIn) -> SketchPromoteOut:
        return await sketches.promote(self.cs, req)

    @operation(
        "mem::sketch-discard",
        description="Discard a sketch and delete its actions",
        http=rest("POST", "sketches/discard"),
    )
    async def sketch_discard(self, req: SketchIdIn) -> SketchDiscardOut:
        return await sketches.discard_op(self.cs, req)

    @operation(
        "mem::sketch-list",
        description="List sketches (?status=&project=)",
        http=rest("GET", "sketches"),
    )
    async def sketch_list(self, req: SketchListIn) -> SketchesOut:
        return await sketches.listing(self.cs, req)

    @operation(
        "mem::sketch-gc",
        description="Discard every sketch past its expiry",
        http=rest("POST", "sketches/gc", source="none"),
    )
    async def sketch_gc(self) -> SketchGcOut:
        return await sketches.gc(self.cs)

    # ---- crystals --------------------------------------------------------------------
    async def _remember(self, ctx: Context, payload: dict[str, Any]) -> str:
        reply = await ctx.call("mem::remember", payload, timeout=30)
        return crystals.remember_result_id(reply)

    @operation(
        "mem::crystallize",
        description="Compress completed action chains into compact crystal digests (narrative,"
        " key outcomes, files affected, lessons), saved as a memory.",
        http=rest("POST", "crystals/create", status=201),
        tool=Tool("memory_crystallize"),
        timeout=120,
    )
    async def crystallize(self, req: CrystallizeRequest, ctx: Context) -> CrystalOut:
        return await crystals.crystallize(self.cs, req, lambda p: self._remember(ctx, p))

    @operation(
        "mem::crystal-list",
        description="List crystals (?project=&sessionId=&limit=)",
        http=rest("GET", "crystals"),
    )
    async def crystal_list(self, req: CrystalListIn) -> CrystalsOut:
        return await crystals.listing(self.cs, req)

    @operation(
        "mem::crystal-auto",
        description="Crystallize done actions older than olderThanDays, grouped by parent or "
        "project (also daily on cron)",
        http=rest("POST", "crystals/auto"),
        timeout=600,
    )
    async def crystal_auto(self, req: CrystalAutoIn, ctx: Context) -> CrystalAutoOut:
        return await crystals.auto(self.cs, req, lambda p: self._remember(ctx, p))

    # ---- what the triggers call (bus only) -------------------------------------------
    @operation("mem::lease-changed", description="State trigger: a lease expired or went")
    async def lease_changed(self, ev: StateChange) -> None:
        await leases.on_lease_change(self.cs, ev)

    @operation("mem::coord-timer", description="State trigger: a coordination timer fired")
    async def timer_fired(self, ev: StateChange) -> None:
        if ev.op != "deleted" or not isinstance(ev.old, dict):
            return
        try:
            t = msgspec.convert(ev.old, Timer)
        except msgspec.ValidationError:
            return
        if t.kind in ("sentinel", "sentinel-expiry"):
            await sentinels.on_timer(self.cs, t.kind, t.target_id)
        elif t.kind == "checkpoint-expiry":
            await checkpoints.expire(self.cs, t.target_id, "timer")
        elif t.kind == "sketch-expiry":
            await sketches.on_timer(self.cs, t.target_id)

    @operation(
        "mem::sentinel-checkpoint",
        description="State trigger: a checkpoint changed; fire the sentinels watching it",
    )
    async def sentinel_checkpoint(self, ev: StateChange) -> None:
        await sentinels.on_checkpoint(self.cs, ev)

    @operation(
        "mem::sentinel-scan",
        description="Cron: match the observations stored since the last scan against the "
        "watching pattern sentinels (returns at once while none watches)",
        timeout=60,
    )
    async def sentinel_scan(self, req: NoArgs) -> None:
        if self.patterns.watching:
            await sentinels.scan_patterns(self.cs)

    @operation(
        "mem::coord-sweep",
        description="Cron backstop: hand back actions whose lease is gone, fire due timers "
        "and expiries, collect expired sketches",
        timeout=120,
    )
    async def sweep(self, req: NoArgs) -> SweepOut:
        handed = await leases.sweep(self.cs)
        fired = len((await sentinels.check(self.cs)).triggered)
        for cp in await self.cs.all(self.cs.checkpoints, Checkpoint):
            if cp.status == "pending" and cp.expires_at:
                fired += await checkpoints.expire(self.cs, cp.id, "sweep")
        collected = (await sketches.gc(self.cs)).collected
        return SweepOut(leases_handed_back=handed, timers_fired=fired, sketches_collected=collected)


def _fields(req: CheckpointOpIn) -> dict[str, Any]:
    return {k: v for k, v in msgspec.to_builtins(req).items() if v not in ("", None, [])}


def _field_of(exc: msgspec.ValidationError) -> str | None:
    text = str(exc)
    if "`$." in text:
        return text.split("`$.", 1)[1].split("`", 1)[0].split("[", 1)[0]
    if "required field `" in text:
        return text.split("required field `", 1)[1].split("`", 1)[0]
    return None
