"""The memory tool's virtual paths: every one under `/memories`, normalised, so `..` and
doubled slashes cannot name anything outside it (the tool's documented contract)."""

from __future__ import annotations

import posixpath

from anthropic.lib.tools import ToolError

ROOT = "/memories"


def memory_path(raw: object) -> str:
    """`raw` as a normalised path under /memories; ToolError (shown to the model) otherwise."""
    if not isinstance(raw, str) or not raw.strip():
        raise ToolError("A path is required, under /memories")
    if "\x00" in raw:
        raise ToolError(f"Path {raw!r} holds a NUL character")
    if raw != ROOT and not raw.startswith(ROOT + "/"):
        raise ToolError(f"Path must start with {ROOT}, got: {raw}")
    path = posixpath.normpath(raw)
    if path != ROOT and not path.startswith(ROOT + "/"):
        raise ToolError(f"Path {raw} would escape the {ROOT} directory")
    return path


def under(path: str, folder: str) -> bool:
    """`path` is `folder` or inside it."""
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def human_size(n: int) -> str:
    size = float(n)
    for unit in ("B", "K", "M"):
        if size < 1024:
            return f"{int(size)}{unit}" if unit == "B" else f"{size:.1f}{unit}"
        size /= 1024
    return f"{size:.1f}G"
