"""Provenance: `verify` traces a memory (or lesson, or observation) back to the records it
was made from and says whether that chain still holds; commits link sessions to the git
commits they produced (the post-commit hook, or a scan of a project's `git log`) and back
(`by-commit`, with the observations of those sessions that touched the commit's files)."""

from __future__ import annotations

import asyncio
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import msgspec

from engine import FunctionError, Tool, operation
from engine.settings import environ
from functions.kernel.clock import now_iso
from functions.kernel.ids import kv_key
from functions.kernel.owned import OwnedService, routes
from functions.kernel.records import (
    COMMITS_BUCKET,
    LESSONS_BUCKET,
    CommitLink,
    Lesson,
    Memory,
    Observation,
    Session,
)
from functions.kernel.store import StoreOwner
from functions.kernel.trust import write_path as trust
from functions.kernel.views import ObservationView, SessionView, as_view, view, wire_of

Id = Annotated[str, msgspec.Meta(min_length=1, max_length=512)]
Sha = Annotated[str, msgspec.Meta(pattern=r"^[0-9a-fA-F]{4,64}$")]
# To the type checker a view is its record (the same attributes).
if TYPE_CHECKING:
    CommitView = CommitLink
else:
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
    commit: CommitView


class ByCommitOut(msgspec.Struct, kw_only=True):
    commit: CommitView | None
    sessions: list[SessionView]
    observations: list[ObservationView] = msgspec.field(default_factory=list)
    """What those sessions did to the commit's files (observations naming one of them)."""


class CommitsIn(msgspec.Struct, rename="camel", kw_only=True):
    branch: str = ""
    repo: str = ""
    """The remote URL, as the post-commit hook records it."""
    limit: Annotated[int, msgspec.Meta(ge=1, le=500)] = 100


class CommitsOut(msgspec.Struct, kw_only=True):
    commits: list[CommitView]


class ScanIn(msgspec.Struct, rename="camel", kw_only=True):
    path: Annotated[str, msgspec.Meta(min_length=1, max_length=4096)]
    """A directory of the project's git work tree (on the machine the service runs on)."""
    limit: Annotated[int, msgspec.Meta(ge=1, le=5000)] = 500
    """Commits read from the log, newest first."""
    grace_minutes: Annotated[int, msgspec.Meta(ge=0, le=1440)] = 30
    """A commit this long after a session's last activity is still that session's."""


class ScanOut(msgspec.Struct, rename="camel", kw_only=True):
    success: bool
    repo: str
    scanned: int
    linked: int
    """Commits linked to at least one session."""
    commits: list[CommitView]


rest = routes("provenance")


class ProvenanceService(OwnedService[StoreOwner]):
    """Served beside the worker's main service, over its store."""

    async def _cite(self, sid: str) -> Citation:
        st = self.store
        if sid.startswith("obs_"):
            o = await st.get_observation(sid)
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
            gone = await st.observation_presence(sid) == "deleted"
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
            record = await (await st.client.bucket(LESSONS_BUCKET)).get(kv_key(req.id), Lesson)
            kind = "lesson"
            if record is not None:
                sources = list(record.source_ids)
            else:
                record = await st.get_observation(req.id)
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
            record=wire_of(record),
        )

    # ---- commits ---------------------------------------------------------------------
    @operation(
        "mem::session-commit",
        description="Link a git commit to the session that produced it (the post-commit hook)",
        http=rest("POST", "session/commit"),
    )
    async def session_commit(self, req: CommitIn) -> CommitOut:
        sha = req.sha.lower()
        # A commit's words are anyone's who can push to the repository: judged as a
        # command's output, before they are sanitized and scrubbed.
        words = {"message": req.message, "branch": req.branch, "author": req.author}
        verdict = trust.classify_value(words, trust.COMMAND)
        verdict = await trust.second_opinion(
            self.store.client, verdict, trust.stored_value(words), trust.COMMAND
        )
        judged = trust.trust_of(verdict, trust.COMMAND)
        scrub = trust.stored_text  # invisible characters out, then secrets
        sid = scrub(req.session_id)
        state = await self.store.client.bucket(COMMITS_BUCKET)

        new = [False]

        def merge(cur: CommitLink | None) -> CommitLink:
            new[0] = cur is None
            c = cur or CommitLink(sha=sha, short_sha=sha[:7], linked_at=now_iso())
            c.branch = scrub(req.branch) or c.branch
            c.repo = scrub(req.repo) or c.repo
            c.message = scrub(req.message) or c.message
            c.author = scrub(req.author) or c.author
            c.authored_at = req.authored_at or c.authored_at
            c.files = [scrub(f) for f in req.files[:500]] or c.files
            c.trust = trust.either(judged, c.trust)  # a message once held stays held
            if sid and sid not in c.session_ids:
                c.session_ids.append(sid)
            return c

        link = await state.update(sha, merge, type=CommitLink)
        assert link is not None
        if new[0]:
            trust.count(self.store.client, judged)
        if sid:

            def add(cur: Session | None) -> Session | None:
                if cur is None or sha in cur.commit_shas:
                    return None
                cur.commit_shas.append(sha)
                return cur

            await self.store.sessions.update(kv_key(sid), add, type=Session)
        return CommitOut(commit=as_view(link, CommitView))

    async def _behind(self, link: CommitLink, sessions: list[Session]) -> list[Observation]:
        if not sessions or not link.files:
            return []
        ids = {s.id for s in sessions}
        out = [
            o
            async for o in self.store.scan_observations()
            if o.session_id in ids and _touches(o.files, link.files)
        ]
        return sorted(out, key=lambda o: o.timestamp)[:200]

    @operation(
        "mem::commits",
        description="List recent commits linked to agent sessions, optionally filtered by "
        "branch or repo.",
        http=rest("GET", "commits"),
        tool=Tool("memory_commits", tier="basic"),
    )
    async def commits(self, req: CommitsIn) -> CommitsOut:
        state = await self.store.client.bucket(COMMITS_BUCKET)
        found = [
            c
            async for _, c in state.scan(">", CommitLink)
            if (not req.branch or c.branch == req.branch) and (not req.repo or c.repo == req.repo)
        ]
        found.sort(key=lambda c: (c.linked_at, c.sha), reverse=True)
        return CommitsOut(commits=as_view(found[: req.limit], list[CommitView]))

    @operation(
        "mem::commits-scan",
        description="Link a project's git history to the sessions behind it: each commit of "
        "the work tree's `git log` goes to the sessions that ran in that repository around "
        "its time",
        http=rest("POST", "commits/scan"),
    )
    async def commits_scan(self, req: ScanIn) -> ScanOut:
        top, log = await _git_log(req.path, req.limit)
        st = self.store
        grace = timedelta(minutes=req.grace_minutes)
        candidates = [
            # git's times are whole seconds: a commit in the session's first second is its
            (
                s,
                _when(s.started_at).replace(microsecond=0),
                _when(s.ended_at or s.last_seen or s.started_at) + grace,
            )
            async for _, s in st.sessions.scan(">", Session)
            if _in_repo(s.cwd, s.project, top)
        ]
        linked: list[Any] = []  # views of the links made
        for c in log:
            at = _when(c.authored_at)
            sids = [s.id for s, start, end in candidates if start <= at <= end]
            if not sids:
                continue
            got: CommitOut | None = None
            for sid in sids:
                got = await self.session_commit(
                    CommitIn(
                        sha=c.sha,
                        session_id=sid,
                        branch=c.branch,
                        repo=c.repo,
                        message=c.message,
                        author=c.author,
                        authored_at=c.authored_at,
                        files=c.files,
                    )
                )
            if got is not None:
                linked.append(got.commit)
        shas = [c.sha for c in linked][:100]
        await st.audit("commits-scan", shas, reason=f"git log of {top}")
        return ScanOut(
            success=True, repo=str(top), scanned=len(log), linked=len(linked), commits=linked
        )

    async def _lookup(self, sha: str) -> tuple[CommitLink | None, list[Session]]:
        state = await self.store.client.bucket(COMMITS_BUCKET)
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
            commit=as_view(link, CommitView),
            sessions=as_view(sessions, list[SessionView]),
            observations=as_view(await self._behind(link, sessions), list[ObservationView]),
        )

    @operation(
        "mem::commit-lookup",
        description="Look up the agent session(s) that produced a specific git commit, given "
        "its SHA. Returns the commit metadata and linked sessions (commit null if unknown).",
        tool=Tool("memory_commit_lookup", tier="basic"),
    )
    async def commit_lookup(self, req: ByCommitIn) -> ByCommitOut:
        link, sessions = await self._lookup(req.sha)
        behind = await self._behind(link, sessions) if link else []
        return ByCommitOut(
            commit=as_view(link, CommitView) if link else None,
            sessions=as_view(sessions, list[SessionView]),
            observations=as_view(behind, list[ObservationView]),
        )


def _touches(obs_files: list[str], commit_files: list[str]) -> bool:
    """Whether an observation named a file of the commit (commits name files relative to
    the repository; observations often name them absolute)."""
    for f in obs_files:
        for c in commit_files:
            if f == c or f.endswith("/" + c):
                return True
    return False


def _when(iso: str) -> datetime:
    try:
        t = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return datetime.min.replace(tzinfo=UTC)
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def _in_repo(cwd: str, project: str, top: Path) -> bool:
    if cwd:
        c = os.path.normpath(cwd)
        return c == str(top) or c.startswith(str(top) + os.sep)
    return bool(project) and project == top.name


class _LoggedCommit(msgspec.Struct, kw_only=True):
    sha: str
    authored_at: str
    author: str
    message: str
    branch: str
    repo: str
    files: list[str]


async def _run_git(cwd: Path | str, *args: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        "git",
        *args,
        cwd=cwd,
        env=environ(GIT_CONFIG_NOSYSTEM="1", LC_ALL="C", GIT_TERMINAL_PROMPT="0"),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode or 0, out.decode(errors="replace")


def _directory(path: str) -> Path | None:
    try:
        p = Path(path).expanduser()
        return p if p.is_dir() else None
    except (OSError, RuntimeError, ValueError):  # too long, ~nosuchuser, a NUL byte
        return None


async def _git_log(path: str, limit: int) -> tuple[Path, list[_LoggedCommit]]:
    where = await asyncio.to_thread(_directory, path)
    if where is None:
        raise FunctionError("NOT_FOUND", f"no directory {path}", field="path")
    try:
        code, top = await _run_git(where, "rev-parse", "--show-toplevel")
    except FileNotFoundError:
        raise FunctionError("UNAVAILABLE", "scanning needs the git binary", field="path") from None
    if code != 0:
        raise FunctionError("NOT_FOUND", f"{path} is not in a git work tree", field="path")
    root = Path(top.strip())
    _, branch = await _run_git(root, "rev-parse", "--abbrev-ref", "HEAD")
    _, remote = await _run_git(root, "config", "--get", "remote.origin.url")
    fmt = "%x1e%H%x1f%aI%x1f%an <%ae>%x1f%B%x1f"
    code, out = await _run_git(root, "log", f"-{limit}", f"--format={fmt}", "--name-only")
    commits = []
    for chunk in out.split("\x1e")[1:] if code == 0 else []:
        sha, at, author, message, names_ = [*chunk.split("\x1f"), "", "", "", "", ""][:5]
        commits.append(
            _LoggedCommit(
                sha=sha.strip(),
                authored_at=at.strip(),
                # judged, sanitized and scrubbed where every link is made (session_commit)
                author=author.strip(),
                message=message.strip()[:20_000],
                branch=branch.strip(),
                repo=remote.strip(),
                files=[f for f in names_.split("\n") if f.strip()][:500],
            )
        )
    return root, commits
