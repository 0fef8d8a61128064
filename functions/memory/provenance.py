"""Provenance: `verify` traces a memory (or lesson, or observation) back to the records it
was made from and says whether that chain still holds; commits link sessions to the git
commits they produced (the post-commit hook) and back (`by-commit`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from engine import FunctionError, Tool, operation
from functions.memory.scrub import scrub
from functions.memory.store import StoreOwner, kv_key, now_iso
from functions.memory.wire import SessionView
from functions.owned import OwnedService, routes
from functions.records import (
    COMMITS_BUCKET,
    LESSONS_BUCKET,
    CommitLink,
    Lesson,
    Memory,
    Observation,
    Session,
)
from functions.views import as_view, view

Id = Annotated[str, msgspec.Meta(min_length=1, max_length=512)]
Sha = Annotated[str, msgspec.Meta(pattern=r"^[0-9a-fA-F]{4,64}$")]
CommitView = view(CommitLink)
Status = Literal["present", "forgotten", "missing"]


class VerifyIn(msgspec.Struct, rename="camel", kw_only=True):
    id: Id


class Citation(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    id: str
    kind: str
    """observation or session"""
    status: Status
    """present; forgotten (deleted, its tombstone kept); missing (never stored here)."""
    title: str = ""
    session_id: str = ""
    timestamp: str = ""
    project: str = ""


class VerifyOut(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    success: bool
    id: str
    type: str
    """memory, lesson or observation"""
    verdict: Literal["verified", "broken", "unsourced"]
    """verified: every source is still stored; broken: some source was forgotten or is
    missing; unsourced: the record names no source to check."""
    verified: bool
    citations: list[Citation]
    citation_count: int
    broken: list[str]
    record: dict[str, Any] | None = None


class CommitIn(msgspec.Struct, rename="camel", kw_only=True):
    sha: Sha
    session_id: str = ""
    branch: str = ""
    repo: str = ""
    message: Annotated[str, msgspec.Meta(max_length=20_000)] = ""
    author: str = ""
    authored_at: str = ""
    files: list[str] = msgspec.field(default_factory=list)


class ByCommitIn(msgspec.Struct, rename="camel", kw_only=True):
    sha: Sha


class CommitOut(msgspec.Struct, kw_only=True):
    commit: CommitView  # type: ignore[valid-type]


class ByCommitOut(msgspec.Struct, kw_only=True):
    commit: CommitView | None  # type: ignore[valid-type]
    sessions: list[SessionView]


rest = routes("provenance")


class ProvenanceService(OwnedService[StoreOwner]):
    """Served beside the worker's main service, over its store."""

    async def _cite(self, sid: str) -> Citation:
        st = self.store
        if sid.startswith("obs_"):
            o = await st.get(st.observations, sid, Observation)
            if o is not None:
                return Citation(
                    id=sid,
                    kind="observation",
                    status="present",
                    title=o.title,
                    session_id=o.session_id,
                    timestamp=o.timestamp,
                    project=o.project,
                )
            gone = await st.presence(st.observations, sid) == "deleted"
            return Citation(id=sid, kind="observation", status="forgotten" if gone else "missing")
        s = await st.get(st.sessions, sid, Session)
        if s is not None:
            return Citation(
                id=sid,
                kind="session",
                status="present",
                session_id=s.id,
                timestamp=s.started_at,
                project=s.project,
            )
        gone = await st.presence(st.sessions, sid) == "deleted"
        return Citation(id=sid, kind="session", status="forgotten" if gone else "missing")

    @operation(
        "mem::verify",
        description="Verify a memory, lesson or observation by tracing its citation chain "
        "back to the observations and sessions it came from: flags sources that were "
        "forgotten or are missing.",
        http=rest("POST", "verify"),
        tool=Tool("memory_verify"),
    )
    async def verify(self, req: VerifyIn) -> VerifyOut:
        st = self.store
        record: Any = await st.get(st.memories, req.id, Memory)
        kind = "memory"
        sources: list[str] = []
        if record is not None:
            sources = list(record.source_ids)
        else:
            record = await (await st.client.state(LESSONS_BUCKET)).get(kv_key(req.id), Lesson)
            kind = "lesson"
            if record is not None:
                sources = list(record.source_ids)
            else:
                record = await st.get(st.observations, req.id, Observation)
                kind = "observation"
                if record is None:
                    raise FunctionError(
                        "NOT_FOUND", f"no memory, lesson or observation {req.id}", field="id"
                    )
                sources = [record.session_id]
        cites = [await self._cite(s) for s in dict.fromkeys(sources) if s]
        broken = [c.id for c in cites if c.status != "present"]
        verdict: Literal["verified", "broken", "unsourced"] = (
            "unsourced" if not cites else "broken" if broken else "verified"
        )
        return VerifyOut(
            success=True,
            id=req.id,
            type=kind,
            verdict=verdict,
            verified=verdict == "verified",
            citations=cites,
            citation_count=len(cites),
            broken=broken,
            record=msgspec.to_builtins(as_view(record, view(type(record)))),  # type: ignore[arg-type]
        )

    # ---- commits ---------------------------------------------------------------------
    @operation(
        "mem::session-commit",
        description="Link a git commit to the session that produced it (the post-commit hook)",
        http=rest("POST", "session/commit"),
    )
    async def session_commit(self, req: CommitIn) -> CommitOut:
        sha = req.sha.lower()
        sid = scrub(req.session_id)
        state = await self.store.client.state(COMMITS_BUCKET)

        def merge(cur: CommitLink | None) -> CommitLink:
            c = cur or CommitLink(sha=sha, short_sha=sha[:7], linked_at=now_iso())
            c.branch = scrub(req.branch) or c.branch
            c.repo = scrub(req.repo) or c.repo
            c.message = scrub(req.message) or c.message
            c.author = scrub(req.author) or c.author
            c.authored_at = req.authored_at or c.authored_at
            c.files = [scrub(f) for f in req.files[:500]] or c.files
            if sid and sid not in c.session_ids:
                c.session_ids.append(sid)
            return c

        link = await state.update(sha, merge, type=CommitLink)
        assert link is not None
        if sid:

            def add(cur: Session | None) -> Session | None:
                if cur is None or sha in cur.commit_shas:
                    return None
                cur.commit_shas.append(sha)
                return cur

            await self.store.sessions.update(kv_key(sid), add, type=Session)
        return CommitOut(commit=as_view(link, CommitView))

    async def _lookup(self, sha: str) -> tuple[CommitLink | None, list[Session]]:
        state = await self.store.client.state(COMMITS_BUCKET)
        sha = sha.lower()
        link: CommitLink | None = await state.get(sha, CommitLink)
        if link is None and len(sha) >= 7:  # a short sha: the one commit it names
            found = [k for k in await state.keys() if k.startswith(sha)]
            if len(found) == 1:
                link = await state.get(found[0], CommitLink)
        if link is None:
            return None, []
        got = [await self.store.get(self.store.sessions, s, Session) for s in link.session_ids]
        return link, [s for s in got if s is not None]

    @operation(
        "mem::session-by-commit",
        description="The sessions that produced a git commit (?sha=, full or short)",
        http=rest("GET", "session/by-commit"),
    )
    async def session_by_commit(self, req: ByCommitIn) -> ByCommitOut:
        link, sessions = await self._lookup(req.sha)
        if link is None:
            raise FunctionError("NOT_FOUND", f"no sessions linked to commit {req.sha}", field="sha")
        return ByCommitOut(
            commit=as_view(link, CommitView), sessions=as_view(sessions, list[SessionView])
        )

    @operation(
        "mem::commit-lookup",
        description="Look up the agent session(s) that produced a specific git commit, given "
        "its SHA. Returns the commit metadata and linked sessions (commit null if unknown).",
        tool=Tool("memory_commit_lookup", tier="basic"),
    )
    async def commit_lookup(self, req: ByCommitIn) -> ByCommitOut:
        link, sessions = await self._lookup(req.sha)
        return ByCommitOut(
            commit=as_view(link, CommitView) if link else None,
            sessions=as_view(sessions, list[SessionView]),
        )
