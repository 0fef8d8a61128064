"""Agent hook scripts (standard library only), one per host, run as `python3 -S <script>`."""

from __future__ import annotations

from pathlib import Path

HOOKS_DIR = Path(__file__).resolve().parent
SCRIPTS = {
    "claude-code": HOOKS_DIR / "claude_code.py",
    "codex": HOOKS_DIR / "codex.py",
    "cursor": HOOKS_DIR / "cursor.py",
    "gemini-cli": HOOKS_DIR / "gemini_cli.py",
    "copilot-cli": HOOKS_DIR / "copilot.py",
    "antigravity-cli": HOOKS_DIR / "antigravity.py",
}
