"""Claude Code's MEMORY.md bridge (upstream's names)."""

from __future__ import annotations

from dataclasses import dataclass

from engine.settings import flag, integer, load, text


@dataclass(frozen=True)
class BridgeSettings:
    """Claude Code's MEMORY.md kept in step with memories."""

    enabled: bool = flag("CLAUDE_MEMORY_BRIDGE", False, "Keep Claude Code's MEMORY.md in step.")
    line_budget: int = integer(
        "CLAUDE_MEMORY_LINE_BUDGET",
        200,
        "Lines of MEMORY.md the bridge writes.",
        lo=10,
        clamp=True,
    )
    project_path: str = text(
        "CLAUDE_PROJECT_PATH", "", "The project whose MEMORY.md is meant when a call names none."
    )


def bridge_settings() -> BridgeSettings:
    return load(BridgeSettings)
