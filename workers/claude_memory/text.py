"""What the memory tool's commands do to a file's text: numbered views, a unique
replacement, an insertion at a line. Pure functions; a refusal is a ToolError whose words
the model reads."""

from __future__ import annotations

from anthropic.lib.tools import ToolError

SNIPPET = 2
"""Lines shown around an edit."""


def numbered(lines: list[str], first: int = 1) -> str:
    return "\n".join(f"{i:>6}\t{line}" for i, line in enumerate(lines, start=first))


def view(path: str, text: str, view_range: list[int] | None) -> str:
    lines = text.split("\n")
    first = 1
    if view_range:
        if len(view_range) != 2:
            raise ToolError("view_range is [start, end] (1-based; end -1: to the last line)")
        start, end = view_range
        end = len(lines) if end == -1 else end
        if start < 1 or start > len(lines) or end < start:
            raise ToolError(f"Invalid view_range {view_range}: the file has {len(lines)} lines")
        lines, first = lines[start - 1 : end], start
    return f"Here's the content of {path} with line numbers:\n" + numbered(lines, first)


def replace_once(path: str, text: str, old: str, new: str) -> tuple[str, str]:
    """The text with `old` replaced by `new` (it must occur once), and the snippet around
    the change."""
    if not old:
        raise ToolError("old_str must not be empty")
    count = text.count(old)
    if count == 0:
        raise ToolError(
            f"No replacement was performed, old_str `{old}` did not appear verbatim in {path}."
        )
    if count > 1:
        at, lines = 0, []
        while (at := text.find(old, at)) != -1:
            lines.append(text.count("\n", 0, at) + 1)
            at += len(old)
        raise ToolError(
            f"No replacement was performed. Multiple occurrences of old_str `{old}` in lines: "
            f"{', '.join(map(str, lines))}. Please ensure it is unique"
        )
    at = text.index(old)
    out = text[:at] + new + text[at + len(old) :]
    line = text.count("\n", 0, at)
    shown = out.split("\n")
    lo = max(0, line - SNIPPET)
    hi = min(len(shown), line + new.count("\n") + SNIPPET + 1)
    snippet = numbered(shown[lo:hi], lo + 1)
    return out, (
        "The memory file has been edited. Here is the snippet showing the change "
        f"(with line numbers):\n{snippet}"
    )


def insert_at(text: str, line: int, insert: str) -> str:
    lines = text.split("\n") if text else []
    if text.endswith("\n"):
        lines = lines[:-1]
    if line < 0 or line > len(lines):
        raise ToolError(
            f"Invalid `insert_line` parameter: {line}. It should be within the range "
            f"[0, {len(lines)}]."
        )
    added = insert.rstrip("\n").split("\n")
    return "\n".join([*lines[:line], *added, *lines[line:]]) + "\n"
