"""Small readers the host scripts share while turning a host's payload into Claude Code's
shape. Standard library only, no imports of their own at start-up."""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~4 ms of start-up)
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING or __package__:
    from workers.hooks import _wire
else:
    import _wire


def json_arg(value: Any) -> Any:
    """A tool's arguments: some hosts send them as JSON text (Copilot's `toolArgs`, Cursor's
    MCP `tool_input`); an object reads better, and its file paths are found."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return _wire.loads(value)
        except ValueError:
            return value
    return {} if value is None else value


def first_text(*values: Any) -> str:
    for v in values:
        if isinstance(v, str) and v:
            return v
    return ""


def pick(p: dict[str, Any], *keys: str) -> Any:
    """The first of `keys` the payload holds (hosts spell one field several ways)."""
    for k in keys:
        if k in p and p[k] is not None:
            return p[k]
    return None
