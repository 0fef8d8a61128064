"""A change to one agent config file, and reading and writing the formats agents use.

Every change is computed first (before/after text) and written only when asked: `--dry-run`
prints the diff, a write keeps the original once as `<file>.agentmemory.bak` and replaces
the file atomically. JSON is parsed strictly: a file with comments (Zed's JSONC) is refused
rather than rewritten without them. TOML (tomlkit) and YAML (ruamel.yaml) round-trip, so
comments and order survive.
"""

from __future__ import annotations

import difflib
import io
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomlkit
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError


@dataclass
class Change:
    path: Path
    before: str
    after: str
    private: bool = False
    """The file holds a credential (the bearer secret of a URL entry): it is written
    readable and writable by its owner only, whatever mode it had."""
    remove: bool = False
    """The file goes (it held only what we wrote)."""

    @property
    def changed(self) -> bool:
        return self.before != self.after or (self.remove and self.path.exists())

    def diff(self) -> str:
        lines = difflib.unified_diff(
            self.before.splitlines(keepends=True),
            self.after.splitlines(keepends=True),
            fromfile=f"{self.path} (before)",
            tofile=f"{self.path} (after)",
        )
        # A file without a final newline would glue its last line to the next one.
        return "".join(
            ln if ln.endswith("\n") else ln + "\n\\ No newline at end of file\n" for ln in lines
        )

    def write(self) -> None:
        if not self.changed:
            return
        if self.remove:
            self.path.unlink(missing_ok=True)
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        backup = self.path.with_name(self.path.name + ".agentmemory.bak")
        if self.path.exists() and not backup.exists():
            shutil.copy2(self.path, backup)
        tmp = self.path.with_name(self.path.name + ".agentmemory.tmp")
        # Created private before a byte is written: the secret is never readable by others
        # (a leftover of a write that crashed would keep its mode: it goes first).
        tmp.unlink(missing_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if self.private else 0o666)
        with os.fdopen(fd, "w") as f:
            f.write(self.after)
        if self.path.exists():
            mode = self.path.stat().st_mode & 0o777
            os.chmod(tmp, mode & 0o700 if self.private else mode)
        os.replace(tmp, self.path)


def read(path: Path) -> str:
    return path.read_text() if path.exists() else ""


# ---- JSON --------------------------------------------------------------------------
def load_json(path: Path, text: str) -> dict[str, Any]:
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(
            f"{path} is not plain JSON ({exc}); if it holds comments, add agentmemory by "
            "hand (`agentmemory connect mcp` prints the entry) or move the file aside"
        ) from None
    if not isinstance(data, dict):
        raise ValueError(f"{path} does not hold a JSON object")
    return data


def dump_json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def table(doc: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    """`doc[key]` as an object, created when absent."""
    value = doc.setdefault(key, {})
    if not isinstance(value, dict):
        raise ValueError(f"{path}: `{key}` is not an object")
    return value


# ---- TOML --------------------------------------------------------------------------
def load_toml(path: Path, text: str) -> tomlkit.TOMLDocument:
    try:
        return tomlkit.parse(text) if text.strip() else tomlkit.document()
    except Exception as exc:  # tomlkit raises its own parse errors, all of them here
        raise ValueError(f"{path} is not valid TOML ({exc}); fix it or move it aside") from None


# ---- YAML --------------------------------------------------------------------------
def _yaml() -> YAML:
    y = YAML()  # round-trip: comments, order and quoting kept
    y.preserve_quotes = True
    y.indent(mapping=2, sequence=4, offset=2)
    return y


def load_yaml(path: Path, text: str) -> Any:
    try:
        return _yaml().load(text) if text.strip() else None
    except YAMLError as exc:
        raise ValueError(f"{path} is not valid YAML ({exc}); fix it or move it aside") from None


def dump_yaml(data: Any) -> str:
    buf = io.StringIO()
    _yaml().dump(data, buf)
    return buf.getvalue()


# ---- Markdown rules files ------------------------------------------------------------
BLOCK_START = "<!-- agentmemory:start -->"
BLOCK_END = "<!-- agentmemory:end -->"


def upsert_block(text: str, body: str) -> str:
    """`text` with our marked block set to `body` (added at the end when absent)."""
    block = f"{BLOCK_START}\n{body.strip()}\n{BLOCK_END}"
    start, end = text.find(BLOCK_START), text.find(BLOCK_END)
    if 0 <= start < end:
        return text[:start] + block + text[end + len(BLOCK_END) :]
    if start >= 0 or end >= 0:
        return text  # a lone marker: not ours to guess around
    if not text.strip():
        return block + "\n"
    return text.rstrip("\n") + "\n\n" + block + "\n"


def drop_block(text: str) -> str:
    start, end = text.find(BLOCK_START), text.find(BLOCK_END)
    if not 0 <= start < end:
        return text
    before, after = text[:start].rstrip("\n"), text[end + len(BLOCK_END) :].lstrip("\n")
    joined = "\n\n".join(part for part in (before, after.rstrip("\n")) if part)
    return joined + "\n" if joined else ""
