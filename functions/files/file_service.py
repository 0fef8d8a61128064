"""Operations on files of the machine the service runs on: an Obsidian vault of memories,
lessons and sessions; compressing a markdown file in place (a backup kept). Paths that look
like secrets and symlinks are refused (403); a path outside the allowed roots
(functions/kernel/confine.py) is refused as upstream refuses it: 200 `{success: false,
error}`, the error naming the path. (Transcript imports: functions/replay.)"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

import msgspec

from engine import FunctionError, Tool, operation
from functions.files.markdown import compress_markdown, problems
from functions.files.settings import file_settings
from functions.kernel.clock import now_iso
from functions.kernel.confine import OutsideRoots, confine
from functions.kernel.models import clients
from functions.kernel.names import choices_pattern, chosen
from functions.kernel.owned import routes
from functions.kernel.records import LESSONS_BUCKET, Lesson, Memory, Session
from functions.kernel.scrub import scrub
from functions.kernel.store import MemoryStore
from functions.memory.memory_service import MemoryService

SENSITIVE = ("secret", "credential", "private_key", ".env", "id_rsa", "token", ".ssh")
MAX_MD_BYTES = 2 * 1024 * 1024
VaultType = Literal["memories", "lessons", "sessions", "crystals"]
VAULT_TYPES: tuple[VaultType, ...] = get_args(VaultType)
VaultTypes = list[VaultType] | Annotated[str, msgspec.Meta(pattern=choices_pattern(VAULT_TYPES))]
_UNSAFE = re.compile(r'[<>:"/\\|?*\x00-\x1f]')


def export_root() -> Path:
    return file_settings().export_root or Path.home() / ".agentmemory"


def checked_path(raw: str, field: str) -> Path:
    """The path, resolved; refused (403) if it looks like a secret or is a symlink, absent
    (404) if the OS cannot look it up."""
    path = Path(raw).expanduser()
    low = str(path).lower()
    if any(term in low for term in SENSITIVE):
        raise FunctionError("FORBIDDEN", "refusing a sensitive-looking path", field=field)
    try:
        if path.is_symlink():
            raise FunctionError("FORBIDDEN", "symlinks are not supported", field=field)
        return path.resolve()
    except (OSError, ValueError):  # too long, or a byte the file system refuses
        raise FunctionError("NOT_FOUND", f"no such path {raw[:200]!r}", field=field) from None


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:
        return False


TASK = "compress-file"
SYSTEM = (
    "You shorten a markdown document to save tokens while keeping its structure. Keep every "
    "heading line, every URL and every fenced code block exactly as they are; drop no "
    "section; shorten the prose under each. Reply with the markdown only, no fence around it."
)
_FENCED = re.compile(r"\A```(?:markdown|md)?[ \t]*\n(.*)\n```\s*\Z", re.S | re.I)


def _unfenced(text: str) -> str:
    """The reply without a ``` fence wrapped around the whole of it (code blocks inside
    stay)."""
    t = text.strip()
    m = _FENCED.match(t)
    return m.group(1).strip() if m else t


class CompressFileIn(msgspec.Struct, rename="camel", kw_only=True):
    file_path: Annotated[str, msgspec.Meta(max_length=4096, pattern=r"\.[mM][dD]$")]
    """A markdown file (.md) on the service's machine."""


class CompressFileOut(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    success: bool
    file_path: str
    backup_path: str = ""
    original_chars: int = 0
    compressed_chars: int = 0
    skipped: bool = False
    reason: str = ""
    method: str = ""
    """llm: the model's text (it kept every heading, URL and code block); synthetic: ours."""
    error: str = ""
    """Why nothing was done (`success` false): the path is outside the allowed roots."""


class VaultIn(msgspec.Struct, rename="camel", kw_only=True):
    vault_dir: str = ""
    """Under an allowed root (the data dir, ~/.agentmemory, AGENTMEMORY_IMPORT_ROOT) or
    AGENTMEMORY_EXPORT_ROOT; default <AGENTMEMORY_EXPORT_ROOT>/vault."""
    types: VaultTypes = msgspec.field(default_factory=list)
    """memories, lessons, crystals, sessions; default all."""
    project: str = ""

    def __post_init__(self) -> None:
        self.types = chosen(self.types, VAULT_TYPES)


class VaultCounts(msgspec.Struct, kw_only=True):
    memories: int = 0
    lessons: int = 0
    crystals: int = 0
    sessions: int = 0


class VaultOut(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    success: bool
    vault_dir: str
    exported: VaultCounts
    error: str | None = None
    """Why nothing was written (`success` false): the folder is outside the allowed roots."""


rest = routes("files")


def _front(meta: dict[str, Any]) -> str:
    lines = ["---"]
    for k, v in meta.items():
        if v in (None, "", []):
            continue
        if isinstance(v, list):
            v = "[" + ", ".join(msgspec.json.encode(str(x)).decode() for x in v) + "]"
        elif isinstance(v, str):
            v = msgspec.json.encode(v).decode()
        lines.append(f"{k}: {v}")
    return "\n".join([*lines, "---", ""])


def _name(text: str, fallback: str) -> str:
    return (_UNSAFE.sub("_", text).strip() or fallback)[:80]


def _crystal_md(c: dict[str, Any], narrative: str) -> str:
    def items(key: str) -> list[str]:
        v = c.get(key)
        return [str(x) for x in v] if isinstance(v, list) else []

    files = items("filesAffected")
    parts = [
        _front(
            {
                "id": c.get("id"),
                "type": "crystal",
                "created": c.get("createdAt"),
                "project": c.get("project"),
                "sessionId": c.get("sessionId"),
                "filesAffected": files,
            }
        )
        + f"# Crystal: {narrative[:80] or c.get('id')}\n\n{narrative}\n",
        "## Key Outcomes\n" + "".join(f"- {o}\n" for o in items("keyOutcomes")),
    ]
    if items("lessons"):
        parts.append("## Lessons\n" + "".join(f"- {x}\n" for x in items("lessons")))
    if files:
        parts.append("## Files\n" + "".join(f"- `{f}`\n" for f in files))
    if items("sourceActionIds"):
        parts.append(
            "## Source Actions\n" + "".join(f"- [[{a}]]\n" for a in items("sourceActionIds"))
        )
    return "\n".join(parts)


class FileService:
    def __init__(self, owner: MemoryService) -> None:
        self.owner = owner

    @property
    def store(self) -> MemoryStore:
        return self.owner.store

    @operation(
        "mem::compress-file",
        description="Compress a markdown file to reduce token usage while preserving "
        "headings, URLs, and code blocks. Creates a .original.md backup before writing.",
        http=rest("POST", "compress-file"),
        tool=Tool("memory_compress_file", tier="basic"),
    )
    async def compress_file(self, req: CompressFileIn) -> CompressFileOut:
        try:
            path = confine(str(checked_path(req.file_path, "filePath")))
        except OutsideRoots as refused:
            return CompressFileOut(success=False, file_path=req.file_path, error=str(refused))
        if not _is_file(path):
            raise FunctionError("NOT_FOUND", f"no file {path}", field="filePath")
        if path.stat().st_size > MAX_MD_BYTES:
            raise FunctionError(
                "TOO_LARGE", f"{path} is over {MAX_MD_BYTES} bytes", field="filePath"
            )
        original = await asyncio.to_thread(path.read_text, encoding="utf-8")
        if not original.strip():
            return CompressFileOut(
                success=True, file_path=str(path), skipped=True, reason="file is empty"
            )
        compressed, method = compress_markdown(original), "synthetic"
        # A model sees scrubbed text only, so a file holding a secret would come back with a
        # redaction marker in its place: such a file keeps the keyless compression.
        model = clients.client(self.store.client)
        text = await model.complete(TASK, SYSTEM, original) if scrub(original) == original else None
        if text is not None:
            worded = _unfenced(text)
            # the model's text must keep what the keyless one keeps (headings, URLs, code
            # blocks) and be shorter
            if worded and not problems(original, worded) and len(worded) < len(compressed):
                compressed, method = worded, "llm"
        lost = problems(original, compressed)
        if lost:
            raise FunctionError(
                "UNPROCESSABLE", "compression would lose " + "; ".join(lost), field="filePath"
            )
        if len(compressed) >= len(original):
            return CompressFileOut(
                success=True,
                file_path=str(path),
                skipped=True,
                reason="already compact",
                original_chars=len(original),
                compressed_chars=len(original),
            )
        stem = path.stem
        backup = path.with_name(
            f"{stem}.backup.md" if stem.endswith(".original") else f"{stem}.original.md"
        )
        await asyncio.to_thread(backup.write_text, original, encoding="utf-8")
        await asyncio.to_thread(path.write_text, compressed, encoding="utf-8")
        await self.store.audit("compress", [], reason=f"{path} -> backup {backup} ({method})")
        return CompressFileOut(
            success=True,
            file_path=str(path),
            backup_path=str(backup),
            original_chars=len(original),
            compressed_chars=len(compressed),
            method=method,
        )

    async def _crystals(self, project: str) -> list[dict[str, Any]]:
        """The coordination layer's crystals, read through its function (no worker: none)."""
        try:
            reply = await self.store.client.call(
                "mem::crystal-list", {"project": project, "limit": 1000}, timeout=30
            )
        except FunctionError as err:
            if err.code in ("UNAVAILABLE", "DEADLINE_EXCEEDED"):
                return []
            raise
        got = reply.get("crystals") if isinstance(reply, dict) else None
        return [c for c in got or [] if isinstance(c, dict)]

    @operation(
        "mem::obsidian-export",
        description="Export memories, lessons, and sessions as Obsidian-compatible Markdown "
        "files with YAML frontmatter and wikilinks for graph view.",
        timeout=300,
        http=rest("POST", "obsidian/export"),
        tool=Tool("memory_obsidian_export"),
    )
    async def obsidian_export(self, req: VaultIn) -> VaultOut:
        root = export_root()
        vault = checked_path(req.vault_dir, "vaultDir") if req.vault_dir else root / "vault"
        try:
            vault = confine(str(vault), extra=[root])
        except OutsideRoots as refused:
            return VaultOut(
                success=False, vault_dir=req.vault_dir, exported=VaultCounts(), error=str(refused)
            )
        kinds = set(req.types or VAULT_TYPES)
        bad = kinds - set(VAULT_TYPES)
        if bad:  # not reachable through the schema; kept for bus callers that skip it
            raise FunctionError(
                "BAD_REQUEST",
                f"unknown types {sorted(bad)}; known: {', '.join(VAULT_TYPES)}",
                field="types",
            )
        st = self.store
        counts = VaultCounts()
        moc: dict[str, list[str]] = {k: [] for k in VAULT_TYPES}
        files: dict[Path, str] = {}
        if "memories" in kinds:
            for m in await st.load_all(st.memories, Memory):
                if m.superseded_by or (req.project and m.project != req.project):
                    continue
                name = _name(f"{m.title or m.id}-{m.id[-6:]}", m.id)
                links = " ".join(f"[[{c}]]" for c in m.concepts)
                files[vault / "memories" / f"{name}.md"] = (
                    _front(
                        {
                            "id": m.id,
                            "type": m.type,
                            "project": m.project,
                            "tags": m.concepts,
                            "files": m.files,
                            "created": m.created_at,
                            "strength": round(m.strength, 3),
                        }
                    )
                    + f"# {m.title or m.id}\n\n{m.content}\n\n{links}\n"
                )
                moc["memories"].append(f"- [[memories/{name}]]")
                counts.memories += 1
        if "lessons" in kinds:
            async for _, les in (await st.client.bucket(LESSONS_BUCKET)).scan(">", Lesson):
                if les.deleted or (req.project and les.project != req.project):
                    continue
                name = _name(f"{les.content[:50]}-{les.id[-6:]}", les.id)
                files[vault / "lessons" / f"{name}.md"] = (
                    _front(
                        {
                            "id": les.id,
                            "type": "lesson",
                            "project": les.project,
                            "tags": les.tags or les.concepts,
                            "strength": round(les.strength, 3),
                        }
                    )
                    + f"# Lesson\n\n{les.content}\n\n{les.context}\n"
                )
                moc["lessons"].append(f"- [[lessons/{name}]]")
                counts.lessons += 1
        if "crystals" in kinds:
            for c in await self._crystals(req.project):
                cid = str(c.get("id") or "")
                if not cid:
                    continue
                name = _name(cid, "crystal")
                narrative = str(c.get("narrative") or "")
                files[vault / "crystals" / f"{name}.md"] = _crystal_md(c, narrative)
                moc["crystals"].append(f"- [[crystals/{name}|{narrative[:60] or cid}]]")
                counts.crystals += 1
        if "sessions" in kinds:
            for s in await st.load_all(st.sessions, Session):
                if req.project and s.project != req.project:
                    continue
                name = _name(s.id, "session")
                files[vault / "sessions" / f"{name}.md"] = (
                    _front(
                        {
                            "id": s.id,
                            "type": "session",
                            "project": s.project,
                            "started": s.started_at,
                            "status": s.status,
                            "observations": s.observation_count,
                        }
                    )
                    + f"# Session {s.id}\n\nProject [[{s.project}]]\n"
                )
                moc["sessions"].append(f"- [[sessions/{name}]]")
                counts.sessions += 1
        at = now_iso()
        index = [_front({"type": "moc", "exported": at}), "# agentmemory vault", ""]
        for k in VAULT_TYPES:
            index += [f"## {k.capitalize()} ({len(moc[k])})", *moc[k], ""]
        files[vault / "MOC.md"] = "\n".join(index)

        def write() -> None:
            for p, text in files.items():
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_text(text, encoding="utf-8")

        await asyncio.to_thread(write)
        await st.audit("obsidian_export", [], reason=str(vault))
        return VaultOut(success=True, vault_dir=str(vault), exported=counts)
