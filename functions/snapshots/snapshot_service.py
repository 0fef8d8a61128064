"""The snapshot operations: create (one git commit per snapshot, none when nothing
changed), list, diff two snapshots record by record, restore one; and the cron job that
takes them on a schedule when SNAPSHOT_ENABLED=true (every SNAPSHOT_INTERVAL seconds,
default 3600, or the cron expression SNAPSHOT_SCHEDULE)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import msgspec

from engine import FunctionError, Tool, operation
from functions.kernel.clock import now_iso
from functions.kernel.owned import OwnedService, routes
from functions.kernel.settings import data_dir
from functions.kernel.store import StoreOwner
from functions.snapshots import state
from functions.snapshots.git import GitError, ensure_repo, git, run
from functions.snapshots.settings import snapshot_settings

Hash = Annotated[str, msgspec.Meta(pattern=r"^[0-9a-fA-F]{7,40}$")]
"""A snapshot's commit hash, full or abbreviated (7 or more hex digits)."""
DIFF_IDS = 100
"""Ids listed per bucket and kind of change in a diff (the counts are whole)."""


def snapshot_dir() -> Path:
    given = snapshot_settings().dir
    if given is not None:
        return given
    data = data_dir()
    if data is not None:
        return data / "snapshots"
    return Path.home() / ".agentmemory" / "snapshots"


def schedule() -> str | None:
    """The cron schedule of automatic snapshots, or None when they are off."""
    settings = snapshot_settings()
    if not settings.enabled:
        return None
    return settings.schedule or f"@every {settings.interval}s"


class CreateIn(msgspec.Struct, rename="camel", kw_only=True):
    message: Annotated[str, msgspec.Meta(max_length=2000)] = ""
    """The commit message; default `Snapshot <time>`."""


class SnapshotView(msgspec.Struct, rename="camel", kw_only=True):
    id: str
    commit_hash: str
    created_at: str
    message: str
    stats: dict[str, int]
    """Records per kind, under upstream's names (`memories`, `sessions`, `observations`...:
    the bucket's name without `mem_`)."""


class CreateOut(msgspec.Struct, kw_only=True):
    success: bool
    unchanged: bool
    """Nothing changed since the last snapshot: no new commit, `snapshot` is that one."""
    snapshot: SnapshotView


class ListIn(msgspec.Struct, rename="camel", kw_only=True):
    limit: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 20


class ListOut(msgspec.Struct, kw_only=True):
    snapshots: list[SnapshotView]
    dir: str


class RestoreIn(msgspec.Struct, rename="camel", kw_only=True):
    commit_hash: Hash


class BucketChange(msgspec.Struct, kw_only=True):
    added: int
    removed: int
    changed: int
    added_ids: list[str] = msgspec.field(name="addedIds")
    removed_ids: list[str] = msgspec.field(name="removedIds")
    changed_ids: list[str] = msgspec.field(name="changedIds")


class RestoreOut(msgspec.Struct, rename="camel", kw_only=True):
    success: bool
    commit_hash: str
    restored: dict[str, BucketChange]
    """What the restore changed, per bucket."""


class DiffIn(msgspec.Struct, rename="camel", kw_only=True):
    to: Hash
    """The later snapshot."""
    from_: Hash | None = msgspec.field(default=None, name="from")
    """The earlier one; default the snapshot before `to`."""


class DiffOut(msgspec.Struct, rename="camel", kw_only=True):
    from_: str | None = msgspec.field(name="from")
    to: str
    buckets: dict[str, BucketChange]


rest = routes("snapshots")


def _counted(ch: state.Change) -> BucketChange:
    return BucketChange(
        added=len(ch.added),
        removed=len(ch.removed),
        changed=len(ch.changed),
        added_ids=ch.added[:DIFF_IDS],
        removed_ids=ch.removed[:DIFF_IDS],
        changed_ids=ch.changed[:DIFF_IDS],
    )


class SnapshotService(OwnedService[StoreOwner]):
    """Served beside the team service, over its store."""

    def __init__(self, owner: StoreOwner) -> None:
        super().__init__(owner)
        self._lock = asyncio.Lock()
        """One snapshot or restore at a time (they read and write the repo's files)."""

    async def _resolve(self, repo: Path, ref: str, field: str) -> str:
        if not (repo / ".git").is_dir():
            raise FunctionError("NOT_FOUND", f"no snapshot {ref}: none was taken", field=field)
        try:
            full = (await git(repo, "rev-parse", "--verify", "-q", f"{ref}^{{commit}}")).strip()
        except GitError:
            raise FunctionError("NOT_FOUND", f"no snapshot {ref}", field=field) from None
        return full

    async def _view(self, repo: Path, ref: str) -> SnapshotView:
        out = await git(repo, "show", "-s", "--format=%H%x1f%aI%x1f%s%x1f%b", ref)
        sha, at, subject, body = [*out.rstrip("\n").split("\x1f"), "", "", ""][:4]
        return SnapshotView(
            id="snap_" + sha[:12],
            commit_hash=sha,
            created_at=at,
            message=subject,
            stats=_stats(body),
        )

    @operation(
        "mem::snapshot-create",
        description="Create a git-versioned snapshot of current memory state.",
        http=rest("POST", "snapshot/create", status=201),
        tool=Tool("memory_snapshot_create"),
    )
    async def create(self, req: CreateIn) -> CreateOut:
        repo = snapshot_dir()
        async with self._lock:
            await ensure_repo(repo)
            counts = await state.dump(self.store.client, repo)
            await git(repo, "add", "-A")
            head = (await git(repo, "rev-parse", "-q", "--verify", "HEAD", check=False)).strip()
            if head and not await _has_staged(repo):
                view = await self._view(repo, "HEAD")
                return CreateOut(success=True, unchanged=True, snapshot=view)
            message = req.message.strip() or f"Snapshot {now_iso()}"
            stats = "\n".join(f"{b}: {n}" for b, n in counts.items())
            await git(repo, "commit", "-q", "--no-verify", "-m", message, "-m", stats)
            view = await self._view(repo, "HEAD")
        await self.store.audit("snapshot", [view.commit_hash], reason=message)
        return CreateOut(success=True, unchanged=False, snapshot=view)

    @operation(
        "mem::snapshot-list",
        description="The snapshots taken, newest first (?limit=)",
        http=rest("GET", "snapshots"),
    )
    async def list(self, req: ListIn) -> ListOut:
        repo = snapshot_dir()
        if not (repo / ".git").is_dir():
            return ListOut(snapshots=[], dir=str(repo))
        out = await git(repo, "log", f"-{req.limit}", "--format=%H", check=False)
        views = [await self._view(repo, sha) for sha in out.split()]
        return ListOut(snapshots=views, dir=str(repo))

    @operation(
        "mem::snapshot-diff",
        description="What changed between two snapshots, record by record (?to=&from=)",
        http=rest("GET", "snapshot/diff"),
    )
    async def diff(self, req: DiffIn) -> DiffOut:
        repo = snapshot_dir()
        to = await self._resolve(repo, req.to, "to")
        if req.from_:
            frm: str | None = await self._resolve(repo, req.from_, "from")
        else:
            parent = await git(repo, "rev-parse", "-q", "--verify", f"{to}^", check=False)
            frm = parent.strip() or None
        buckets = {}
        for bucket in state.BUCKETS:
            old = await _records_at(repo, frm, bucket) if frm else {}
            new = await _records_at(repo, to, bucket)
            buckets[bucket] = _counted(state.compare(old, new))
        return DiffOut(from_=frm, to=to, buckets=buckets)

    @operation(
        "mem::snapshot-restore",
        description="Restore memory state to a snapshot: records it held come back as they "
        "were, records it did not hold are removed (audited; stays on this machine)",
        http=rest("POST", "snapshot/restore"),
    )
    async def restore(self, req: RestoreIn) -> RestoreOut:
        repo = snapshot_dir()
        async with self._lock:
            sha = await self._resolve(repo, req.commit_hash, "commitHash")
            restored = {}
            for bucket in state.BUCKETS:
                wanted = await _records_at(repo, sha, bucket)
                restored[bucket] = _counted(await state.restore(self.store, bucket, wanted))
        await self.store.audit("snapshot-restore", [sha], reason=f"restored snapshot {sha[:12]}")
        return RestoreOut(success=True, commit_hash=sha, restored=restored)

    @operation("mem::snapshot-scheduled", description="Take a scheduled snapshot (cron)")
    async def scheduled(self) -> CreateOut:
        return await self.create(CreateIn(message=f"Scheduled snapshot {now_iso()}"))


async def _has_staged(repo: Path) -> bool:
    return bool((await git(repo, "diff", "--cached", "--name-only")).strip())


async def _records_at(repo: Path, sha: str, bucket: str) -> state.Records:
    """A bucket's records in a snapshot (none if the snapshot has no file for it)."""
    return state.decode(await run(repo, "show", f"{sha}:{state.file_of(bucket)}", check=False))


def _stats(body: str) -> dict[str, int]:
    out = {}
    for line in body.splitlines():
        name, sep, n = line.partition(": ")
        if sep and n.strip().isdigit():
            out[name.strip().removeprefix("mem_")] = int(n)
    return out
