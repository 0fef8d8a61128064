"""`flow/compress`: a completed chain of actions (a routine run, a list of actions, or a
project's done actions) becomes one workflow memory: its goal, steps in order, outcomes.
The actions are the coordination layer's; they are read through its functions
(`mem::action-get`, `mem::action-list`, `mem::routine-status`), never from its storage."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import msgspec

from engine import Context, FunctionError, Http, operation
from functions.kernel.names import SOME_NAMES, TEXT, Names, at_least_one_of, names
from functions.kernel.text import clip
from functions.kernel.views import MemoryView
from functions.memory import remember as remember_mod
from functions.memory.wire import RememberIn

if TYPE_CHECKING:
    from functions.lifecycle.lifecycle_service import LifecycleService


class FlowIn(msgspec.Struct, rename="camel", kw_only=True):
    run_id: str = ""
    action_ids: Names = msgspec.field(default_factory=list)
    project: str = ""

    def __post_init__(self) -> None:
        self.action_ids = names(self.action_ids)


FlowRequest = Annotated[
    FlowIn,
    msgspec.Meta(extra_json_schema=at_least_one_of(runId=TEXT, actionIds=SOME_NAMES, project=TEXT)),
]
"""runId, actionIds or project: at least one."""


class FlowOut(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    success: bool
    compressed: int
    memory_id: str = ""
    memory: MemoryView | None = None
    message: str = ""


def _actions_of(reply: Any) -> list[dict[str, Any]]:
    if isinstance(reply, dict):
        for key in ("actions", "items"):
            if isinstance(reply.get(key), list):
                return [a for a in reply[key] if isinstance(a, dict)]
        if isinstance(reply.get("action"), dict):
            return [reply["action"]]
    return []


def workflow_text(actions: list[dict[str, Any]]) -> tuple[str, str, list[str]]:
    """(title, content, concepts) of a chain of done actions, oldest first."""
    ordered = sorted(actions, key=lambda a: str(a.get("createdAt") or ""))
    titles = [str(a.get("title") or a.get("id") or "step") for a in ordered]
    steps = [
        f"{i}. {t}" + (f": {a['result']}" if a.get("result") else "")
        for i, (t, a) in enumerate(zip(titles, ordered, strict=True), 1)
    ]
    tags = list(
        dict.fromkeys(
            str(t)
            for a in ordered
            for t in a.get("tags") or []
            if not str(t).startswith("routine:")
        )
    )
    title = f"Workflow: {titles[0]}" + (f" (+{len(titles) - 1} steps)" if len(titles) > 1 else "")
    outcome = next((str(a["result"]) for a in reversed(ordered) if a.get("result")), "done")
    content = f"Goal: {titles[0]}\n\nSteps:\n" + "\n".join(steps) + f"\n\nOutcome: {outcome}"
    return clip(title, 120), content, tags[:20]


TASK = "flow"
SYSTEM = (
    "You summarize a completed chain of a coding agent's actions (in order, with their results "
    'and tags). Reply with one JSON object and nothing else: {"goal": "what the workflow set '
    'out to do", "outcome": "what happened", "steps": ["the key steps, in order"], '
    '"discoveries": "what was learned on the way", "lesson": "what to remember next time"}. '
    "Keep file paths, commands, names and numbers exactly as given; add nothing the input "
    "does not say."
)


class FlowReply(msgspec.Struct, kw_only=True):
    goal: str
    outcome: str = ""
    steps: list[str] = msgspec.field(default_factory=list)
    discoveries: str = ""
    lesson: str = ""


def chain_prompt(actions: list[dict[str, Any]]) -> str:
    lines = ["Completed actions, oldest first:"]
    for a in sorted(actions, key=lambda a: str(a.get("createdAt") or "")):
        lines.append(f"- {a.get('title') or a.get('id')}")
        for key in ("description", "result"):
            if a.get(key):
                lines.append(f"  {key}: {a[key]}")
        if a.get("tags"):
            lines.append("  tags: " + ", ".join(str(t) for t in a["tags"]))
    return "\n".join(lines)


def _worded(r: FlowReply) -> tuple[str, str]:
    """(title, content) of the workflow memory as the model wrote it."""
    parts = [f"Goal: {r.goal.strip()}"]
    if r.outcome.strip():
        parts.append(f"Outcome: {r.outcome.strip()}")
    steps = [s.strip() for s in r.steps if s.strip()]
    if steps:
        parts.append("Steps:\n" + "\n".join(f"{i}. {s}" for i, s in enumerate(steps, 1)))
    if r.discoveries.strip():
        parts.append(f"Discoveries: {r.discoveries.strip()}")
    if r.lesson.strip():
        parts.append(f"Lesson: {r.lesson.strip()}")
    return ("Workflow: " + r.goal.strip())[:120], "\n\n".join(parts)


class FlowService:
    def __init__(self, owner: LifecycleService) -> None:
        self.owner = owner

    @operation(
        "mem::flow-compress",
        description="Compress a completed action chain (runId, actionIds or a project's done "
        "actions) into one workflow memory",
        timeout=120,
        http=Http("POST", "/agentmemory/flow/compress", tags=["lifecycle"]),
    )
    async def flow_compress(self, req: FlowRequest, ctx: Context) -> FlowOut:
        if not (req.run_id or req.action_ids or req.project):
            raise FunctionError("BAD_REQUEST", "give runId, actionIds or project", field="runId")
        try:
            actions: list[dict[str, Any]] = []
            if req.run_id:
                # a run's steps name their actions; each is read whole (result, tags)
                run = await ctx.call("mem::routine-status", {"runId": req.run_id})
                steps = run.get("actions") if isinstance(run, dict) else None
                ids = [
                    s["actionId"] for s in steps or [] if isinstance(s, dict) and s.get("actionId")
                ]
                for aid in ids[:200]:
                    actions += _actions_of(await ctx.call("mem::action-get", {"actionId": aid}))
            elif req.action_ids:
                for aid in [a for a in req.action_ids if a.strip()][:200]:  # blanks name none
                    actions += _actions_of(await ctx.call("mem::action-get", {"actionId": aid}))
            else:
                listed = await ctx.call(
                    "mem::action-list", {"project": req.project, "status": "done"}
                )
                actions = _actions_of(listed)
        except FunctionError as err:
            if err.code != "UNAVAILABLE":
                raise
            # No coordination worker: there are no actions to compress, which is an answer.
            return FlowOut(
                success=True,
                compressed=0,
                message=f"no actions: no worker serves them ({err.message})",
            )
        done = [a for a in actions if a.get("status") == "done"]
        if not done:
            return FlowOut(success=True, compressed=0, message="no completed actions to compress")
        title, content, tags = workflow_text(done)
        worded = await self.owner.model().ask(TASK, SYSTEM, chain_prompt(done), FlowReply)
        if worded is not None and worded.goal.strip():
            title, content = _worded(worded)
        out = await remember_mod.remember(
            self.owner.store,
            RememberIn(
                content=content,
                title=title,
                type="workflow",
                concepts=tags,
                project=req.project or str(done[0].get("project") or ""),
            ),
        )
        saved: Any = out.memory
        return FlowOut(success=True, compressed=len(done), memory_id=saved.id, memory=saved)
