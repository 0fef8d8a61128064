"""Replay: the sessions that can be replayed, one session as a timeline, and Claude Code
transcripts imported as sessions (upstream's `mem::replay::*` and their routes).

An import goes through the write path itself (every turn judged as third-party text,
sanitize, scrub, dedup by event id, compress, store, MEM_EVENTS), so its observations are
indexed like a hook's; they and their session are marked origin `import`, the rules said in
them become lessons, and the import is audited.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import msgspec

from engine import FunctionError, operation
from functions.files.file_service import checked_path
from functions.kernel.clock import now_iso
from functions.kernel.confine import OutsideRoots, confine
from functions.kernel.ids import kv_key
from functions.kernel.owned import routes
from functions.kernel.records import Session
from functions.kernel.store import MemoryStore
from functions.kernel.trust import write_path as trust
from functions.kernel.views import SessionView, as_view
from functions.memory.observe import prepare, reviewed
from functions.memory.wire import NonEmpty, ObserveIn
from functions.replay import lessons, transcripts
from functions.replay.timeline import Timeline, project

if TYPE_CHECKING:
    from functions.memory.memory_service import MemoryService
    from functions.memory.observe import Observer

log = logging.getLogger("functions.replay")

MAX_FILES = 1000
CONTENT_MAX = 16 * 1024 * 1024
IMPORT_AGENT = "claude-code"
LESSON_TIMEOUT = 5.0


rest = routes("replay")


class ReplaySessionsIn(msgspec.Struct, rename="camel", kw_only=True):
    project: str = ""
    agent_id: str = ""
    limit: Annotated[int, msgspec.Meta(ge=1, le=10_000)] = 500


class ReplaySessionsOut(msgspec.Struct, kw_only=True):
    success: bool
    sessions: list[SessionView]
    """Newest first; `origin` is `import` for imported transcripts."""


class ReplayLoadIn(msgspec.Struct, rename="camel", kw_only=True):
    session_id: NonEmpty
    agent_id: str = ""


class ReplayLoadOut(msgspec.Struct, kw_only=True):
    success: bool
    timeline: Timeline
    session: SessionView | None


class ImportJsonlIn(msgspec.Struct, rename="camel", kw_only=True):
    path: Annotated[str, msgspec.Meta(max_length=4096, pattern="^[^\\x00]*$")] = ""
    """A .jsonl file or a folder of them on the server's machine (not a symlink, nor a
    secret-looking path), under ~/.claude/projects or an allowed root (the data dir,
    ~/.agentmemory, AGENTMEMORY_IMPORT_ROOT); default ~/.claude/projects."""
    content: Annotated[str, msgspec.Meta(max_length=CONTENT_MAX)] = ""
    """Or one transcript's text (an upload); then `path` is not read."""
    name: Annotated[str, msgspec.Meta(max_length=512)] = ""
    """The uploaded file's name: the session id when its records carry none."""
    max_files: Annotated[int, msgspec.Meta(ge=1, le=MAX_FILES)] = 200
    project: str = ""
    """Default: the name of the git root above each session's cwd."""
    agent_id: str = IMPORT_AGENT


class ImportJsonlOut(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    success: bool
    imported: int
    """Transcript files read."""
    session_ids: list[str]
    observations: int
    """Events read; `stored` were new, `duplicates` had been imported before."""
    stored: int
    duplicates: int
    lessons: int
    """Lessons saved (or reinforced) from rules said in newly imported sessions."""
    discovered: int
    """Transcripts found (one more than `maxFiles` when there were more)."""
    truncated: bool
    """More files were found than `maxFiles`."""
    max_files: int
    error: str | None = None
    """Why nothing was read (`success` false): the path is outside the allowed roots."""


VISIT = 50_000
"""Directory entries a folder import looks at, at most (a path like `/` must not walk the
whole disk)."""


def _found(root: Path, limit: int) -> tuple[list[Path], int]:
    """Transcripts under `root` (at most `limit`, symlinks left out) and how many were seen
    (one more than `limit` when there are more)."""
    if root.is_file():
        if root.suffix != ".jsonl":
            raise FunctionError(
                "NOT_FOUND", f"{root} is not a .jsonl file or a folder of them", field="path"
            )
        return [root], 1
    found = [p for p in transcripts.find_transcripts(root, limit, VISIT) if not p.is_symlink()]
    return found[:limit], len(found)


def _project(s: transcripts.TranscriptSession, req: ImportJsonlIn) -> str:
    return req.project or (transcripts.project_of_cwd(s.cwd) if s.cwd else "imported")


class ReplayService:
    """Served beside the memory service, whose store and write path it uses."""

    def __init__(self, owner: MemoryService) -> None:
        self.owner = owner

    @property
    def store(self) -> MemoryStore:
        return self.owner.store

    @property
    def observer(self) -> Observer:
        return self.owner.observer

    @operation(
        "mem::replay::sessions",
        description="Sessions that can be replayed, newest first (native and imported).",
        http=rest("GET", "replay/sessions"),
    )
    async def sessions(self, req: ReplaySessionsIn) -> ReplaySessionsOut:
        st = self.store
        found = [
            s
            for s in await st.load_all(st.sessions, Session)
            if st.visible(s.agent_id, req.agent_id)
            and (not req.project or s.project == req.project)
        ]
        found.sort(key=lambda s: s.started_at or s.last_seen, reverse=True)
        return ReplaySessionsOut(
            success=True, sessions=as_view(found[: req.limit], list[SessionView])
        )

    @operation(
        "mem::replay::load",
        description="A session as a timeline of prompts, tool calls, results and responses.",
        http=rest("GET", "replay/load"),
    )
    async def load(self, req: ReplayLoadIn) -> ReplayLoadOut:
        st = self.store
        session = await st.get(st.sessions, req.session_id, Session)
        if session is not None and not st.visible(session.agent_id, req.agent_id):
            session = None
        obs = [
            o
            async for o in st.scan_observations(session.project if session else "")
            if o.session_id == req.session_id and st.visible(o.agent_id, req.agent_id)
        ]
        if session is None and not obs:
            raise FunctionError("NOT_FOUND", f"no session {req.session_id}", field="sessionId")
        return ReplayLoadOut(
            success=True,
            timeline=project(req.session_id, obs),
            session=as_view(session, SessionView) if session is not None else None,
        )

    @operation(
        "mem::replay::import-jsonl",
        description="Import Claude Code transcripts (.jsonl) as sessions: indexed, marked "
        "origin import, their rules saved as lessons. Safe to run again.",
        timeout=600,
        http=rest("POST", "replay/import-jsonl", status=202, max_body=CONTENT_MAX + 1024 * 1024),
    )
    async def import_jsonl(self, req: ImportJsonlIn) -> ImportJsonlOut:
        out = ImportJsonlOut(
            success=True, imported=0, session_ids=[], observations=0, stored=0, duplicates=0,
            lessons=0, discovered=0, truncated=False, max_files=req.max_files,
        )  # fmt: skip
        if req.content:
            parsed = transcripts.parse_text(req.content, Path(req.name or "upload").stem)
            out.imported = out.discovered = 1
            await self._import_sessions(parsed, req, out, where=req.name or "upload")
        else:
            transcripts_root = Path.home() / ".claude" / "projects"
            root = checked_path(req.path or str(transcripts_root), "path")
            try:
                root = confine(str(root), extra=[transcripts_root])
            except OutsideRoots as refused:
                out.success, out.error = False, str(refused)
                return out
            if not root.exists():
                if req.path:
                    raise FunctionError("NOT_FOUND", f"no such path {root}", field="path")
                return out  # no transcripts on this machine: nothing to import
            files, out.discovered = await asyncio.to_thread(_found, root, req.max_files)
            out.truncated = out.discovered > len(files)
            for f in files:
                parsed = await asyncio.to_thread(transcripts.parse, f)
                out.imported += 1
                await self._import_sessions(parsed, req, out, where=str(f))
        if out.session_ids:
            await self.store.audit(
                "import",
                out.session_ids,
                reason=f"jsonl: {out.stored} new of {out.observations} events, "
                f"{out.imported} file(s), {out.lessons} lesson(s)",
                actor=trust.stored_text(req.agent_id),
            )
        return out

    async def _import_sessions(
        self,
        parsed: list[transcripts.TranscriptSession],
        req: ImportJsonlIn,
        out: ImportJsonlOut,
        where: str,
    ) -> None:
        for s in parsed:
            stored = await self._import_session(s, req, out)
            out.session_ids.append(trust.stored_text(s.session_id))
            if stored:
                out.lessons += await self._lessons(s, req)
            log.info("imported %s from %s: %d new event(s)", s.session_id, where, stored)

    async def _import_session(
        self, s: transcripts.TranscriptSession, req: ImportJsonlIn, out: ImportJsonlOut
    ) -> int:
        st, observer = self.store, self.observer
        sid = trust.stored_text(s.session_id)
        proj = trust.stored_text(_project(s, req))
        agent = st.default_agent(trust.stored_text(req.agent_id))
        stamps = sorted(e["timestamp"] for e in s.events if e["timestamp"])
        first, last = (stamps[0], stamps[-1]) if stamps else (now_iso(), now_iso())

        def upsert(cur: Session | None) -> Session:
            if cur is None:
                return Session(
                    id=sid, project=proj, agent_id=agent, cwd=trust.stored_text(s.cwd), started_at=first,
                    ended_at=last, status="ended", last_seen=last, origin="import",
                )  # fmt: skip
            if last > (cur.ended_at or ""):
                cur.ended_at = last
            cur.last_seen = max(cur.last_seen, last)
            cur.status = "ended" if cur.status == "active" else cur.status
            return cur

        await st.sessions.update(kv_key(sid), upsert, type=Session)
        stored = 0
        for ev in s.events:
            try:
                built = prepare(
                    msgspec.convert(
                        {
                            **ev,
                            "project": proj,
                            "cwd": s.cwd,
                            "timestamp": ev["timestamp"] or now_iso(),
                            "agentId": agent,
                        },
                        ObserveIn,
                    ),
                    agent,
                    # An imported transcript may be any file uploaded as `content`: every
                    # turn, the user's too, is judged as third-party text.
                    source=trust.IMPORT,
                )
            except (FunctionError, msgspec.ValidationError) as exc:
                log.info("skipped an event of %s: %s", sid, exc)
                continue
            obs = await reviewed(st, built)
            obs.origin = "import"
            out.observations += 1
            if await observer.store_observation(built.key, obs) == "accepted":
                stored += 1
                trust.count(st.client, obs.trust)
            else:
                out.duplicates += 1
        out.stored += stored
        return stored

    async def _lessons(self, s: transcripts.TranscriptSession, req: ImportJsonlIn) -> int:
        said = [
            str(e["data"].get("prompt") or e["data"].get("assistant_response") or "")
            for e in s.events
            if e["hookType"] in ("prompt_submit", "stop")
        ]
        first = next((t for t in said if t), "")
        saved = 0
        for content in lessons.candidates(said):
            try:
                await self.store.client.call(
                    "mem::lesson::save",
                    {
                        "content": content,
                        "context": " ".join(first.split())[:200],
                        "project": _project(s, req),
                        "agentId": req.agent_id,
                        "sourceIds": [s.session_id],
                        "source": "import",  # said in an imported transcript, not typed in
                    },
                    timeout=LESSON_TIMEOUT,
                )
                saved += 1
            except FunctionError as err:
                # The lifecycle worker saves lessons; without it the import still stands.
                log.info("lessons of %s not saved: %s", s.session_id, err.message)
                if err.code in ("UNAVAILABLE", "DEADLINE_EXCEEDED"):
                    break
        return saved
