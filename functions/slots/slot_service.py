"""Slots: named, size-capped blocks of core memory (Letta-style) that the agent reads and
edits across sessions; the pinned ones open every session's context (`mem::context` puts
them first). A slot is global or belongs to a project; a project slot without a project
is every project's default, and a project's own slot of the same label wins over it.

Keys: `g.<label>` (global) and `p.<project key>.<label>` (`_` for the default project).
Writes are compare-and-set updates, so two replicas appending at once both land.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Literal

import msgspec

from engine import Bucket, FunctionError, Tool, operation
from functions.kernel.clock import now_iso
from functions.kernel.owned import OwnedService, routes
from functions.kernel.records import SLOTS_BUCKET, Slot, Trust
from functions.kernel.store import StoreOwner
from functions.kernel.trust import write_path as trust
from functions.kernel.views import as_view, view

HARD_CAP = 20_000
DEFAULT_LIMIT = 2000
Label = Annotated[str, msgspec.Meta(pattern=r"^[a-z][a-z0-9_]{0,63}$")]
"""Lower case, starts with a letter, [a-z0-9_], at most 64 characters."""
Scope = Literal["project", "global"]
# To the type checker a view is its record (the same attributes).
if TYPE_CHECKING:
    SlotView = Slot
else:
    SlotView = view(Slot)

# The slots every store starts with (empty until something writes them): upstream's set.
DEFAULTS: list[tuple[str, int, str, bool, Scope]] = [
    ("persona", 1000, "How the agent should see itself: role, tone, guidelines.", True, "global"),
    (
        "user_preferences",
        2000,
        "Coding style, tool preferences and habits to keep.",
        True,
        "global",
    ),
    ("tool_guidelines", 1500, "Rules for picking and sequencing tools.", True, "global"),
    (
        "project_context",
        3000,
        "Architecture decisions, conventions, build and test commands.",
        True,
        "project",
    ),
    (
        "guidance",
        1500,
        "Advice for the next session: focus, things to avoid, open risks.",
        True,
        "project",
    ),
    (
        "pending_items",
        2000,
        "Unfinished work, TODOs and promises not yet delivered.",
        True,
        "project",
    ),
    (
        "session_patterns",
        1500,
        "Recurring behaviours and struggles across sessions.",
        False,
        "project",
    ),
    (
        "self_notes",
        1500,
        "The agent's own notes: hypotheses, dead ends, things to revisit.",
        False,
        "project",
    ),
]


def project_key(project: str) -> str:
    # the project as stored (a slot's project is sanitized and scrubbed), so that a request
    # naming it as it was sent finds it
    project = trust.stored_text(project)
    return "_" if not project else "p" + hashlib.sha256(project.encode()).hexdigest()[:24]


def slot_key(scope: str, label: str, project: str = "") -> str:
    return f"g.{label}" if scope == "global" else f"p.{project_key(project)}.{label}"


def lookup_keys(label: str, project: str) -> list[str]:
    """Where a label resolves, first match wins: the project's own, the default, global."""
    keys = [slot_key("project", label, project)] if project else []
    return [*keys, slot_key("project", label), slot_key("global", label)]


async def visible_slots(state: Bucket, project: str) -> list[Slot]:
    """Every slot a project sees, one per label (its own over the default over global)."""
    prefixes = ["g.", "p._."] + ([f"p.{project_key(project)}."] if project else [])
    merged: dict[str, Slot] = {}
    for prefix in prefixes:  # later prefixes win
        async for _, s in state.scan(prefix + ">", Slot):
            merged[s.label] = s
    return sorted(merged.values(), key=lambda s: s.label)


async def pinned_context(state: Bucket, project: str) -> str:
    """The pinned, non-empty slots as the block that opens a session's context."""
    pinned = [s for s in await visible_slots(state, project) if s.pinned and s.content.strip()]
    if not pinned:
        return ""
    parts = ["# agentmemory pinned slots"]
    parts += [f"## {s.label}\n{s.content.strip()}" for s in pinned]
    return "\n\n".join(parts)


def _flag(value: bool | str | None) -> bool | None:
    """Upstream's tools send booleans as strings ('true' / 'false')."""
    if value is None or isinstance(value, bool):
        return value
    low = value.strip().lower()
    if low in ("true", "1", "yes"):
        return True
    if low in ("false", "0", "no"):
        return False
    raise FunctionError("BAD_REQUEST", f"expected true or false, got {value!r}", field="pinned")


# ---- requests and replies -------------------------------------------------------------
class SlotListIn(msgspec.Struct, rename="camel", kw_only=True):
    project: str = ""


class SlotGetIn(msgspec.Struct, rename="camel", kw_only=True):
    label: Label
    project: str = ""


class SlotCreateIn(msgspec.Struct, rename="camel", kw_only=True):
    label: Label
    content: str = ""
    description: str = ""
    size_limit: Annotated[int, msgspec.Meta(ge=1, le=HARD_CAP)] = DEFAULT_LIMIT
    pinned: bool | Literal["true", "false"] | None = None
    """Default true; upstream's tools send 'true' / 'false'."""
    scope: Scope = "project"
    project: str = ""


class SlotAppendIn(msgspec.Struct, rename="camel", kw_only=True):
    label: Label
    text: Annotated[str, msgspec.Meta(min_length=1, max_length=HARD_CAP)]
    project: str = ""


class SlotReplaceIn(msgspec.Struct, rename="camel", kw_only=True):
    label: Label
    content: Annotated[str, msgspec.Meta(max_length=HARD_CAP)]
    project: str = ""


class SlotReflectIn(msgspec.Struct, rename="camel", kw_only=True):
    session_id: Annotated[str, msgspec.Meta(min_length=1, max_length=512)]
    max_observations: Annotated[int, msgspec.Meta(ge=1, le=200)] = 50
    project: str = ""


class SlotsOut(msgspec.Struct, kw_only=True):
    success: bool
    slots: list[SlotView]


class SlotOut(msgspec.Struct, kw_only=True, omit_defaults=True):
    success: bool
    slot: SlotView
    scope: str = ""
    size: int | None = None


class Deleted(msgspec.Struct, kw_only=True):
    success: bool
    label: str


class ReflectOut(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    success: bool
    applied: int
    observations_reviewed: int
    reason: str = ""


rest = routes("slots")


class SlotService(OwnedService[StoreOwner]):
    """Served by the memory worker, over the store its `MemoryService` opened."""

    BUCKET = SLOTS_BUCKET

    async def seed(self) -> None:
        """Create the default slots that are missing (atomic: replicas may race)."""
        st = await self.bucket()
        at = now_iso()
        for label, limit, desc, pinned, scope in DEFAULTS:
            slot = Slot(
                label=label,
                size_limit=limit,
                description=desc,
                pinned=pinned,
                scope=scope,
                created_at=at,
                updated_at=at,
            )
            await st.create(slot_key(scope, label), slot, over_tombstone=False)

    async def _find(self, label: str, project: str) -> tuple[str, Slot]:
        st = await self.bucket()
        for key in lookup_keys(label, project):
            s: Slot | None = await st.get(key, Slot)
            if s is not None:
                return key, s
        raise FunctionError("NOT_FOUND", f"slot {label!r} not found", field="label")

    async def _judged(self, words: dict[str, str]) -> Trust:
        """The verdict on words the agent writes into a slot: pinned slots open every
        session's context, so they are judged like a `remember`."""
        verdict = trust.classify_value(words, trust.REMEMBER)
        verdict = await trust.second_opinion(
            self.store.client, verdict, trust.stored_value(words), trust.REMEMBER
        )
        return trust.trust_of(verdict, trust.REMEMBER)

    async def _edit(
        self,
        label: str,
        project: str,
        change: Callable[[Slot], str],
        judged: Trust | None = None,
        replaces: bool = False,
    ) -> Slot:
        key, _ = await self._find(label, project)
        st = await self.bucket()
        err: list[FunctionError] = []

        def apply(cur: Slot | None) -> Slot | None:
            err.clear()
            if cur is None:
                err.append(FunctionError("NOT_FOUND", f"slot {label!r} not found", field="label"))
                return None
            if cur.read_only:
                err.append(FunctionError("FORBIDDEN", f"slot {label!r} is read-only"))
                return None
            try:
                cur.content = change(cur)
            except FunctionError as e:
                err.append(e)
                return None
            if judged is not None:
                # new content is judged alone; appended words hold what they join
                cur.trust = judged if replaces else trust.either(judged, cur.trust)
            cur.updated_at = now_iso()
            return cur

        out: Slot | None = await st.update(key, apply, type=Slot)
        if err:
            raise err[0]
        assert out is not None
        return out

    # ---- operations ------------------------------------------------------------------
    @operation(
        "mem::slot-list",
        description="List all memory slots (pinned + project + global). Slots are editable, "
        "size-limited memory units the agent can read and modify across sessions.",
        http=rest("GET", "slots"),
        tool=Tool("memory_slot_list"),
    )
    async def slot_list(self, req: SlotListIn) -> SlotsOut:
        slots = await visible_slots(await self.bucket(), req.project)
        return SlotsOut(success=True, slots=as_view(slots, list[SlotView]))

    @operation(
        "mem::slot-get",
        description="Read a single slot by label.",
        http=rest("GET", "slot"),
        tool=Tool("memory_slot_get"),
    )
    async def slot_get(self, req: SlotGetIn) -> SlotOut:
        _, s = await self._find(req.label, req.project)
        return SlotOut(success=True, slot=as_view(s, SlotView), scope=s.scope)

    @operation(
        "mem::slot-create",
        description="Create a new slot; refused if the label exists in that scope.",
        http=rest("POST", "slot", status=201),
        tool=Tool("memory_slot_create"),
    )
    async def slot_create(self, req: SlotCreateIn) -> SlotOut:
        judged = await self._judged({"content": req.content, "description": req.description})
        text = trust.stored_text  # invisible characters out, then secrets
        content = text(req.content)
        if len(content) > req.size_limit:
            raise FunctionError(
                "TOO_LARGE",
                f"content exceeds sizeLimit ({len(content)} > {req.size_limit})",
                field="content",
            )
        pinned = _flag(req.pinned)
        project = text(req.project) if req.scope == "project" else ""
        at = now_iso()
        slot = Slot(
            label=req.label,
            content=content,
            size_limit=req.size_limit,
            description=text(req.description),
            pinned=True if pinned is None else pinned,
            scope=req.scope,
            project=project,
            created_at=at,
            updated_at=at,
            trust=judged,
        )
        st = await self.bucket()
        if await st.create(slot_key(req.scope, req.label, project), slot) is None:
            raise FunctionError(
                "CONFLICT",
                f"slot {req.label!r} already exists in {req.scope} scope",
                field="label",
                retryable=False,
            )
        trust.count(self.store.client, judged)
        await self.store.audit("slot_create", [req.label], reason=req.scope, project=project)
        return SlotOut(success=True, slot=as_view(slot, SlotView))

    @operation(
        "mem::slot-append",
        description="Append text to a slot. Refused (413) if it would exceed the slot's "
        "sizeLimit: compact it with memory_slot_replace first.",
        http=rest("POST", "slot/append"),
        tool=Tool("memory_slot_append"),
    )
    async def slot_append(self, req: SlotAppendIn) -> SlotOut:
        judged = await self._judged({"text": req.text})
        text = trust.stored_text(req.text)

        def add(cur: Slot) -> str:
            sep = "\n" if cur.content and not cur.content.endswith("\n") else ""
            nxt = f"{cur.content}{sep}{text}"
            if len(nxt) > cur.size_limit:
                raise FunctionError(
                    "TOO_LARGE",
                    f"append would exceed sizeLimit ({len(nxt)} > {cur.size_limit}); "
                    "use memory_slot_replace to compact first",
                    field="text",
                )
            return nxt

        s = await self._edit(req.label, req.project, add, judged)
        trust.count(self.store.client, judged)
        await self.store.audit("slot_append", [req.label], project=s.project)
        return SlotOut(success=True, slot=as_view(s, SlotView), size=len(s.content))

    @operation(
        "mem::slot-replace",
        description="Replace a slot's content in place; refused if it exceeds sizeLimit.",
        http=rest("POST", "slot/replace"),
        tool=Tool("memory_slot_replace"),
    )
    async def slot_replace(self, req: SlotReplaceIn) -> SlotOut:
        judged = await self._judged({"content": req.content})
        content = trust.stored_text(req.content)

        def put(cur: Slot) -> str:
            if len(content) > cur.size_limit:
                raise FunctionError(
                    "TOO_LARGE",
                    f"content exceeds sizeLimit ({len(content)} > {cur.size_limit})",
                    field="content",
                )
            return content

        s = await self._edit(req.label, req.project, put, judged, replaces=True)
        trust.count(self.store.client, judged)
        await self.store.audit("slot_replace", [req.label], project=s.project)
        return SlotOut(success=True, slot=as_view(s, SlotView), size=len(s.content))

    @operation(
        "mem::slot-delete",
        description="Delete a slot (seeded default slots too, unless read-only).",
        http=rest("DELETE", "slot", source="query"),
        tool=Tool("memory_slot_delete"),
    )
    async def slot_delete(self, req: SlotGetIn) -> Deleted:
        key, s = await self._find(req.label, req.project)
        if s.read_only:
            raise FunctionError("FORBIDDEN", f"slot {req.label!r} is read-only")
        await (await self.bucket()).delete(key)
        await self.store.audit("slot_delete", [req.label], project=s.project)
        return Deleted(success=True, label=req.label)

    @operation(
        "mem::slot-reflect",
        description="Rewrite pending_items, session_patterns and project_context from a "
        "session's recent observations (synthetic: TODOs, error and command counts, files).",
        http=rest("POST", "slot/reflect"),
    )
    async def slot_reflect(self, req: SlotReflectIn) -> ReflectOut:
        st = self.store
        obs = [
            o
            async for o in st.scan_observations()
            # a held observation's words must not reach a pinned slot
            if o.session_id == req.session_id and not (o.trust and o.trust.held)
        ]
        if not obs:
            return ReflectOut(
                success=True,
                applied=0,
                observations_reviewed=0,
                reason="no observations for session",
            )
        recent = sorted(obs, key=lambda o: o.timestamp, reverse=True)[: req.max_observations]
        project = req.project or recent[0].project
        todos = [f"- {o.title}" for o in recent if "todo" in f"{o.title} {o.narrative}".lower()]
        kinds = Counter(o.type for o in recent if o.type in ("error", "command"))
        files = list(dict.fromkeys(f for o in recent for f in o.files))
        applied = 0
        if todos and await self._merge_lines("pending_items", project, todos):
            applied += 1
        if kinds:
            lines = [f"last reflection: {now_iso()}"] + [
                f"- {k}: {n} in the last {len(recent)} observations" for k, n in kinds.items()
            ]
            if await self._rewrite("session_patterns", project, "\n".join(lines)):
                applied += 1
        if files and await self._merge_lines(
            "project_context", project, [f"- {f}" for f in files[:20]]
        ):
            applied += 1
        if applied:
            await st.audit("slot_reflect", [req.session_id], project=project)
        return ReflectOut(success=True, applied=applied, observations_reviewed=len(recent))

    async def _merge_lines(self, label: str, project: str, lines: list[str]) -> bool:
        try:
            _, cur = await self._find(label, project)
        except FunctionError:
            return False
        have = set(cur.content.splitlines())
        fresh = [ln for ln in lines if ln not in have]
        if not fresh:
            return False

        def add(s: Slot) -> str:
            sep = "\n" if s.content and not s.content.endswith("\n") else ""
            nxt = s.content + sep + "\n".join(fresh)
            return nxt[-s.size_limit :]  # the newest lines win when the slot is full

        await self._edit(label, project, add)
        return True

    async def _rewrite(self, label: str, project: str, text: str) -> bool:
        try:
            await self._edit(label, project, lambda s: text[: s.size_limit])
        except FunctionError:
            return False
        return True
