"""The coding agents' own CLIs (npm, tests/agents_cli/), run offline with a private HOME as
readers and validators of what agentmemory writes. A test that needs one skips, naming it,
when it is not installed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / "tests" / "agents_cli" / "node_modules" / ".bin"
PACKAGES = {
    "claude": "@anthropic-ai/claude-code",
    "codex": "@openai/codex",
    "gemini": "@google/gemini-cli",
    "qwen": "@qwen-code/qwen-code",
    "opencode": "opencode-ai",
    "droid": "droid",
    "copilot": "@github/copilot",
}


def binary(name: str) -> str:
    path = BIN / name
    if not path.exists():
        pytest.skip(
            f"{name} (npm {PACKAGES[name]}) is not installed: `make install-test` installs it "
            "into tests/agents_cli"
        )
    return str(path)


def run(
    name: str,
    *args: str,
    home: Path,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """`name args…` as a user with HOME `home` would run it; PATH has this venv's
    `agentmemory` first, as an install puts it on PATH."""
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AGENTMEMORY_", "ENGINE_", "XDG_", "CLAUDE", "CODEX", "GEMINI"))
    }
    base.update(
        HOME=str(home),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        DISABLE_TELEMETRY="1",
        DISABLE_AUTOUPDATER="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        NO_COLOR="1",
        FORCE_COLOR="0",
        # a shell sets PWD to where it runs a command; some CLIs (OpenCode) take it as theirs
        PWD=str(cwd or home),
    )
    base.update(env or {})
    return subprocess.run(
        [binary(name), *args],
        cwd=cwd or home,
        env=base,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
