"""Crystals: the digest of a completed chain of actions, saved as a memory so later
sessions find it. Synthetic by default (no LLM): the narrative, outcomes, files and lessons
come from the actions' titles, descriptions and results; with a model provider configured
(functions/kernel/models; `AGENTMEMORY_CRYSTALS_LLM=false` opts out) the model writes them,
and any failure falls back to the synthetic digest. `auto` groups done actions older than a cutoff
by parent (else project) and crystallizes each group; a daily cron runs it."""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from engine import FunctionError
from functions.coordination.crystals.wire import (
    CrystalAutoIn,
    CrystalAutoOut,
    CrystalGroup,
    CrystalListIn,
    CrystallizeIn,
    CrystalOut,
    CrystalsOut,
    CrystalView,
)
from functions.coordination.records import Action, Crystal, CrystalMethod
from functions.coordination.settings import coordination_settings
from functions.coordination.store import CoordStore
from functions.kernel.clock import ms_of, now_iso, now_ms
from functions.kernel.ids import kv_key, new_id
from functions.kernel.models import clients
from functions.kernel.models.settings import ModelSettings
from functions.kernel.scrub import scrub
from functions.kernel.text import clip
from functions.kernel.views import as_view

log = logging.getLogger("functions.coordination")
TASK = "crystals"
Remember = Callable[[dict[str, Any]], Awaitable[str]]
"""Saves a memory (mem::remember's request) and returns its id."""

NARRATIVE_MAX = 1500
OUTCOMES_MAX = 20
FILES_MAX = 50
_EXT = "py|pyi|ts|tsx|js|jsx|mjs|go|rs|java|kt|rb|php|cs|c|h|cc|cpp|hpp|swift|md|rst|json|ya?ml|toml|ini|cfg|sql|sh|css|scss|html|vue|proto|tf"
_FILE = re.compile(
    rf"(?<![\w/.:-])((?:\.{{0,2}}/)?(?:[\w.-]+/)+[\w.-]+|[\w-]+\.(?:{_EXT}))(?![\w/])"
)
_LESSON = re.compile(r"(?im)\b(?:lesson|learned|takeaway|gotcha)s?\s*[:\-]\s*(.+?)\s*$")
SYSTEM = (
    "You summarize a completed chain of a coding agent's actions into a compact digest. "
    "Keep file paths, commands and names exactly; add nothing that is not in the input. "
    'Reply with JSON only: {"narrative": "1-2 sentences", "keyOutcomes": ["..."], '
    '"filesAffected": ["..."], "lessons": ["..."]}'
)


class Digest(msgspec.Struct, rename="camel", kw_only=True):
    narrative: str
    key_outcomes: list[str] = msgspec.field(default_factory=list)
    files_affected: list[str] = msgspec.field(default_factory=list)
    lessons: list[str] = msgspec.field(default_factory=list)


def _first_sentence(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    cut = re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0]
    return cut if len(cut) <= limit else cut[: limit - 1] + "…"


def synthetic(chain: list[Action]) -> Digest:
    done = [a for a in chain if a.status == "done"]
    parts = [f"{a.title} ({_first_sentence(a.result)})" if a.result else a.title for a in chain]
    project = next((a.project for a in chain if a.project), "")
    head = f"{len(done)} of {len(chain)} actions completed" + (f" in {project}" if project else "")
    narrative = f"{head}: " + "; ".join(parts)
    if len(narrative) > NARRATIVE_MAX:
        narrative = narrative[: NARRATIVE_MAX - 1] + "…"
    outcomes = [
        f"{a.title}: {_first_sentence(a.result, 300)}" if a.result else a.title for a in done
    ][:OUTCOMES_MAX]
    files: list[str] = []
    lessons: list[str] = []
    for a in chain:
        for text in (a.title, a.description, a.result):
            for f in (m.rstrip(".,;:") for m in _FILE.findall(text)):
                if f and f not in files and not f.startswith(("http:", "https:")):
                    files.append(f)
            for lesson in _LESSON.findall(text):
                if lesson not in lessons:
                    lessons.append(lesson)
    return Digest(
        narrative=narrative,
        key_outcomes=outcomes,
        files_affected=files[:FILES_MAX],
        lessons=lessons[:OUTCOMES_MAX],
    )


def chain_text(chain: list[Action]) -> str:
    lines = ["## Completed action chain", ""]
    for a in chain:
        lines.append(f"### {a.title} [{a.status}]")
        if a.description:
            lines.append(a.description)
        if a.result:
            lines.append(f"Result: {a.result}")
        if a.tags:
            lines.append("Tags: " + ", ".join(a.tags))
        lines.append("")
    return "\n".join(lines)


def parse_digest(text: str) -> Digest | None:
    found = re.search(r"\{.*\}", text or "", re.DOTALL)
    if not found:
        return None
    try:
        d = msgspec.json.decode(found.group(0), type=Digest)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    if not d.narrative.strip():
        return None
    return Digest(
        narrative=scrub(d.narrative.strip())[:NARRATIVE_MAX],
        key_outcomes=[scrub(x) for x in d.key_outcomes[:OUTCOMES_MAX]],
        files_affected=[scrub(x) for x in d.files_affected[:FILES_MAX]],
        lessons=[scrub(x) for x in d.lessons[:OUTCOMES_MAX]],
    )


def llm_enabled() -> bool:
    """A provider is configured (functions/kernel/models) and AGENTMEMORY_CRYSTALS_LLM is not
    `false` (upstream asks its provider whenever one is configured)."""
    return coordination_settings().crystals_llm and ModelSettings.from_env().enabled


async def _llm_digest(cs: CoordStore, chain: list[Action]) -> Digest | None:
    text = await clients.client(cs.client).complete(TASK, SYSTEM, chain_text(chain))
    if text is None:
        log.warning("no model answered for the crystal; using the synthetic digest")
        return None
    return parse_digest(text)


def _memory_text(d: Digest) -> str:
    out = [d.narrative]
    out += [f"- {o}" for o in d.key_outcomes]
    if d.files_affected:
        out.append("Files: " + ", ".join(d.files_affected))
    out += [f"Lesson: {x}" for x in d.lessons]
    return "\n".join(out)


async def crystallize(cs: CoordStore, req: CrystallizeIn, remember: Remember) -> CrystalOut:
    chain: list[Action] = []
    for i, aid in enumerate(req.action_ids):
        a = await cs.need(cs.actions, aid, Action, f"actionIds[{i}]", "action")
        if a.status not in ("done", "cancelled"):
            raise FunctionError(
                "CONFLICT",
                f'action {aid} has status "{a.status}", expected "done" or "cancelled"',
                field=f"actionIds[{i}]",
            )
        chain.append(a)
    chain.sort(key=lambda a: (a.completed_at or a.updated_at, a.created_at))
    digest: Digest | None = None
    method: CrystalMethod = "synthetic"
    if llm_enabled():
        digest = await _llm_digest(cs, chain)
        if digest is not None:
            method = "llm"
    digest = digest or synthetic(chain)
    project = req.project or next((a.project for a in chain if a.project), "")
    crystal = Crystal(
        id=new_id("crys"),
        narrative=digest.narrative,
        key_outcomes=digest.key_outcomes,
        files_affected=digest.files_affected,
        lessons=digest.lessons,
        source_action_ids=[a.id for a in chain],
        session_id=req.session_id,
        project=project,
        created_at=now_iso(),
        method=method,
    )
    concepts = sorted({t for a in chain for t in a.tags if not t.startswith("routine:")})
    try:
        crystal.memory_id = await remember(
            {
                "content": _memory_text(digest),
                "type": "crystal",
                "title": clip("Crystal: " + chain[0].title, 120),
                "concepts": concepts[:20],
                "files": digest.files_affected[:20],
                "project": project,
                "sessionId": req.session_id,
                "agentId": req.agent_id,
            }
        )
    except FunctionError as err:  # the digest stands without its memory
        log.warning("crystal %s not saved as a memory: %s", crystal.id, err.message)
    await cs.crystals.create(kv_key(crystal.id), crystal)
    for a in chain:

        def mark(cur: Action | None) -> Action | None:
            if cur is None:
                return None
            cur.crystallized_into = crystal.id
            return cur

        await cs.update(cs.actions, kv_key(a.id), mark, Action)
    await cs.audit(
        "crystal-create",
        [crystal.id, *crystal.source_action_ids],
        actor=req.agent_id,
        project=project,
        memoryId=crystal.memory_id,
        method=method,
    )
    return CrystalOut(True, as_view(crystal, CrystalView))


async def listing(cs: CoordStore, req: CrystalListIn) -> CrystalsOut:
    found = [
        c
        for c in await cs.all(cs.crystals, Crystal)
        if (not req.project or c.project == req.project)
        and (not req.session_id or c.session_id == req.session_id)
    ]
    found.sort(key=lambda c: c.created_at, reverse=True)
    return CrystalsOut(True, as_view(found[: req.limit], list[CrystalView]))


async def auto(cs: CoordStore, req: CrystalAutoIn, remember: Remember) -> CrystalAutoOut:
    cutoff = now_ms() - int(req.older_than_days * 86_400_000)
    groups: dict[str, list[Action]] = {}
    for a in await cs.all(cs.actions, Action):
        if a.status != "done" or a.crystallized_into or a.sketch_id:
            continue
        if ms_of(a.created_at) >= cutoff or (req.project and a.project != req.project):
            continue
        groups.setdefault(a.parent_id or a.project or "_ungrouped", []).append(a)
    if req.dry_run:
        return CrystalAutoOut(
            success=True,
            group_count=len(groups),
            crystal_ids=[],
            dry_run=True,
            groups=[
                CrystalGroup(group_key=k, action_count=len(v), action_ids=[a.id for a in v])
                for k, v in sorted(groups.items())
            ],
        )
    made: list[str] = []
    for _key, chain in sorted(groups.items()):
        try:
            out = await crystallize(
                cs,
                CrystallizeIn(action_ids=[a.id for a in chain], project=chain[0].project),
                remember,
            )
        except FunctionError as err:
            log.warning("auto-crystallize skipped a group: %s", err.message)
            continue
        made.append(out.crystal.id)
    return CrystalAutoOut(success=True, group_count=len(groups), crystal_ids=made)


def remember_result_id(reply: Any) -> str:
    """The memory id of mem::remember's reply."""
    if isinstance(reply, dict):
        mem = reply.get("memory")
        if isinstance(mem, dict):
            return str(mem.get("id") or "")
    return ""
